package phases

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CopySecret copies a NonAdminBackupStorageLocation's credential Secret from
// the tenant's namespace into the OADP namespace, named like the location's
// other objects: its type and the credential's key only (the one key Velero
// reads), with the NAC labels and annotations. An existing copy is updated
// when the tenant's Secret changed (credential rotation). The tenant's
// Secret is read from the API server, never from a cluster-wide cache.
// Sets SecretSynced=True (OADP NAC's reasons: SecretCreated, SecretUpdated).
//
// The bytes copied are checked again as ValidateBSLSpec checks them
// (package credentials: static key material only, for the provider of the
// accepted spec), since the Secret may change between validation and copy
// (an approval can take days).
//
// Outputs: name. Errors: a missing Secret or key, or a credential that is
// not static key material, refuses the location (terminal;
// Accepted=False/BslSpecValidation, BackingOff) and removes
// the Velero BSL and copy an earlier run made; API errors are retryable.
type CopySecret struct {
	tools   tools
	content contentRules
}

// Run implements phaseFunc.
func (f *CopySecret) Run(ctx context.Context, op *engine.Operation, nabsl *v1alpha1.NonAdminBackupStorageLocation, _ *noArgs) (engine.Result, error) {
	cred := nabsl.Spec.BackupStorageLocationSpec.Credential
	src := &corev1.Secret{}
	err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: nabsl.Namespace, Name: cred.Name}, src)
	if apierrors.IsNotFound(err) {
		return engine.Result{}, refuse(nabsl, v1alpha1.ReasonInvalidBSLSpec,
			fmt.Errorf("spec.backupStorageLocationSpec.credential: Secret %q not found in namespace %s", cred.Name, nabsl.Namespace))
	}
	if err != nil {
		return engine.Result{}, fmt.Errorf("reading Secret %s/%s: %w", nabsl.Namespace, cred.Name, err)
	}
	data, ok := src.Data[cred.Key]
	var refusal error
	if !ok {
		refusal = fmt.Errorf("spec.backupStorageLocationSpec.credential: Secret %q has no key %q", cred.Name, cred.Key)
	} else {
		// The spec Velero's BSL is made from: the accepted one.
		spec := nabsl.Spec.BackupStorageLocationSpec
		if v := nabsl.Status.VeleroBackupStorageLocation; v != nil && v.Spec != nil {
			spec = v.Spec
		}
		refusal = f.content.checkCredential(spec.Provider, spec.Config, data, fmt.Sprintf("Secret %s/%s", cred.Name, cred.Key))
	}
	if refusal != nil {
		if err := withdrawBSL(ctx, op); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{}, refuse(nabsl, v1alpha1.ReasonInvalidBSLSpec, refusal)
	}
	copied := map[string][]byte{cred.Key: data}
	want := &corev1.Secret{
		ObjectMeta: op.ObjectMeta(v1alpha1.OperationObjectName(nabsl, op.UUID)),
		Type:       src.Type,
		Data:       copied,
	}
	obj, verb, err := createOrAdoptOwn(ctx, op, f.tools.recent, "Secret", want, &corev1.SecretList{})
	if err != nil {
		return engine.Result{}, err
	}
	got := obj.(*corev1.Secret)
	if verb == "Adopted" && !equality.Semantic.DeepEqual(got.Data, copied) {
		before := got.DeepCopy()
		got.Data = copied
		if err := op.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
			return engine.Result{}, fmt.Errorf("updating Secret %s/%s: %w", got.Namespace, got.Name, err)
		}
		verb = "Updated"
	}
	setCondition(nabsl, v1alpha1.ConditionSecretSynced, metav1.ConditionTrue, syncedReason(nabsl, v1alpha1.ConditionSecretSynced, verb, v1alpha1.ReasonSecretCreated, v1alpha1.ReasonSecretUpdated),
		fmt.Sprintf("credential Secret %s copied to %s/%s", cred.Name, got.Namespace, got.Name))
	return engine.Done(fmt.Sprintf("%s Secret %s/%s from %s/%s", verb, got.Namespace, got.Name, nabsl.Namespace, cred.Name),
		map[string]string{"name": got.Name}), nil
}

// Doc implements engine.Documented.
func (*CopySecret) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Copies the location's credential Secret (its type and the credential's key only) into the OADP namespace, named like its other objects, after checking the bytes copied as ValidateBSLSpec does (static key material only); updates the copy when the tenant's Secret changed.",
		Outputs: []string{"name: the copy"},
		Errors:  "a missing Secret or key, or a credential that is not static key material, is terminal (the Velero BSL and copy of an earlier run are removed); " + apiRetried,
	}
}
