package phases

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// noArgs is the argument struct of functions that take none: any arg is
// rejected by the strict decode.
type noArgs struct{}

// as returns the operation's object as the NAC kind T, or a terminal error
// naming fn when a blueprint gave the function another kind.
func as[T v1alpha1.Object](fn string, op *engine.Operation) (T, error) {
	obj, ok := op.Object.(T)
	if !ok {
		k, _ := v1alpha1.KindOf(obj) // obj is T's nil: its kind still shows
		return obj, engine.Terminalf("%s serves %s, not %T", fn, k.Kind, op.Object)
	}
	return obj, nil
}

// maxOriginLabelsBytes bounds originLabels (bytes of JSON): a NonAdminBackup
// whose labels take more is refused at validation, so that its Velero
// Backup, which carries them as an annotation, can always be created.
const maxOriginLabelsBytes = 64 << 10

// originLabels returns nab's own labels as JSON, for the Velero Backup's
// NabOriginLabelsAnnotation ("" when it has none).
func originLabels(nab *v1alpha1.NonAdminBackup) string {
	own := map[string]string{}
	for k, v := range nab.Labels {
		if k != v1alpha1.NabSyncedFromNACUUIDLabel {
			own[k] = v
		}
	}
	if len(own) == 0 {
		return ""
	}
	data, _ := json.Marshal(own) // a map[string]string always marshals
	return string(data)
}

// refuse records a refusal on obj the way OADP NAC does for every kind and
// whatever phase refuses: status.phase BackingOff and condition
// Accepted=False with reason and err's message (which names the field or
// label at fault). It returns err as a terminal error: the same input will
// never pass. An object of no NAC kind only gets the terminal error.
func refuse(obj engine.Object, reason string, err error) error {
	if nac, ok := obj.(v1alpha1.Object); ok {
		setPhaseAndCondition(nac, v1alpha1.NonAdminPhaseBackingOff, metav1.Condition{
			Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionFalse, Reason: reason,
			Message: err.Error(), ObservedGeneration: obj.GetGeneration(),
		})
	}
	return engine.Terminal(err)
}

// setPhaseAndCondition sets obj's status.phase, and its condition c with
// meta.SetStatusCondition (the transition time moves only when the status
// does): OADP NAC's common status shape.
func setPhaseAndCondition(obj v1alpha1.Object, phase v1alpha1.NonAdminPhase, c metav1.Condition) {
	obj.SetPhase(phase)
	conditions := obj.GetConditions()
	meta.SetStatusCondition(&conditions, c)
	obj.SetConditions(conditions)
}

// withdrawBSL removes the Velero BSL and the copied Secret of the
// NonAdminBackupStorageLocation operation op (nothing when there are none):
// a location that lost its approval or now breaks a rule stops being used by
// Velero at once. The guarded client narrows each DeleteAllOf to op's label.
func withdrawBSL(ctx context.Context, op *engine.Operation) error {
	for _, obj := range []client.Object{&velerov1.BackupStorageLocation{}, &corev1.Secret{}} {
		err := op.Client.DeleteAllOf(ctx, obj, client.InNamespace(op.OADPNamespace),
			client.MatchingLabels{v1alpha1.NabslOriginNACUUIDLabel: op.UUID})
		if err != nil {
			return fmt.Errorf("removing the %T of operation %s: %w", obj, op.UUID, err)
		}
	}
	return nil
}

// Verbs of the safety rule's refusals for what WaitFor and SyncStatus do
// with an object they read by a name a blueprint templates.
const (
	waitVerb   = "wait for"
	mirrorVerb = "mirror"
)

// linkedUUIDs returns the NACUUIDs, besides op.UUID, of the Velero objects
// op's NAC object is linked to: for a NonAdminBackup, the one recorded in
// status.veleroBackup.nacuuid (written only by nacflow: the Backup it
// created, or the one AdoptVeleroBackup checked was made for its
// namespace).
func linkedUUIDs(op *engine.Operation) []string {
	if nab, ok := op.Object.(*v1alpha1.NonAdminBackup); ok && nab.Status.VeleroBackup != nil && nab.Status.VeleroBackup.NACUUID != "" {
		return []string{nab.Status.VeleroBackup.NACUUID}
	}
	return nil
}

// read reads namespace/name into obj with r. found is false when there is
// no such object (an answer, not a failure); err is any other read error,
// naming the object (the API server's: retryable).
func read(ctx context.Context, r client.Reader, namespace, name string, obj client.Object) (found bool, err error) {
	err = r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s %s/%s: %w", reflect.TypeOf(obj).Elem().Name(), namespace, name, err)
	}
	return true, nil
}

// lookup is read through op's cache, then straight from the API server when
// the cache does not have the object: the cache lags a create, and an object
// applied together with the one that names it (a NonAdminBackup with its
// restore, a location with its backup) may not be in it yet.
func lookup(ctx context.Context, op *engine.Operation, namespace, name string, obj client.Object) (found bool, err error) {
	if found, err = read(ctx, op.Client, namespace, name, obj); found || err != nil {
		return found, err
	}
	return read(ctx, op.APIReader, namespace, name, obj)
}

// listLabelled lists into list, with r, the objects of the OADP namespace
// whose label key has value: an operation's objects by their origin
// NACUUID label, or Velero's by its own labels. The error is r's.
func listLabelled(ctx context.Context, r client.Reader, op *engine.Operation, list client.ObjectList, key, value string) error {
	return r.List(ctx, list, client.InNamespace(op.OADPNamespace), client.MatchingLabels{key: value})
}

// deleteOwn deletes obj, one of op's own objects; one already gone is fine.
func deleteOwn(ctx context.Context, op *engine.Operation, obj client.Object) error {
	if err := client.IgnoreNotFound(op.Client.Delete(ctx, obj)); err != nil {
		return fmt.Errorf("deleting %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// syncedReason returns the reason of a location's SecretSynced or
// BackupStorageLocationSynced condition (conditionType) after
// createOrAdoptOwn's verb: created for "Created", updated for "Updated",
// and for an object adopted unchanged the reason the condition holds while
// True (a later run changes nothing), else created (OADP NAC's reasons tell
// only created and updated).
func syncedReason(obj v1alpha1.Object, conditionType, verb, created, updated string) string {
	switch verb {
	case "Created":
		return created
	case "Updated":
		return updated
	}
	if c := meta.FindStatusCondition(obj.GetConditions(), conditionType); c != nil && c.Status == metav1.ConditionTrue && (c.Reason == created || c.Reason == updated) {
		return c.Reason
	}
	return created
}
