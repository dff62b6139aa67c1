package blueprints

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Resolution is the blueprint action an operation will run.
type Resolution struct {
	// Blueprint is the name of the blueprint the action came from.
	Blueprint string
	// Generation is the generation used, or v1alpha1.BuiltInGeneration.
	Generation string
	// Action is the resolved action.
	Action *v1alpha1.BlueprintAction
	// Message says why, when a more specific or newer blueprint was passed
	// over ("" otherwise).
	Message string
}

// Resolver finds the blueprint action for an operation.
//
// Candidates are the Blueprints of the OADP namespace that serve the kind:
// per-tenant ones (spec.namespaceSelector matching the tenant's Namespace
// labels), ordered by spec.priority (highest first) then name; then the
// override named like the built-in (no selector). The first candidate that
// has the action wins; with none, the built-in. A candidate is used at its
// current generation only once the Blueprint controller validated it
// (condition Valid=True for that generation); while an edit is invalid its
// last valid generation is used, and a candidate that never validated is
// passed over — each time saying so in Resolution.Message. So is a
// candidate whose action drops a safety phase of the built-in
// (SafetyErrors) without opting out of it.
type Resolver struct {
	// Reader reads Blueprints (the manager's cache).
	Reader client.Reader
	// Namespace is the OADP namespace, the only place blueprints are read.
	Namespace string
}

// Resolve returns the action called action for kind, whose built-in
// blueprint is named builtin, for a tenant whose Namespace has nsLabels. It
// returns an error when reading the blueprints fails, or when no candidate
// nor the built-in has the action.
func (r *Resolver) Resolve(ctx context.Context, builtin, kind, action string, nsLabels map[string]string) (Resolution, error) {
	list := &v1alpha1.BlueprintList{}
	// Read only: the cache's Blueprints, not copies of them (a resolve per
	// new operation); the action returned is copied.
	if err := r.Reader.List(ctx, list, client.InNamespace(r.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return Resolution{}, fmt.Errorf("listing blueprints in %s: %w", r.Namespace, err)
	}
	var notes []string
	for _, bp := range Candidates(list.Items, builtin, kind, nsLabels) {
		actions, generation, note := usable(&bp)
		if note != "" {
			notes = append(notes, note)
		}
		if a, ok := actions[action]; ok {
			// The Blueprint controller refuses such a generation; one it
			// validated before safety phases were checked (an older
			// nacflow, or before it reconciled after an upgrade) is passed
			// over the same way.
			if errs := SafetyErrors(kind, action, &a); len(errs) > 0 {
				notes = append(notes, fmt.Sprintf("Blueprint %s generation %s drops a safety phase of action %s: not used (%s)", bp.Name, generation, action, errs[0]))
				continue
			}
			return Resolution{Blueprint: bp.Name, Generation: generation, Action: a.DeepCopy(), Message: strings.Join(notes, "; ")}, nil
		}
	}
	res, err := BuiltInAction(builtin, action)
	res.Message = strings.Join(notes, "; ")
	return res, err
}

// Candidates returns, in order of precedence, the blueprints of bps that
// serve kind for a tenant whose Namespace has nsLabels (see Resolver). A
// blueprint with an unparsable selector serves nobody.
func Candidates(bps []v1alpha1.Blueprint, builtin, kind string, nsLabels map[string]string) []v1alpha1.Blueprint {
	var perTenant, override []v1alpha1.Blueprint
	for _, bp := range bps {
		if bp.Spec.Kind != kind {
			continue
		}
		if bp.Spec.NamespaceSelector == nil {
			if bp.Name == builtin {
				override = append(override, bp)
			}
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(bp.Spec.NamespaceSelector)
		if err == nil && sel.Matches(labels.Set(nsLabels)) {
			perTenant = append(perTenant, bp)
		}
	}
	sort.SliceStable(perTenant, func(i, j int) bool {
		if perTenant[i].Spec.Priority != perTenant[j].Spec.Priority {
			return perTenant[i].Spec.Priority > perTenant[j].Spec.Priority
		}
		return perTenant[i].Name < perTenant[j].Name
	})
	return append(perTenant, override...)
}

// usable returns the actions of bp that may run: the current generation's
// once validated, else the last valid generation's, else none; with a note
// when it is not the current generation.
func usable(bp *v1alpha1.Blueprint) (map[string]v1alpha1.BlueprintAction, string, string) {
	valid := false
	for _, c := range bp.Status.Conditions {
		if c.Type == v1alpha1.ConditionValid && c.Status == metav1.ConditionTrue && c.ObservedGeneration == bp.Generation {
			valid = true
		}
	}
	switch {
	case valid:
		return bp.Spec.Actions, strconv.FormatInt(bp.Generation, 10), ""
	case bp.Status.LastValid != nil:
		return bp.Status.LastValid.Actions, strconv.FormatInt(bp.Status.LastValid.Generation, 10),
			fmt.Sprintf("Blueprint %s generation %d is not valid; using its last valid generation %d", bp.Name, bp.Generation, bp.Status.LastValid.Generation)
	default:
		return nil, "", fmt.Sprintf("Blueprint %s generation %d is not valid and never was: not used", bp.Name, bp.Generation)
	}
}

// BuiltInAction returns the action called action of the built-in blueprint
// name, or an error when there is no such built-in or action.
func BuiltInAction(name, action string) (Resolution, error) {
	bp, err := parsedBuiltIn(name)
	if err != nil {
		return Resolution{}, err
	}
	a, err := Action(bp, action)
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Blueprint: bp.Name, Generation: v1alpha1.BuiltInGeneration, Action: a.DeepCopy()}, nil
}

// KnownActions returns the actions the controllers run for a NAC kind,
// sorted (nil for an unknown kind): the kind registry's
// (v1alpha1.Kind.Actions).
func KnownActions(kind string) []string {
	k, ok := v1alpha1.KindNamed(kind)
	if !ok {
		return nil
	}
	return slices.Clone(k.Actions)
}

// BuiltInFor returns the built-in blueprint name of a NAC kind ("" for an
// unknown kind): the kind registry's (v1alpha1.Kind.Blueprint).
func BuiltInFor(kind string) string {
	k, _ := v1alpha1.KindNamed(kind)
	return k.Blueprint
}

// Contains reports whether list holds s.
func Contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
