package phases

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ValidateBackupSpecArgs are the args of ValidateBackupSpec.
type ValidateBackupSpecArgs struct {
	// Enforce holds the admin's enforced backupSpec values (seed design
	// "admin enforced spec"), typed as Velero's BackupSpec.
	Enforce *EnforcedBackupSpec `json:"enforce,omitempty"`
}

// ValidateBackupSpec checks a NonAdminBackup's backupSpec against the tenant
// rules of OADP NAC — a tenant may back up only its own namespace, and
// nothing cluster-scoped — and applies the admin's enforced values
// (args.enforce; see EnforcedBackupSpec.Apply). The accepted, effective spec
// is recorded in status.veleroBackup.spec, so the tenant sees enforced values
// before Velero does, and CreateVeleroBackup builds the Velero Backup from
// it. It sets condition Accepted (BackupAccepted or InvalidBackupSpec) and,
// on refusal, status.phase BackingOff.
//
// Refused, each with a message naming the field: includedNamespaces other
// than the NAB's own namespace, any excludedNamespaces, includeClusterResources
// true, any includedClusterScopedResources, any volumeSnapshotLocations, and a
// storageLocation (NonAdminBackupStorageLocations come later). Refusal is a
// terminal error: the same spec will never pass.
type ValidateBackupSpec struct{}

// Name implements engine.Func.
func (*ValidateBackupSpec) Name() string { return "ValidateBackupSpec" }

// NewArgs implements engine.Func.
func (*ValidateBackupSpec) NewArgs() any { return &ValidateBackupSpecArgs{} }

// Run implements engine.Func.
func (f *ValidateBackupSpec) Run(_ context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*ValidateBackupSpecArgs)
	nab, err := asBackup(f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	err = validateBackupSpec(nab)
	var effective *velerov1.BackupSpec
	if err == nil {
		effective = nab.Spec.BackupSpec.DeepCopy()
		err = a.Enforce.Apply(effective)
	}
	if err != nil {
		nab.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
		meta.SetStatusCondition(&nab.Status.Conditions, metav1.Condition{
			Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonInvalidBackupSpec, Message: err.Error(),
			ObservedGeneration: nab.Generation,
		})
		return engine.Result{}, engine.Terminal(err)
	}
	meta.SetStatusCondition(&nab.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonBackupAccepted, Message: "backup accepted",
		ObservedGeneration: nab.Generation,
	})
	if nab.Status.VeleroBackup == nil {
		nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{}
	}
	nab.Status.VeleroBackup.Spec = effective
	msg := "backupSpec accepted"
	if a.Enforce != nil && len(a.Enforce.Fields) > 0 {
		msg += "; enforced by the admin: " + strings.Join(a.Enforce.Fields, ", ")
	}
	return engine.Done(msg, nil), nil
}

// validateBackupSpec returns the first tenant rule nab's backupSpec breaks.
func validateBackupSpec(nab *v1alpha1.NonAdminBackup) error {
	spec := nab.Spec.BackupSpec
	if spec == nil {
		return fmt.Errorf("spec.backupSpec is required")
	}
	for _, ns := range spec.IncludedNamespaces {
		if ns != nab.Namespace {
			return fmt.Errorf("spec.backupSpec.includedNamespaces can not contain namespaces other than: %s (found %q)", nab.Namespace, ns)
		}
	}
	if len(spec.ExcludedNamespaces) > 0 {
		return fmt.Errorf("spec.backupSpec.excludedNamespaces is restricted: found %s", strings.Join(spec.ExcludedNamespaces, ", "))
	}
	if spec.IncludeClusterResources != nil && *spec.IncludeClusterResources {
		return fmt.Errorf("spec.backupSpec.includeClusterResources can not be true: a NonAdminBackup may not include cluster-scoped resources")
	}
	if len(spec.IncludedClusterScopedResources) > 0 {
		return fmt.Errorf("spec.backupSpec.includedClusterScopedResources is restricted: found %s", strings.Join(spec.IncludedClusterScopedResources, ", "))
	}
	if len(spec.VolumeSnapshotLocations) > 0 {
		return fmt.Errorf("spec.backupSpec.volumeSnapshotLocations is restricted: found %s", strings.Join(spec.VolumeSnapshotLocations, ", "))
	}
	if spec.StorageLocation != "" {
		return fmt.Errorf("spec.backupSpec.storageLocation is not supported yet: leave it empty to use the default backup storage location (found %q)", spec.StorageLocation)
	}
	return nil
}
