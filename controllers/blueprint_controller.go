package controllers

import (
	"context"
	"fmt"
	"sort"
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
	"github.com/nacflow/nacflow/internal/patch"
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

// ValidateBlueprint returns every error of bp against the phase registry
// reg: an unknown kind, an unparsable namespaceSelector, actions its kind
// does not run, and each action's engine.CheckAction errors (unknown funcs,
// arg names and literal values — enforce included —, templates, phase
// references, duplicate names), and the safety phases of the built-in
// action an action drops without naming them in its safetyOptOut
// (blueprints.SafetyErrors), each prefixed with where it is. It is pure;
// `nac blueprint validate` runs the same check offline.
func ValidateBlueprint(bp *v1alpha1.Blueprint, reg *engine.Registry) []string {
	var errs []string
	known := blueprints.KnownActions(bp.Spec.Kind)
	if known == nil {
		errs = append(errs, fmt.Sprintf("spec.kind: %q is not a NAC kind (%s)", bp.Spec.Kind, v1alpha1.KindNames()))
	}
	if sel := bp.Spec.NamespaceSelector; sel != nil {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, fmt.Sprintf("spec.namespaceSelector: %v", err))
		}
	}
	names := make([]string, 0, len(bp.Spec.Actions))
	for n := range bp.Spec.Actions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if known != nil && !blueprints.Contains(known, name) {
			errs = append(errs, fmt.Sprintf("spec.actions.%s: %s has no action %q (its actions: %s)", name, bp.Spec.Kind, name, strings.Join(known, ", ")))
			continue
		}
		a := bp.Spec.Actions[name]
		for _, err := range engine.CheckAction(engine.ResolvedAction{Name: name, Blueprint: bp.Name, Spec: &a}, reg) {
			errs = append(errs, fmt.Sprintf("spec.actions.%s.%v", name, err))
		}
		for _, err := range blueprints.SafetyErrors(bp.Spec.Kind, name, &a) {
			errs = append(errs, fmt.Sprintf("spec.actions.%s.%s", name, err))
		}
	}
	return errs
}

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
	errs := ValidateBlueprint(bp, r.Registry)
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
		cond.Message = bounded(fmt.Sprintf("%d error(s): %s", len(errs), strings.Join(errs, "; ")), 32*1024)
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

// bounded cuts s to n bytes.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
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
