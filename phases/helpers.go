package phases

import (
	"context"
	"encoding/json"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// noArgs is the argument struct of functions that take none: any arg is
// rejected by the strict decode.
type noArgs struct{}

// asBackup returns the operation's NonAdminBackup, or a terminal error naming
// fn when a blueprint gave the function another kind.
func asBackup(fn string, op *engine.Operation) (*v1alpha1.NonAdminBackup, error) {
	nab, ok := op.Object.(*v1alpha1.NonAdminBackup)
	if !ok {
		return nil, engine.Terminalf("%s serves NonAdminBackup, not %T", fn, op.Object)
	}
	return nab, nil
}

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

// asRestore returns the operation's NonAdminRestore, or a terminal error
// naming fn when a blueprint gave the function another kind.
func asRestore(fn string, op *engine.Operation) (*v1alpha1.NonAdminRestore, error) {
	nar, ok := op.Object.(*v1alpha1.NonAdminRestore)
	if !ok {
		return nil, engine.Terminalf("%s serves NonAdminRestore, not %T", fn, op.Object)
	}
	return nar, nil
}

// asDownloadRequest returns the operation's NonAdminDownloadRequest, or a
// terminal error naming fn when a blueprint gave the function another kind.
func asDownloadRequest(fn string, op *engine.Operation) (*v1alpha1.NonAdminDownloadRequest, error) {
	nadr, ok := op.Object.(*v1alpha1.NonAdminDownloadRequest)
	if !ok {
		return nil, engine.Terminalf("%s serves NonAdminDownloadRequest, not %T", fn, op.Object)
	}
	return nadr, nil
}

// asBSL returns the operation's NonAdminBackupStorageLocation, or a terminal
// error naming fn when a blueprint gave the function another kind.
func asBSL(fn string, op *engine.Operation) (*v1alpha1.NonAdminBackupStorageLocation, error) {
	nabsl, ok := op.Object.(*v1alpha1.NonAdminBackupStorageLocation)
	if !ok {
		return nil, engine.Terminalf("%s serves NonAdminBackupStorageLocation, not %T", fn, op.Object)
	}
	return nabsl, nil
}

// nacStatus returns pointers to the phase and conditions of obj's status
// when obj is a NonAdminBackup, NonAdminRestore,
// NonAdminBackupStorageLocation or NonAdminDownloadRequest (OADP NAC's common
// status shape), and
// ok=false for any other object.
func nacStatus(obj engine.Object) (phase *v1alpha1.NonAdminPhase, conditions *[]metav1.Condition, ok bool) {
	switch o := obj.(type) {
	case *v1alpha1.NonAdminBackup:
		return &o.Status.Phase, &o.Status.Conditions, true
	case *v1alpha1.NonAdminRestore:
		return &o.Status.Phase, &o.Status.Conditions, true
	case *v1alpha1.NonAdminBackupStorageLocation:
		return &o.Status.Phase, &o.Status.Conditions, true
	case *v1alpha1.NonAdminDownloadRequest:
		return &o.Status.Phase, &o.Status.Conditions, true
	case *v1alpha1.NonAdminSchedule:
		return &o.Status.Phase, &o.Status.Conditions, true
	}
	return nil, nil, false
}

// refuse records a refusal on obj, a NonAdminBackup, NonAdminRestore or
// NonAdminBackupStorageLocation, the way OADP NAC does for every kind and
// whatever phase refuses: status.phase BackingOff and condition
// Accepted=False with reason and err's message (which names the field or
// label at fault). It returns err as a terminal error: the same input will
// never pass. Any other object only gets the terminal error.
func refuse(obj engine.Object, reason string, err error) error {
	phase, conditions, ok := nacStatus(obj)
	if !ok {
		return engine.Terminal(err)
	}
	*phase = v1alpha1.NonAdminPhaseBackingOff
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionFalse, Reason: reason,
		Message: err.Error(), ObservedGeneration: obj.GetGeneration(),
	})
	return engine.Terminal(err)
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
