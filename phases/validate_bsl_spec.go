package phases

import (
	"context"
	"fmt"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ValidateBSLSpecArgs are the args of ValidateBSLSpec.
type ValidateBSLSpecArgs struct {
	// Enforce holds the admin's enforced values, typed as Velero's
	// BackupStorageLocationSpec.
	Enforce *EnforcedBSLSpec `json:"enforce,omitempty" doc:"admin-enforced values, typed as Velero's BackupStorageLocationSpec"`
}

// ValidateBSLSpec checks a NonAdminBackupStorageLocation (seed design
// non_admin_backupstoragelocation.md): default must be false; provider,
// objectStorage.bucket and the credential's name and key are required; the
// credential Secret must exist in the location's own namespace (read from
// the API server, never a cluster-wide cache) and hold the key. It applies
// args.enforce and forces the prefix in object storage under the tenant's
// namespace ("<ns>" or "<ns>/<prefix>"), so tenants sharing a bucket never
// share a prefix. The effective spec goes to
// status.veleroBackupStorageLocation.spec; condition Accepted is set, and
// status.phase BackingOff on refusal (terminal).
type ValidateBSLSpec struct {
	clients Clients
}

// Name implements engine.Func.
func (*ValidateBSLSpec) Name() string { return "ValidateBSLSpec" }

// NewArgs implements engine.Func.
func (*ValidateBSLSpec) NewArgs() any { return &ValidateBSLSpecArgs{} }

// Run implements engine.Func.
func (f *ValidateBSLSpec) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*ValidateBSLSpecArgs)
	nabsl, err := asBSL(f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	var effective *velerov1.BackupStorageLocationSpec
	refusal := validateBSLSpec(nabsl)
	if refusal == nil && nabsl.Namespace == op.OADPNamespace {
		refusal = fmt.Errorf("metadata.namespace: NonAdminBackupStorageLocations are not served in the OADP namespace %s", op.OADPNamespace)
	}
	if refusal == nil {
		effective = nabsl.Spec.BackupStorageLocationSpec.DeepCopy()
		refusal = a.Enforce.Apply(effective)
	}
	if refusal == nil {
		if refusal, err = f.checkSecret(ctx, nabsl); err != nil {
			return engine.Result{}, err
		}
	}
	if refusal != nil {
		nabsl.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
		meta.SetStatusCondition(&nabsl.Status.Conditions, metav1.Condition{
			Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalidBSLSpec,
			Message: refusal.Error(), ObservedGeneration: nabsl.Generation,
		})
		return engine.Result{}, engine.Terminal(refusal)
	}
	effective.ObjectStorage.Prefix = tenantPrefix(nabsl.Namespace, effective.ObjectStorage.Prefix)
	effective.Default = false
	meta.SetStatusCondition(&nabsl.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonBSLAccepted,
		Message: "backup storage location accepted", ObservedGeneration: nabsl.Generation,
	})
	if nabsl.Status.VeleroBackupStorageLocation == nil {
		nabsl.Status.VeleroBackupStorageLocation = &v1alpha1.VeleroBackupStorageLocation{}
	}
	nabsl.Status.VeleroBackupStorageLocation.Spec = effective
	msg := fmt.Sprintf("backupStorageLocationSpec accepted; prefix in object storage: %s", effective.ObjectStorage.Prefix)
	if a.Enforce != nil && len(a.Enforce.Fields)+len(a.Enforce.ObjectStorageFields) > 0 {
		msg += "; enforced by the admin: " + strings.Join(append(append([]string{}, a.Enforce.Fields...), prefixed("objectStorage.", a.Enforce.ObjectStorageFields)...), ", ")
	}
	return engine.Done(msg, map[string]string{"prefix": effective.ObjectStorage.Prefix}), nil
}

func prefixed(p string, l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = p + s
	}
	return out
}

// tenantPrefix returns prefix forced under namespace ns.
func tenantPrefix(ns, prefix string) string {
	prefix = strings.Trim(prefix, "/")
	switch {
	case prefix == "" || prefix == ns:
		return ns
	case strings.HasPrefix(prefix, ns+"/"):
		return prefix
	default:
		return ns + "/" + prefix
	}
}

// validateBSLSpec returns the first rule nabsl's spec breaks.
func validateBSLSpec(nabsl *v1alpha1.NonAdminBackupStorageLocation) error {
	spec := nabsl.Spec.BackupStorageLocationSpec
	if spec != nil {
		if err := checkSpecSize("spec.backupStorageLocationSpec", spec); err != nil {
			return err
		}
	}
	switch {
	case spec == nil:
		return fmt.Errorf("spec.backupStorageLocationSpec is required")
	case spec.Default:
		return fmt.Errorf("spec.backupStorageLocationSpec.default must be false: a tenant's location is never the default")
	case spec.Credential == nil || spec.Credential.Name == "" || spec.Credential.Key == "":
		return fmt.Errorf("spec.backupStorageLocationSpec.credential name and key are required: a Secret in namespace %s", nabsl.Namespace)
	case spec.Provider == "":
		return fmt.Errorf("spec.backupStorageLocationSpec.provider is required")
	case spec.ObjectStorage == nil || spec.ObjectStorage.Bucket == "":
		return fmt.Errorf("spec.backupStorageLocationSpec.objectStorage.bucket is required")
	case spec.ObjectStorage.CACertRef != nil:
		return fmt.Errorf("spec.backupStorageLocationSpec.objectStorage.caCertRef is not supported: use caCert")
	}
	return nil
}

// checkSecret returns a refusal when the credential Secret is missing from
// nabsl's namespace or lacks the key.
func (f *ValidateBSLSpec) checkSecret(ctx context.Context, nabsl *v1alpha1.NonAdminBackupStorageLocation) (refusal, err error) {
	cred := nabsl.Spec.BackupStorageLocationSpec.Credential
	s := &corev1.Secret{}
	err = f.clients.APIReader.Get(ctx, client.ObjectKey{Namespace: nabsl.Namespace, Name: cred.Name}, s)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("spec.backupStorageLocationSpec.credential: Secret %q not found in namespace %s", cred.Name, nabsl.Namespace), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", nabsl.Namespace, cred.Name, err)
	}
	if _, ok := s.Data[cred.Key]; !ok {
		return fmt.Errorf("spec.backupStorageLocationSpec.credential: Secret %q has no key %q", cred.Name, cred.Key), nil
	}
	return nil, nil
}
