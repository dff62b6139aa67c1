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

// Name implements engine.Func.
func (*MarkDeleting) Name() string { return "MarkDeleting" }

// NewArgs implements engine.Func.
func (*MarkDeleting) NewArgs() any { return &MarkDeletingArgs{} }

// Run implements engine.Func.
func (f *MarkDeleting) Run(_ context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*MarkDeletingArgs)
	if a.Message == "" {
		return engine.Result{}, engine.Terminalf("MarkDeleting: args.message is empty")
	}
	obj, ok := op.Object.(v1alpha1.Object)
	if !ok {
		return engine.Result{}, engine.Terminalf("MarkDeleting serves the NAC kinds, not %T", op.Object)
	}
	setPhaseAndCondition(obj, v1alpha1.NonAdminPhaseDeleting, metav1.Condition{
		Type: v1alpha1.ConditionDeleting, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonDeletionPending, Message: a.Message, ObservedGeneration: op.Object.GetGeneration(),
	})
	return engine.Done(a.Message, nil), nil
}
