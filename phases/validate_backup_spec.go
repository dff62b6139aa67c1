package phases

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ValidateBackupSpecArgs are the args of ValidateBackupSpec: the admin's
// rules for a tenant's backupSpec. ValidateScheduleSpecArgs embed them, as
// every run of a schedule is held to the rules of a NonAdminBackup.
type ValidateBackupSpecArgs struct {
	// Enforce holds the admin's enforced backupSpec values (OADP's "admin
	// enforced spec" design), typed as Velero's BackupSpec.
	Enforce *EnforcedBackupSpec `json:"enforce,omitempty" doc:"admin-enforced values (a schedule's: of every run's backupSpec), typed as Velero's BackupSpec"`
	// LocationTimeout bounds the wait for a storageLocation of the
	// namespace that exists but is not ready yet (approval pending, not
	// created, not Available); DefaultLocationTimeout when unset.
	LocationTimeout *metav1.Duration `json:"locationTimeout,omitempty" doc:"how long a NAB or schedule waits for its NonAdminBackupStorageLocation to be approved, created and Available before it is refused (duration, default 5m)"`
}

// DefaultLocationTimeout is how long a NonAdminBackup waits for a storage
// location of its namespace that is not ready yet, when
// ValidateBackupSpecArgs.LocationTimeout is unset. It is shorter than the
// engine's default wait timeout (10m), so that the refusal, not a plain
// timeout, ends the wait.
const DefaultLocationTimeout = 5 * time.Minute

// ValidateBackupSpec checks a NonAdminBackup's backupSpec against the tenant
// rules of OADP NAC — a tenant may back up only its own namespace, and
// nothing cluster-scoped — and applies the admin's enforced values
// (args.enforce; see EnforcedBackupSpec.Apply). The accepted, effective spec
// is recorded in status.veleroBackup.spec, so the tenant sees enforced values
// before Velero does, and CreateVeleroBackup builds the Velero Backup from
// it. It sets condition Accepted (BackupAccepted or InvalidBackupSpec) and,
// on refusal, status.phase BackingOff. Either way it records
// status.specHash (v1alpha1.SpecHash of spec.backupSpec): the spec decided
// on, so that a later change is reported and never acted on.
//
// Refused, each with a message naming the field: includedNamespaces other
// than the NAB's own namespace, any excludedNamespaces, includeClusterResources
// true, any includedClusterScopedResources, any volumeSnapshotLocations, a
// resourcePolicy (a ConfigMap of the OADP namespace: only an admin's enforce
// may set one), a NAB in the OADP namespace itself, and a storageLocation
// that is no NonAdminBackupStorageLocation of the NAB's namespace, or one
// that is refused (BackingOff) or being deleted. A location of its namespace
// that is not ready yet — approval pending, its Velero BSL not created or
// not Available — is waited for (the wait message says which), up to
// args.locationTimeout (5m), then refused; once ready it is translated to
// the location's Velero BSL. Refusal is a terminal error: the same spec
// will never pass.
//
// Without args.enforce, the enforceBackupSpec of OADP's
// DataProtectionApplication applies, when there is one (package dpa); the
// phase message names the source of what was enforced.
type ValidateBackupSpec struct {
	settings Settings
}

// Run implements phaseFunc.
func (f *ValidateBackupSpec) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *ValidateBackupSpecArgs) (engine.Result, error) {
	refusal := validateBackupSpec(nab)
	if refusal == nil {
		refusal = outsideOADPNamespace(op)
	}
	enforce, source, err := backupEnforcement.inForce(ctx, f.settings, a.Enforce)
	if err != nil {
		return waitForSettings(err)
	}
	var effective *velerov1.BackupSpec
	if refusal == nil {
		effective = nab.Spec.BackupSpec.DeepCopy()
		refusal = enforce.Apply(effective)
	}
	if refusal == nil {
		var wait *engine.Result
		wait, refusal, err = awaitLocation(ctx, op, nab.Namespace, effective, a.LocationTimeout)
		switch {
		case err != nil:
			return engine.Result{}, err
		case wait != nil:
			return *wait, nil
		}
	}
	// What was decided on: a later spec is reported, never acted on.
	nab.Status.SpecHash = v1alpha1.SpecHash(nab.Spec.BackupSpec)
	if refusal != nil {
		return engine.Result{}, refuse(nab, v1alpha1.ReasonInvalidBackupSpec, refusal)
	}
	accept(nab, v1alpha1.ReasonBackupAccepted, "backup accepted")
	if nab.Status.VeleroBackup == nil {
		nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{}
	}
	nab.Status.VeleroBackup.Spec = effective
	msg := "backupSpec accepted"
	if enforce != nil {
		msg += enforcedBy(source, enforce.Fields)
	}
	return engine.Done(msg, nil), nil
}

// phaseAge returns how long op's phase has run (0 when the plan does not
// record its start).
func phaseAge(op *engine.Operation) time.Duration {
	plan := op.Object.GetPlan()
	if plan == nil {
		return 0
	}
	ps := plan.Phase(op.Phase)
	if ps == nil || ps.StartTime == nil {
		return 0
	}
	return time.Since(ps.StartTime.Time)
}

