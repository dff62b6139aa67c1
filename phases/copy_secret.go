package phases

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CopySecret copies a NonAdminBackupStorageLocation's credential Secret from
// the tenant's namespace into the OADP namespace, named like the location's
// other objects: type and data only, with the NAC labels and annotations. An
// existing copy is updated when the tenant's Secret changed (credential
// rotation). The tenant's Secret is read from the API server, never from a
// cluster-wide cache. Sets SecretSynced=True.
//
// Outputs: name. Errors: a missing Secret refuses the location (terminal;
// Accepted=False/InvalidBackupStorageLocationSpec, BackingOff); API errors
// are retryable.
type CopySecret struct {
	tools tools
}

// Name implements engine.Func.
func (*CopySecret) Name() string { return "CopySecret" }

// NewArgs implements engine.Func: the function takes no args.
func (*CopySecret) NewArgs() any { return &noArgs{} }

// Run implements engine.Func.
func (f *CopySecret) Run(ctx context.Context, op *engine.Operation, _ any) (engine.Result, error) {
	nabsl, err := asBSL(f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	cred := nabsl.Spec.BackupStorageLocationSpec.Credential
	src := &corev1.Secret{}
	err = op.APIReader.Get(ctx, client.ObjectKey{Namespace: nabsl.Namespace, Name: cred.Name}, src)
	if apierrors.IsNotFound(err) {
		return engine.Result{}, refuse(nabsl, v1alpha1.ReasonInvalidBSLSpec,
			fmt.Errorf("spec.backupStorageLocationSpec.credential: Secret %q not found in namespace %s", cred.Name, nabsl.Namespace))
	}
	if err != nil {
		return engine.Result{}, fmt.Errorf("reading Secret %s/%s: %w", nabsl.Namespace, cred.Name, err)
	}
	labels, annotations := op.OwnerMeta()
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.NACObjectName(nabsl.Namespace, nabsl.Name, op.UUID), Namespace: op.OADPNamespace,
			Labels: labels, Annotations: annotations,
		},
		Type: src.Type,
		Data: src.Data,
	}
	obj, verb, err := createOrAdopt(ctx, op, f.tools.recent, "Secret", want)
	if err != nil {
		return engine.Result{}, err
	}
	got := obj.(*corev1.Secret)
	if verb == "Adopted" && !equality.Semantic.DeepEqual(got.Data, src.Data) {
		before := got.DeepCopy()
		got.Data = src.Data
		if err := op.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
			return engine.Result{}, fmt.Errorf("updating Secret %s/%s: %w", got.Namespace, got.Name, err)
		}
		verb = "Updated"
	}
	meta.SetStatusCondition(&nabsl.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionSecretSynced, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSecretSynced,
		Message: fmt.Sprintf("credential Secret %s copied to %s/%s", cred.Name, got.Namespace, got.Name), ObservedGeneration: nabsl.Generation,
	})
	return engine.Done(fmt.Sprintf("%s Secret %s/%s from %s/%s", verb, got.Namespace, got.Name, nabsl.Namespace, cred.Name),
		map[string]string{"name": got.Name}), nil
}
