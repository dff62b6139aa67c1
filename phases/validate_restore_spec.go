package phases

import (
	"context"
	"fmt"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ValidateRestoreSpecArgs are the args of ValidateRestoreSpec.
type ValidateRestoreSpecArgs struct {
	// Enforce holds the admin's enforced restoreSpec values, typed as
	// Velero's RestoreSpec.
	Enforce *EnforcedRestoreSpec `json:"enforce,omitempty" doc:"admin-enforced values, typed as Velero's RestoreSpec"`
}

// ValidateRestoreSpec checks a NonAdminRestore's restoreSpec against OADP
// NAC's tenant rules and applies the admin's enforced values (args.enforce,
// as for backups). backupName is required and names a NonAdminBackup in the
// NonAdminRestore's own namespace — read only there, so a tenant can never
// name another tenant's backup — which must not be refused, being deleted or
// have a Failed backup. scheduleName, includedNamespaces other than its own,
// excludedNamespaces, namespaceMapping, includeClusterResources true and
// cluster-scoped kinds in includedResources (a well-known name or one the
// API server's RESTMapper says is cluster-scoped) are refused: restoring
// cluster-scoped objects, possibly with existingResourcePolicy update, would
// be a cluster-wide write made for a tenant (OADP NAC allows it; nacflow
// does not). It sets condition
// Accepted (RestoreAccepted or InvalidRestoreSpec), status.phase BackingOff
// on refusal, and records the effective spec in status.veleroRestore.spec
// and status.specHash (as ValidateBackupSpec does).
//
// Errors: refusals are terminal; API errors are retryable.
//
// Without args.enforce, the enforceRestoreSpec of OADP's
// DataProtectionApplication applies, when there is one (package dpa).
type ValidateRestoreSpec struct {
	settings Settings
	restoreRules
}

// Run implements phaseFunc.
func (f *ValidateRestoreSpec) Run(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, a *ValidateRestoreSpecArgs) (engine.Result, error) {
	d, err := f.decide(ctx, op, nar, a.Enforce)
	if err != nil {
		return waitForSettings(err)
	}
	// What was decided on: a later spec is reported, never acted on.
	nar.Status.SpecHash = v1alpha1.SpecHash(nar.Spec.RestoreSpec)
	if d.requester.reason != "" {
		setRequesterCondition(nar, d.requester)
	}
	if d.refusal != nil {
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, d.refusal)
	}
	accept(nar, v1alpha1.ReasonRestoreAccepted, "restore accepted")
	if nar.Status.VeleroRestore == nil {
		nar.Status.VeleroRestore = &v1alpha1.VeleroRestore{}
	}
	nar.Status.VeleroRestore.Spec = d.effective
	msg := "restoreSpec accepted"
	if d.enforce != nil {
		msg += enforcedBy(d.source, d.enforce.Fields)
	}
	return engine.Done(msg, map[string]string{"nonAdminBackup": d.effective.BackupName}), nil
}

// restoreDecision is what ValidateRestoreSpec decides on a restoreSpec:
// refusal, the first rule it breaks, or effective, the spec to restore
// with (enforced values applied), and the enforcement in force.
type restoreDecision struct {
	refusal   error
	requester requesterVerdict
	effective *velerov1.RestoreSpec
	enforce   *EnforcedRestoreSpec
	source    string
}

// decide checks nar's current restoreSpec against every rule of
// ValidateRestoreSpec and applies the enforcement in force (own, a
// blueprint's args.enforce, else the DataProtectionApplication's). It
// writes nothing. Errors: the settings' (invalidSettings when the DPA's
// enforce is invalid) and the API server's, all retryable.
func (f *ValidateRestoreSpec) decide(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, own *EnforcedRestoreSpec) (restoreDecision, error) {
	var d restoreDecision
	var err error
	if d.requester, err = f.requesters.verify(ctx, op, nar, f.tenantRoleName()); err != nil {
		return d, err
	}
	d.refusal = d.requester.forged
	if d.refusal == nil {
		d.refusal = d.requester.askedFor(nar)
	}
	if d.refusal == nil {
		d.refusal = validateRestoreSpec(nar)
	}
	if d.refusal == nil {
		d.refusal = outsideOADPNamespace(op)
	}
	if d.enforce, d.source, err = restoreEnforcement.inForce(ctx, f.settings, own); err != nil {
		return d, err
	}
	if d.refusal == nil {
		d.effective = nar.Spec.RestoreSpec.DeepCopy()
		d.refusal = d.enforce.Apply(d.effective)
	}
	if d.refusal == nil {
		cluster, err := clusterScopedIn(op.Client.RESTMapper(), d.effective.IncludedResources)
		if err != nil {
			return d, err
		}
		if len(cluster) > 0 {
			d.refusal = fmt.Errorf("spec.restoreSpec.includedResources: cluster-scoped kinds can not be restored by a NonAdminRestore: found %s",
				strings.Join(cluster, ", "))
		}
	}
	if d.refusal == nil {
		if d.refusal, err = f.checkMapping(ctx, op, nar, d); err != nil {
			return d, err
		}
	}
	if d.refusal == nil {
		if d.refusal, err = tenantModifiers(ctx, op, nar, d); err != nil {
			return d, err
		}
	}
	if d.refusal == nil {
		if d.refusal, err = f.checkBackup(ctx, op, nar); err != nil {
			return d, err
		}
	}
	return d, nil
}