// awaitLocation translates spec's storageLocation, a
// NonAdminBackupStorageLocation of namespace ns (none: Velero's default),
// to its Velero BSL in place (storageLocation). While the location is not
// ready it returns wait, the phase's Wait result, for up to timeout
// (args.locationTimeout; DefaultLocationTimeout when nil) from the phase's
// start; then it refuses the location. refusal is storageLocation's, or
// that timeout's, both naming spec.backupSpec.storageLocation. Other errors
// are the API server's (retryable).
func awaitLocation(ctx context.Context, op *engine.Operation, ns string, spec *velerov1.BackupSpec, timeout *metav1.Duration) (wait *engine.Result, refusal, err error) {
	if spec.StorageLocation == "" {
		return nil, nil, nil
	}
	veleroBSL, notReady, err := storageLocation(ctx, op, ns, spec.StorageLocation)
	switch {
	case err != nil && !engine.IsTerminal(err):
		return nil, nil, err
	case err != nil:
		return nil, err, nil
	case notReady == "":
		spec.StorageLocation = veleroBSL
		return nil, nil, nil
	}
	limit := DefaultLocationTimeout
	if timeout != nil {
		limit = timeout.Duration
	}
	if waited := phaseAge(op); waited < limit {
		// The controllers map the location's changes to the NABs and
		// schedules that use it: a watched wait.
		w := engine.WaitWatched(fmt.Sprintf("waiting up to %s for %s", limit, notReady), limit-waited)
		return &w, nil, nil
	}
	return nil, fmt.Errorf("spec.backupSpec.storageLocation: not ready within %s: %s", limit, notReady), nil
}

// validateBackupSpec returns the first tenant rule nab's backupSpec breaks.
func validateBackupSpec(nab *v1alpha1.NonAdminBackup) error {
	spec := nab.Spec.BackupSpec
	if err := checkTenantSpec("spec.backupSpec", spec); err != nil {
		return err
	}
	if l := originLabels(nab); len(l) > maxOriginLabelsBytes {
		return fmt.Errorf("metadata.labels: %d bytes as JSON, at most %d: they are copied to the Velero Backup's annotation %s (the API server takes at most 256 KiB of annotations)",
			len(l), maxOriginLabelsBytes, v1alpha1.NabOriginLabelsAnnotation)
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
// namespace ns, to its Velero BSL's name. A location that exists but is not
// ready yet — approval pending, its Velero BSL not created, not Available —
// gives notReady, a sentence saying why, and no name. It refuses (terminal
// error) a name that is no location of ns — another namespace's location or
// a Velero BSL named directly — and a location that is refused or being
// deleted. Other errors are the API server's (retryable).
func storageLocation(ctx context.Context, op *engine.Operation, ns, name string) (veleroBSL, notReady string, err error) {
	nabsl := &v1alpha1.NonAdminBackupStorageLocation{}
	found, err := lookup(ctx, op, ns, name, nabsl)
	if err != nil {
		return "", "", err
	}
	if !found {
		return "", "", engine.Terminalf("spec.backupSpec.storageLocation: no NonAdminBackupStorageLocation named %q in namespace %s", name, ns)
	}
	v := nabsl.Status.VeleroBackupStorageLocation
	about := fmt.Sprintf("NonAdminBackupStorageLocation %q", name)
	switch {
	case !nabsl.DeletionTimestamp.IsZero():
		return "", "", engine.Terminalf("spec.backupSpec.storageLocation: %s is being deleted", about)
	case nabsl.Status.Phase == v1alpha1.NonAdminPhaseBackingOff:
		why := "it was refused"
		if c := meta.FindStatusCondition(nabsl.Status.Conditions, v1alpha1.ConditionAccepted); c != nil && c.Status == metav1.ConditionFalse {
			why = "it was refused: " + c.Message
		}
		return "", "", engine.Terminalf("spec.backupSpec.storageLocation: %s can not be used: %s", about, why)
	case !meta.IsStatusConditionTrue(nabsl.Status.Conditions, v1alpha1.ConditionClusterAdminApproved):
		return "", about + " to be approved by a cluster admin", nil
	case nabsl.Status.Phase != v1alpha1.NonAdminPhaseCreated || v == nil || v.Name == "":
		return "", fmt.Sprintf("%s to be created (phase %q)", about, nabsl.Status.Phase), nil
	case v.Status == nil || v.Status.Phase != velerov1.BackupStorageLocationPhaseAvailable:
		msg := about + " to be Available"
		if v.Status != nil && v.Status.Message != "" {
			msg += " (Velero: " + v.Status.Message + ")"
		}
		return "", msg, nil
	}
	return v.Name, "", nil
}

// Doc implements engine.Documented.
func (*ValidateBackupSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminBackup's backupSpec against the tenant rules (own namespace only, nothing cluster-scoped, storageLocation only an approved Available NonAdminBackupStorageLocation of the namespace) and applies args.enforce; sets Accepted and status.veleroBackup.spec (the effective spec).",
		Errors:  "a refusal is terminal (Accepted=False/InvalidBackupSpec, phase BackingOff); " + apiRetried,
	}
}
