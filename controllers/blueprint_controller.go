package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/metrics"
	"github.com/nacflow/nacflow/internal/runtime/patch"
	"github.com/nacflow/nacflow/internal/text"
)

// Event reasons of the Blueprint controller.
const (
	EventBlueprintValid = "BlueprintValid"
	// EventBlueprintInvalid is also used on NAC objects whose blueprint
	// could not be used.
	EventBlueprintInvalid = "BlueprintInvalid"
)

// maxReportedErrors bounds the errors kept in a Blueprint's status.
const maxReportedErrors = 64

// BlueprintReconciler validates the Blueprints of the OADP namespace and
// reports the result as condition Valid (with every error) and an event on
// each change. A valid generation is also kept in status.lastValid, which
// operations keep using while a later edit is invalid.
type BlueprintReconciler struct {
	Client        client.Client
	Registry      *engine.Registry
	Recorder      record.EventRecorder
	OADPNamespace string
}

// +kubebuilder:rbac:groups=oadp.openshift.io,namespace=openshift-adp,resources=blueprints/status,verbs=get;update;patch

// Reconcile validates one Blueprint and patches its status.
func (r *BlueprintReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bp := &v1alpha1.Blueprint{}
	if err := r.Client.Get(ctx, req.NamespacedName, bp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := bp.DeepCopy()
	errs := blueprints.Validate(bp, r.Registry)
	wasValid := meta.IsStatusConditionTrue(bp.Status.Conditions, v1alpha1.ConditionValid)
	cond := metav1.Condition{Type: v1alpha1.ConditionValid, ObservedGeneration: bp.Generation}
	if len(errs) == 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonValidationSucceeded, "blueprint is valid"
		if out := blueprints.SafetyOptOuts(bp.Spec.Kind, bp.Spec.Actions); out != "" {
			// Said wherever the blueprint's validity is read, so that a
			// check left out on purpose is never left out silently.
			cond.Message += "; it leaves out safety phases on purpose (safetyOptOut): " + out
		}
		bp.Status.Errors = nil
		actions := map[string]v1alpha1.BlueprintAction{}
		for k, v := range bp.Spec.Actions {
			actions[k] = *v.DeepCopy()
		}
		bp.Status.LastValid = &v1alpha1.LastValidBlueprint{Generation: bp.Generation, Actions: actions}
	} else {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonValidationFailed
		cond.Message = text.Truncate(fmt.Sprintf("%d error(s): %s", len(errs), strings.Join(errs, "; ")), 32*1024)
		if len(errs) > maxReportedErrors {
			errs = errs[:maxReportedErrors]
		}
		bp.Status.Errors = errs
		if lv := bp.Status.LastValid; lv != nil && droppedSafety(bp.Spec.Kind, lv.Actions) {
			// A generation validated before safety phases were checked
			// (an older nacflow) is not a fallback either.
			bp.Status.LastValid = nil
		}
	}
	meta.SetStatusCondition(&bp.Status.Conditions, cond)
	bp.Status.ObservedGeneration = bp.Generation
	changed := !equality.Semantic.DeepEqual(before.Status, bp.Status)
	if err := patch.Status(ctx, r.Client, bp, before); err != nil {
		return ctrl.Result{}, err
	}
	if changed {
		switch {
		case len(errs) > 0:
			r.Recorder.Event(bp, corev1.EventTypeWarning, EventBlueprintInvalid, cond.Message)
			metrics.BlueprintValidationFailures.WithLabelValues(bp.Name).Inc()
		case !wasValid || before.Status.ObservedGeneration != bp.Generation:
			msg := fmt.Sprintf("Blueprint generation %d is valid", bp.Generation)
			if out := blueprints.SafetyOptOuts(bp.Spec.Kind, bp.Spec.Actions); out != "" {
				msg += "; it leaves out safety phases on purpose (safetyOptOut): " + out
			}
			r.Recorder.Event(bp, corev1.EventTypeNormal, EventBlueprintValid, msg)
		}
	}
	return ctrl.Result{}, nil
}

// droppedSafety reports whether one of actions drops a safety phase of the
// built-in action of kind it overrides (blueprints.SafetyErrors).
func droppedSafety(kind string, actions map[string]v1alpha1.BlueprintAction) bool {
	for name, a := range actions {
		if len(blueprints.SafetyErrors(kind, name, &a)) > 0 {
			return true
		}
	}
	return false
}

// SetupWithManager registers the reconciler for Blueprints of the OADP
// namespace (spec changes only).
func (r *BlueprintReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("blueprint").
		For(&v1alpha1.Blueprint{}, builder.WithPredicates(predicate.GenerationChangedPredicate{},
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.OADPNamespace }))).
		Complete(r)
}
