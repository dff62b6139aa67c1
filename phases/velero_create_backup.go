package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CreateVeleroBackup creates the Velero Backup of a NonAdminBackup in the
// OADP namespace, or adopts it when it already exists with this operation's
// NACUUID label (so a restart never makes a second one). The name is
// v1alpha1.NACObjectName(ns, name, nacuuid); the spec is the accepted
// backupSpec (status.veleroBackup.spec, with admin-enforced values) with
// includedNamespaces forced to the NAB's namespace, and the NAC kinds and
// ClusterExcludedResources (OADP NAC's list) excluded in the filter style
// the spec uses; labels and annotations are OADP NAC's plus the blueprint's
// args.labels and args.annotations (ObjectMetaArgs: reserved keys refused). It records the link in
// status.veleroBackup, sets status.phase Created and condition
// Queued=True/BackupScheduled.
//
// Outputs: name, namespace. Errors: a terminal error when an object of that
// name exists without this operation's label ("Velero Backup NS/NAME exists
// but does not belong to this NonAdminBackup"; never touched); API errors
// are retryable.
type CreateVeleroBackup struct {
	tools tools
}

// Run implements phaseFunc.
func (f *CreateVeleroBackup) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, extra *ObjectMetaArgs) (engine.Result, error) {
	if nab.Spec.BackupSpec == nil {
		return engine.Result{}, engine.Terminalf("spec.backupSpec is required")
	}
	want := &velerov1.Backup{
		ObjectMeta: op.ObjectMeta(v1alpha1.NACObjectName(nab.Namespace, nab.Name, op.UUID)),
		Spec:       *tenantBackupSpec(nab),
	}
	extra.apply(want.Labels, want.Annotations)
	if l := originLabels(nab); l != "" {
		want.Annotations[v1alpha1.NabOriginLabelsAnnotation] = l
	}

	obj, verb, err := createOrAdoptOwn(ctx, op, f.tools.recent, "Velero Backup", want, &velerov1.BackupList{})
	if err != nil {
		return engine.Result{}, err
	}
	got := obj.(*velerov1.Backup)

	nab.Status.Phase = v1alpha1.NonAdminPhaseCreated
	nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{NACUUID: op.UUID}
	nab.MirrorBackup(got)
	// The queue position now, with the status this phase writes anyway, so
	// that the next reconcile finds nothing to write.
	ShowQueuePosition(f.tools.queue, nab, got, true)
	meta.SetStatusCondition(&nab.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionQueued, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonBackupScheduled, Message: "Created Velero Backup object",
		ObservedGeneration: nab.Generation,
	})
	return engine.Done(fmt.Sprintf("%s Velero Backup %s/%s", verb, got.Namespace, got.Name),
		map[string]string{"name": got.Name, "namespace": got.Namespace}), nil
}

// tenantBackupSpec returns the Velero BackupSpec for nab: the spec
// ValidateBackupSpec accepted (admin-enforced values applied; the NAB's own
// backupSpec when no validation recorded one) with includedNamespaces set to
// its own namespace, and the NAC kinds and ClusterExcludedResources
// excluded in the filter style the spec uses (excludeForTenant).
func tenantBackupSpec(nab *v1alpha1.NonAdminBackup) *velerov1.BackupSpec {
	spec := nab.AcceptedBackupSpec().DeepCopy()
	spec.IncludedNamespaces = []string{nab.Namespace}
	excludeForTenant(spec)
	return spec
}

// Doc implements engine.Documented.
func (*CreateVeleroBackup) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates (or adopts) the Velero Backup <ns>-<name>-<nacuuid> in the OADP namespace from the accepted spec, includedNamespaces forced to the tenant's, NAC kinds excluded, OADP labels plus args.labels/annotations; phase Created, Queued=True.",
		Outputs: []string{"name: the Velero Backup", "namespace: the OADP namespace"},
		Errors:  "a name held by another operation's object is terminal; " + apiRetried,
	}
}
