package phases

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// setCondition sets obj's status condition of type condType (one of the
// v1alpha1.Condition* types) to status, with reason and message, observed
// at obj's current generation: OADP NAC's condition shape, which every
// phase function writes (the transition time changes only with the status,
// meta.SetStatusCondition's rule).
func setCondition(obj v1alpha1.Object, condType string, status metav1.ConditionStatus, reason, message string) {
	conditions := obj.GetConditions()
	meta.SetStatusCondition(&conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration(),
	})
	obj.SetConditions(conditions)
}

// accept sets obj's condition Accepted=True with reason and message: the
// spec passed every rule of its validate phase.
func accept(obj v1alpha1.Object, reason, message string) {
	setCondition(obj, v1alpha1.ConditionAccepted, metav1.ConditionTrue, reason, message)
}
