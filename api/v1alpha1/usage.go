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

// StorageUsage is what some NonAdminBackups hold in object storage: the
// figures of quotas (CheckQuota), of the gauges nacflow_tenant_backups and
// nacflow_tenant_backup_bytes, of kubectl nac usage and of a
// NonAdminBackupStorageLocation's status.usage. The zero value counts
// nothing.
type StorageUsage struct {
	// backups counts the NonAdminBackups that hold, or will hold, a backup
	// (not being deleted, not refused before a Velero Backup existed, their
	// Velero Backup not Failed).
	Backups int32 `json:"backups"`
	// totalBytes is what they take: the sum of their status.usage.totalBytes
	// (bytes).
	TotalBytes int64 `json:"totalBytes"`
	// notMeasured counts those without status.usage yet (running, or not
	// measured yet: they add no bytes).
	// +optional
	NotMeasured int32 `json:"notMeasured,omitempty"`
}

// Add counts n when it holds a backup (HoldsBackup) and reports whether it
// did.
func (u *StorageUsage) Add(n *NonAdminBackup) bool {
	if !n.HoldsBackup() {
		return false
	}
	u.Backups++
	if n.Status.Usage != nil {
		u.TotalBytes += n.Status.Usage.TotalBytes
	} else {
		u.NotMeasured++
	}
	return true
}

// UsageByLocation sums nabs by the location their usage counts under
// (UsageLocation); only locations holding a backup appear.
func UsageByLocation(nabs []NonAdminBackup) map[string]*StorageUsage {
	by := map[string]*StorageUsage{}
	for i := range nabs {
		n := &nabs[i]
		if !n.HoldsBackup() {
			continue
		}
		l := n.UsageLocation()
		if by[l] == nil {
			by[l] = &StorageUsage{}
		}
		by[l].Add(n)
	}
	return by
}
