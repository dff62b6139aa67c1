package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/events"
)

// decidedSpec says which spec field of a NAC kind nacflow reads once,
// where it recorded what it read, and the generation last reconciled
// (status.observedGeneration).
type decidedSpec[T v1alpha1.Object] func(T) (field string, spec any, recorded string, observed int64)

// backupSpecDecided: spec.backupSpec and status.specHash.
func backupSpecDecided(nab *v1alpha1.NonAdminBackup) (string, any, string, int64) {
	return "spec.backupSpec", nab.Spec.BackupSpec, nab.Status.SpecHash, nab.Status.ObservedGeneration
}

// restoreSpecDecided: spec.restoreSpec and status.specHash.
func restoreSpecDecided(nar *v1alpha1.NonAdminRestore) (string, any, string, int64) {
	return "spec.restoreSpec", nar.Spec.RestoreSpec, nar.Status.SpecHash, nar.Status.ObservedGeneration
}

// reportSpecChange sets obj's condition SpecChanged when its spec field
// hashes otherwise (v1alpha1.SpecHash) than what nacflow validated, and
// removes it when the field is back to that spec; a new report also goes
// to buffer as a Warning event SpecImmutable. Nothing else happens: the
// operation goes on with the spec it accepted (status.veleroBackup.spec,
// status.veleroRestore.spec). OADP's design reads a request's spec once;
// nacflow's CRDs no longer refuse the change itself, because OADP NAC's
// own updates rewrite the spec with Velero's zero values (same hash).
// Objects nacflow has not validated yet (no recorded hash) are left alone,
// and so are those whose generation was reconciled already: their spec is
// the one last looked at, so most reconciles hash nothing.
func reportSpecChange[T v1alpha1.Object](obj T, decided decidedSpec[T], buffer *events.Buffer) {
	field, spec, recorded, observed := decided(obj)
	if recorded == "" || observed == obj.GetGeneration() {
		return
	}
	conditions := obj.GetConditions()
	if v1alpha1.SpecHash(spec) == recorded {
		if meta.RemoveStatusCondition(&conditions, v1alpha1.ConditionSpecChanged) {
			obj.SetConditions(conditions)
		}
		return
	}
	k, _ := v1alpha1.KindOf(obj)
	kind := k.Kind
	msg := fmt.Sprintf("%s changed after it was validated and is not acted on: %s is immutable: create a new %s instead", field, field, kind)
	old := meta.FindStatusCondition(conditions, v1alpha1.ConditionSpecChanged)
	if old != nil && old.ObservedGeneration == obj.GetGeneration() {
		return
	}
	meta.SetStatusCondition(&conditions, metav1.Condition{Type: v1alpha1.ConditionSpecChanged, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonSpecImmutable, Message: msg, ObservedGeneration: obj.GetGeneration()})
	obj.SetConditions(conditions)
	buffer.Event(obj, corev1.EventTypeWarning, v1alpha1.ReasonSpecImmutable, msg)
}
