package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CreateVeleroBSLArgs are the args of CreateVeleroBSL.
type CreateVeleroBSLArgs struct {
	// SecretName is the copied credential Secret in the OADP namespace,
	// usually {{ .Phases.<copy phase>.Output.name }}.
	SecretName string `json:"secretName" doc:"the copied Secret, usually {{ .Phases.<copy phase>.Output.name }}"`
}

// CreateVeleroBSL creates (or adopts and updates) the Velero
// BackupStorageLocation of a NonAdminBackupStorageLocation in the OADP
// namespace, named like its other objects, from the effective spec
// (status.veleroBackupStorageLocation.spec: enforced values, forced prefix)
// with the credential pointing at the copied Secret and default false. Sets
// status.phase Created and BackupStorageLocationSynced=True (OADP NAC's
// reasons: BackupStorageLocationCreated, BackupStorageLocationUpdated). args.secretName
// must name the operation's own copy (the Secret in the OADP namespace with
// this operation's openshift.io/oadp-nabsl-origin-nacuuid label): the
// engine's safety rule refuses a location on any other Secret, the admin's
// cloud-credentials or another tenant's copy, whatever the blueprint
// renders.
//
// Before the location exists it records the location's namespace in the
// map the ValidatingAdmissionPolicy nacflow-pod-volume-backups reads
// (Clients.Locations): PodVolumeBackups Velero syncs from the tenant's
// bucket may then name the tenant's own Pods only.
//
// Outputs: name. Errors: a name taken by another object and a Secret that
// is not the operation's own copy are terminal; API errors are retryable.
type CreateVeleroBSL struct {
	tools tools
}

// Run implements phaseFunc.
func (f *CreateVeleroBSL) Run(ctx context.Context, op *engine.Operation, nabsl *v1alpha1.NonAdminBackupStorageLocation, a *CreateVeleroBSLArgs) (engine.Result, error) {
	if a.SecretName == "" {
		return engine.Result{}, engine.Terminalf("CreateVeleroBSL: args.secretName is empty")
	}
	vb := nabsl.Status.VeleroBackupStorageLocation
	if vb == nil || vb.Spec == nil {
		return engine.Result{}, engine.Terminalf("CreateVeleroBSL: no accepted spec in status.veleroBackupStorageLocation.spec (run ValidateBSLSpec first)")
	}
	spec := vb.Spec.DeepCopy()
	spec.Default = false
	spec.Credential = &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: a.SecretName},
		Key:                  nabsl.Spec.BackupStorageLocationSpec.Credential.Key,
	}
	want := &velerov1.BackupStorageLocation{
		ObjectMeta: op.ObjectMeta(v1alpha1.OperationObjectName(nabsl, op.UUID)),
		Spec:       *spec,
	}
	// Recorded before the location exists: Velero may sync a location's
	// bucket as soon as it is Available, and the PodVolumeBackups it copies
	// from a tenant's bucket are held to the tenant's namespace by the map.
	if f.tools.locations != nil {
		if err := f.tools.locations.Record(ctx, want.Name, nabsl.Namespace); err != nil {
			return engine.Result{}, err
		}
	}
	obj, verb, err := createOrAdoptOwn(ctx, op, f.tools.recent, "Velero BackupStorageLocation", want, &velerov1.BackupStorageLocationList{})
	if err != nil {
		return engine.Result{}, err
	}
	got := obj.(*velerov1.BackupStorageLocation)
	if verb == "Adopted" && !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		before := got.DeepCopy()
		got.Spec = want.Spec
		if err := op.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
			return engine.Result{}, fmt.Errorf("updating Velero BackupStorageLocation %s/%s: %w", got.Namespace, got.Name, err)
		}
		verb = "Updated"
	}
	nabsl.Status.Phase = v1alpha1.NonAdminPhaseCreated
	vb.NACUUID, vb.Name, vb.Namespace = op.UUID, got.Name, got.Namespace
	setCondition(nabsl, v1alpha1.ConditionBackupStorageLocationSynced, metav1.ConditionTrue, syncedReason(nabsl, v1alpha1.ConditionBackupStorageLocationSynced, verb, v1alpha1.ReasonBSLCreated, v1alpha1.ReasonBSLUpdated),
		fmt.Sprintf("Velero BackupStorageLocation %s/%s matches the spec", got.Namespace, got.Name))
	return engine.Done(fmt.Sprintf("%s Velero BackupStorageLocation %s/%s", verb, got.Namespace, got.Name), map[string]string{"name": got.Name}), nil
}

// Doc implements engine.Documented.
func (*CreateVeleroBSL) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates or updates the Velero BackupStorageLocation from the effective spec, credential pointing at args.secretName (which must be the operation's own copy: the safety rule refuses any other Secret), default false; phase Created.",
		Outputs: []string{"name: the Velero BSL"},
		Errors:  "a name held by another operation's object, a Secret that is not the operation's own copy are terminal; " + apiRetried,
	}
}