// checkMapping applies the rules of a restore into another namespace
// (namespaceMapping {own: other}): the requester is known (their rights
// in other are what the restore is held to, item by item, in the
// pre-check and in velero-plugin-nacflow), the pre-check runs (it refuses
// the whole restore before any Velero Restore when one item is beyond
// them), and other exists (Velero would create a missing one with its own
// rights), is not being deleted, and is neither the OADP namespace nor
// protected (restoreRules.protect). It returns the refusal, nil when the
// spec maps nothing elsewhere. Errors: the API server's.
func (f *ValidateRestoreSpec) checkMapping(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, d restoreDecision) (error, error) {
	to := d.effective.NamespaceMapping[nar.Namespace]
	if to == "" || to == nar.Namespace {
		return nil, nil
	}
	field := fmt.Sprintf("spec.restoreSpec.namespaceMapping: %s to %s", nar.Namespace, to)
	if errs := validation.IsDNS1123Label(to); len(errs) > 0 {
		return fmt.Errorf("%s: %q is not a namespace name: %s", field, to, strings.Join(errs, "; ")), nil
	}
	if d.requester.user == nil {
		return fmt.Errorf("%s: a restore into another namespace is held to the rights there of whoever asked, and no one is known (condition RequesterVerified: %s)", field, d.requester.reason), nil
	}
	if !f.precheck {
		return fmt.Errorf("%s: a restore into another namespace needs nacflow's restore pre-check (nac --restore-precheck), which is off", field), nil
	}
	if to == op.OADPNamespace {
		return fmt.Errorf("%s: %s is the OADP namespace", field, to), nil
	}
	target := &corev1.Namespace{}
	switch err := op.APIReader.Get(ctx, client.ObjectKey{Name: to}, target); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: namespace %s does not exist (Velero would create it with its own rights): create it first", field, to), nil
	case err != nil:
		return nil, fmt.Errorf("reading namespace %s: %w", to, err)
	}
	if !target.DeletionTimestamp.IsZero() {
		return fmt.Errorf("%s: namespace %s is being deleted", field, to), nil
	}
	if why := f.protect.protects(target); why != "" {
		return fmt.Errorf("%s: namespace %s is protected (%s): a NonAdminRestore never restores into it", field, to, why), nil
	}
	return nil, nil
}

// tenantModifiers checks the resource modifiers a tenant names in
// spec.restoreSpec.resourceModifier (d.effective, the spec as asked with
// the admin's values applied): a ConfigMap of the NonAdminRestore's own
// namespace (Velero's format, one data key, YAML, version v1, and nacflow's
// rules, tenantmodifiers.Parse), for a known requester (each item is
// checked as it will be created, as that user), exactly as the requester's
// record holds it (requesterVerdict.recordedModifiers), and none enforced by
// the admin (Velero takes one). It takes the tenant's name out of
// d.effective — the accepted spec names only the admin's modifiers; later
// phases read the tenant's from the record — and returns the refusal, nil
// when the spec names none. Errors: the API server's.
func tenantModifiers(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, d restoreDecision) (error, error) {
	ref := nar.Spec.RestoreSpec.ResourceModifier
	if ref == nil {
		return nil, nil
	}
	const field = "spec.restoreSpec.resourceModifier"
	if d.enforce != nil && d.enforce.Spec.ResourceModifier != nil {
		return fmt.Errorf("%s: the admin enforces resource modifiers (ConfigMap %s of the OADP namespace), and Velero applies one set", field, d.enforce.Spec.ResourceModifier.Name), nil
	}
	if !strings.EqualFold(ref.Kind, "configmap") || (ref.APIGroup != nil && *ref.APIGroup != "") {
		return fmt.Errorf("%s.kind %q: name a ConfigMap of namespace %s", field, ref.Kind, nar.Namespace), nil
	}
	who := d.requester
	if who.user == nil || who.record == nil || who.record.Modifiers == nil || who.record.Modifiers.Name != ref.Name {
		return fmt.Errorf("%s: a tenant's resource modifiers need a known requester, as whom every item is checked as the modifiers make it (condition RequesterVerified: %s)", field, who.reason), nil
	}
	_, _, refusal, err := who.recordedModifiers(ctx, op, nar)
	if refusal == nil && err == nil {
		d.effective.ResourceModifier = nil
	}
	return refusal, err
}

