package blueprints

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// Validate returns every error of bp against the phase registry
// reg: an unknown kind, an unparsable namespaceSelector, actions its kind
// does not run, and each action's engine.CheckAction errors (unknown funcs,
// arg names and literal values — enforce included —, templates, phase
// references, duplicate names), and the safety phases of the built-in
// action an action drops without naming them in its safetyOptOut
// (SafetyErrors), each prefixed with where it is. It is pure;
// `nac blueprint validate` runs the same check offline.
func Validate(bp *v1alpha1.Blueprint, reg *engine.Registry) []string {
	var errs []string
	known := KnownActions(bp.Spec.Kind)
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
		if known != nil && !Contains(known, name) {
			errs = append(errs, fmt.Sprintf("spec.actions.%s: %s has no action %q (its actions: %s)", name, bp.Spec.Kind, name, strings.Join(known, ", ")))
			continue
		}
		a := bp.Spec.Actions[name]
		for _, err := range engine.CheckAction(engine.ResolvedAction{Name: name, Blueprint: bp.Name, Spec: &a}, reg) {
			errs = append(errs, fmt.Sprintf("spec.actions.%s.%v", name, err))
		}
		for _, err := range SafetyErrors(bp.Spec.Kind, name, &a) {
			errs = append(errs, fmt.Sprintf("spec.actions.%s.%s", name, err))
		}
	}
	return errs
}
