package v1alpha1

import velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

// DefaultLocationName is the location name a backup on Velero's default
// location is counted under (no spec.backupSpec.storageLocation).
const DefaultLocationName = "default"

// LocationName is the name a tenant's usage is counted under for a
// backupSpec.storageLocation: the NonAdminBackupStorageLocation's name, or
// DefaultLocationName for Velero's default location.
func LocationName(storageLocation string) string {
	if storageLocation == "" {
		return DefaultLocationName
	}
	return storageLocation
}

// HoldsBackup reports whether n holds, or will hold, a backup in object
// storage — what a namespace's usage and quotas count: not being deleted
// (kubectl delete, spec.deleteBackup, spec.forceDeleteBackup), its plan
// not failed before a Velero Backup existed, its Velero Backup not Failed.
func (n *NonAdminBackup) HoldsBackup() bool {
	if !n.DeletionTimestamp.IsZero() || n.Spec.DeleteBackup || n.Spec.ForceDeleteBackup {
		return false
	}
	vb := n.Status.VeleroBackup
	if p := n.Status.Plan; p != nil && p.State == PlanFailed && (vb == nil || vb.Name == "") {
		return false
	}
	if vb != nil && vb.Status != nil {
		switch vb.Status.Phase {
		case velerov1.BackupPhaseFailed, velerov1.BackupPhaseFailedValidation:
			return false
		}
	}
	return true
}

// UsageLocation is the location n's usage counts under: the one measured
// (status.usage.storageLocation), else its spec's (LocationName).
func (n *NonAdminBackup) UsageLocation() string {
	if n.Status.Usage != nil && n.Status.Usage.StorageLocation != "" {
		return n.Status.Usage.StorageLocation
	}
	if spec := n.Spec.BackupSpec; spec != nil {
		return LocationName(spec.StorageLocation)
	}
	return DefaultLocationName
}
