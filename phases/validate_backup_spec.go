package phases

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ValidateBackupSpecArgs are the args of ValidateBackupSpec.
type ValidateBackupSpecArgs struct {
	// Enforce holds the admin's enforced backupSpec values (seed design
	// "admin enforced spec"), typed as Velero's BackupSpec.
	Enforce *EnforcedBackupSpec `json:"enforce,omitempty" doc:"admin-enforced values, typed as Velero's BackupSpec"`
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
// true, any includedClusterScopedResources, any volumeSnapshotLocations, a
// resourcePolicy (a ConfigMap of the OADP namespace: only an admin's enforce
// may set one), a NAB in the OADP namespace itself, and a
// storageLocation that is not an approved, Created and Available
// NonAdminBackupStorageLocation of the NAB's namespace (it is translated to
// that location's Velero BSL). Refusal is a terminal error: the same spec
// will never pass.
type ValidateBackupSpec struct {
	clients Clients
}

// Name implements engine.Func.
func (*ValidateBackupSpec) Name() string { return "ValidateBackupSpec" }

// NewArgs implements engine.Func.
func (*ValidateBackupSpec) NewArgs() any { return &ValidateBackupSpecArgs{} }

// Run implements engine.Func.
func (f *ValidateBackupSpec) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*ValidateBackupSpecArgs)
	nab, err := asBackup(f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	err = validateBackupSpec(nab)
	if err == nil && nab.Namespace == op.OADPNamespace {
		err = fmt.Errorf("metadata.namespace: NonAdminBackups are not served in the OADP namespace %s", op.OADPNamespace)
	}
	var effective *velerov1.BackupSpec
	if err == nil {
		effective = nab.Spec.BackupSpec.DeepCopy()
		err = a.Enforce.Apply(effective)
	}
	if err == nil && effective.StorageLocation != "" {
		var veleroBSL string
		if veleroBSL, err = f.storageLocation(ctx, nab.Namespace, effective.StorageLocation); err == nil {
			effective.StorageLocation = veleroBSL
		} else if !engine.IsTerminal(err) {
			return engine.Result{}, err
		}
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
	if err := checkSpecSize("spec.backupSpec", spec); err != nil {
		return err
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
	if spec.ResourcePolicy != nil {
		return fmt.Errorf("spec.backupSpec.resourcePolicy is restricted: it names a ConfigMap in the OADP namespace (an admin may enforce one)")
	}
	if len(spec.VolumeSnapshotLocations) > 0 {
		return fmt.Errorf("spec.backupSpec.volumeSnapshotLocations is restricted: found %s", strings.Join(spec.VolumeSnapshotLocations, ", "))
	}
	return nil
}

// storageLocation translates name, a NonAdminBackupStorageLocation of
// namespace ns, to its Velero BSL's name. It refuses (terminal error) a name
// that is no location of ns — another namespace's location or a Velero BSL
// named directly — and a location that is not approved, created and
// Available.
func (f *ValidateBackupSpec) storageLocation(ctx context.Context, ns, name string) (string, error) {
	nabsl := &v1alpha1.NonAdminBackupStorageLocation{}
	err := f.clients.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nabsl)
	if apierrors.IsNotFound(err) {
		return "", engine.Terminalf("spec.backupSpec.storageLocation: no NonAdminBackupStorageLocation named %q in namespace %s", name, ns)
	}
	if err != nil {
		return "", fmt.Errorf("reading NonAdminBackupStorageLocation %s/%s: %w", ns, name, err)
	}
	v := nabsl.Status.VeleroBackupStorageLocation
	switch {
	case !meta.IsStatusConditionTrue(nabsl.Status.Conditions, v1alpha1.ConditionClusterAdminApproved):
		return "", engine.Terminalf("spec.backupSpec.storageLocation: NonAdminBackupStorageLocation %q is not approved by a cluster admin", name)
	case nabsl.Status.Phase != v1alpha1.NonAdminPhaseCreated || v == nil || v.Name == "":
		return "", engine.Terminalf("spec.backupSpec.storageLocation: NonAdminBackupStorageLocation %q is %s, not Created", name, nabsl.Status.Phase)
	case v.Status == nil || v.Status.Phase != velerov1.BackupStorageLocationPhaseAvailable:
		return "", engine.Terminalf("spec.backupSpec.storageLocation: NonAdminBackupStorageLocation %q is not Available", name)
	}
	return v.Name, nil
}
