package phases

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// MarkDeletingArgs are the args of MarkDeleting.
type MarkDeletingArgs struct {
	// Message is the Deleting condition's message: what deletion will do.
	Message string `json:"message" doc:"the Deleting condition's message"`
}

// MarkDeleting sets a NonAdminBackup's or NonAdminRestore's status.phase to Deleting and its
// condition Deleting=True/DeletionPending with args.message (OADP NAC's
// deletion status). It writes nothing outside the object's status.
type MarkDeleting struct{}

// Run implements phaseFunc.
func (f *MarkDeleting) Run(_ context.Context, op *engine.Operation, obj engine.Object, a *MarkDeletingArgs) (engine.Result, error) {
	if a.Message == "" {
		return engine.Result{}, engine.Terminalf("MarkDeleting: args.message is empty")
	}
	setPhaseAndCondition(obj, v1alpha1.NonAdminPhaseDeleting, metav1.Condition{
		Type: v1alpha1.ConditionDeleting, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonDeletionPending, Message: a.Message, ObservedGeneration: op.Object.GetGeneration(),
	})
	return engine.Done(a.Message, nil), nil
}

// Doc implements engine.Documented.
func (*MarkDeleting) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Sets status.phase Deleting and condition Deleting=True/DeletionPending with args.message.", Errors: "an empty message is terminal"}
}