// SafetyExceptions implements engine.Excepted: a restore into another
// namespace reads that Namespace (cluster-scoped).
func (*ValidateRestoreSpec) SafetyExceptions() []engine.Exception {
	return []engine.Exception{{Verbs: []string{"get"}, Kind: corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind(), Scope: engine.InAnyNamespace,
		Why: "the target namespace of a namespaceMapping must exist and not be protected"}}
}

// validateRestoreSpec returns the first tenant rule nar's restoreSpec breaks.
func validateRestoreSpec(nar *v1alpha1.NonAdminRestore) error {
	spec := nar.Spec.RestoreSpec
	if err := checkTenantSpec("spec.restoreSpec", spec); err != nil {
		return err
	}
	switch {
	case spec.BackupName == "":
		return fmt.Errorf("spec.restoreSpec.backupName is required: the name of a NonAdminBackup in namespace %s", nar.Namespace)
	case spec.ScheduleName != "":
		return fmt.Errorf("spec.restoreSpec.scheduleName is restricted: restore from a NonAdminBackup with backupName")
	case len(spec.ExcludedNamespaces) > 0:
		return fmt.Errorf("spec.restoreSpec.excludedNamespaces is restricted: found %s", strings.Join(spec.ExcludedNamespaces, ", "))
	case spec.ResourcePolicy != nil:
		return fmt.Errorf("spec.restoreSpec.resourcePolicy is restricted: it names a ConfigMap in the OADP namespace (an admin may enforce one)")
	case spec.IncludeClusterResources != nil && *spec.IncludeClusterResources:
		return fmt.Errorf("spec.restoreSpec.includeClusterResources can not be true: a NonAdminRestore may not restore cluster-scoped resources " +
			"(persistent volumes are restored through their claims when it is unset)")
	}
	for from := range spec.NamespaceMapping {
		if from != nar.Namespace {
			return fmt.Errorf("spec.restoreSpec.namespaceMapping maps %s: only the NonAdminRestore's own namespace %s may be mapped", from, nar.Namespace)
		}
	}
	for _, ns := range spec.IncludedNamespaces {
		if ns != nar.Namespace {
			return fmt.Errorf("spec.restoreSpec.includedNamespaces can not contain namespaces other than: %s (found %q)", nar.Namespace, ns)
		}
	}
	return nil
}

// checkBackup returns a refusal when the NonAdminBackup nar names cannot be
// restored from: missing from nar's namespace, refused, being deleted, or its
// backup failed. A backup still running is not refused: the restore waits
// for it.
func (f *ValidateRestoreSpec) checkBackup(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore) (error, error) {
	name := nar.Spec.RestoreSpec.BackupName
	nab := &v1alpha1.NonAdminBackup{}
	found, err := lookup(ctx, op, nar.Namespace, name, nab)
	if err != nil {
		return nil, err
	}
	if !found {
		return fmt.Errorf("spec.restoreSpec.backupName: no NonAdminBackup named %q in namespace %s", name, nar.Namespace), nil
	}
	switch nab.Status.Phase {
	case v1alpha1.NonAdminPhaseBackingOff, v1alpha1.NonAdminPhaseDeleting:
		return fmt.Errorf("spec.restoreSpec.backupName: NonAdminBackup %q is %s: it has no backup to restore", name, nab.Status.Phase), nil
	}
	if vb := nab.Status.VeleroBackup; vb != nil && vb.Status != nil {
		if p := vb.Status.Phase; p == velerov1.BackupPhaseFailed || p == velerov1.BackupPhaseFailedValidation {
			return fmt.Errorf("spec.restoreSpec.backupName: the backup of NonAdminBackup %q is %s: only Completed or PartiallyFailed backups can be restored", name, p), nil
		}
	}
	return nil, nil
}

// Doc implements engine.Documented.
func (*ValidateRestoreSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminRestore's restoreSpec: backupName names a NonAdminBackup of the same namespace (not refused, not deleting, not Failed); scheduleName, namespaceMapping, excludedNamespaces and other namespaces are refused; applies args.enforce; sets Accepted and status.veleroRestore.spec.",
		Outputs: []string{"nonAdminBackup: the NonAdminBackup named"},
		Errors:  "a refusal is terminal (Accepted=False/InvalidRestoreSpec, phase BackingOff); " + apiRetried,
	}
}
