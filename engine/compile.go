package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nacv1alpha1 "github.com/nacflow/nacflow/api/v1alpha1"
)

// ResolvedAction is the blueprint action an operation runs, as the
// blueprint resolver chose it: which action of which blueprint generation,
// and its spec. Compile turns it into a plan.
type ResolvedAction struct {
	// Name is the blueprint action's name (backup, delete, ...).
	Name string
	// Blueprint is the blueprint's name.
	Blueprint string
	// BlueprintGeneration is its metadata.generation, or
	// nacv1alpha1.BuiltInGeneration for an embedded built-in.
	BlueprintGeneration string
	// Spec is the resolved action.
	Spec *nacv1alpha1.BlueprintAction
	// Message says why this blueprint was chosen, when that needs saying.
	Message string
}

// Compile checks a resolved blueprint action against the registry reg (see
// CheckAction) and turns it into a new plan status: the action snapshotted
// into spec, every phase pending, startTime now. It does no I/O. It
// returns CheckAction's errors, joined, when there are any. An action found
// valid is remembered in reg (by blueprint, generation and action; used
// only for an equal action), and not checked again.
func Compile(p ResolvedAction, reg *Registry, now time.Time) (*nacv1alpha1.PlanStatus, error) {
	if !reg.knownValid(p) {
		if errs := CheckAction(p, reg); len(errs) > 0 {
			return nil, fmt.Errorf("blueprint %q action %q: %w", p.Blueprint, p.Name, errors.Join(errs...))
		}
		reg.rememberValid(p)
	}
	start := metav1.NewTime(now)
	plan := &nacv1alpha1.PlanStatus{
		Action:              p.Name,
		Blueprint:           p.Blueprint,
		BlueprintGeneration: p.BlueprintGeneration,
		BlueprintMessage:    bounded(p.Message),
		State:               nacv1alpha1.PlanPending,
		StartTime:           &start,
		Spec:                p.Spec.DeepCopy(),
	}
	for _, ph := range p.Spec.Phases {
		plan.Phases = append(plan.Phases, nacv1alpha1.PhaseStatus{Name: ph.Name, Func: ph.Func, State: nacv1alpha1.PhasePending})
	}
	if d := p.Spec.DeferPhase; d != nil {
		plan.DeferPhase = &nacv1alpha1.PhaseStatus{Name: d.Name, Func: d.Func, State: nacv1alpha1.PhasePending}
	}
	return plan, nil
}

// phaseRef finds {{ .Phases.<name> }} references in a template, outputRef
// {{ .Phases.<name>.Output.<key> }} ones.
var (
	phaseRef  = regexp.MustCompile(`\.Phases\.([A-Za-z_][A-Za-z0-9_]*)`)
	outputRef = regexp.MustCompile(`\.Phases\.([A-Za-z_][A-Za-z0-9_]*)\.Output\.([A-Za-z_][A-Za-z0-9_]*)`)
)

// CheckAction returns every error of a blueprint action, each naming the
// phase and field: no phases; a phase name empty or used twice (the
// deferPhase included); a func not in reg; an arg whose template does not
// parse; an arg that refers to a phase that does not exist or comes later
// (.Phases.<name>; the deferPhase may refer to any phase); an arg name the
// func does not take; a literal (untemplated) arg value that fails the
// func's strict decode (a wrong type, a value the func refuses). Templated
// values are checked when the phase runs. It is pure.
func CheckAction(p ResolvedAction, reg *Registry) []error {
	if p.Spec == nil || len(p.Spec.Phases) == 0 {
		return []error{errors.New("no phases")}
	}
	var errs []error
	seen := map[string]bool{}
	earlier := map[string]bool{}
	all := map[string]bool{}
	for _, ph := range p.Spec.Phases {
		all[ph.Name] = true
	}
	check := func(where string, ph nacv1alpha1.BlueprintPhase, isDefer bool) {
		switch {
		case ph.Name == "":
			errs = append(errs, fmt.Errorf("%s: name is empty", where))
		case seen[ph.Name]:
			errs = append(errs, fmt.Errorf("%s: phase name %q is used twice", where, ph.Name))
		}
		seen[ph.Name] = true
		where = fmt.Sprintf("%s (%s)", where, ph.Name)
		fn, ok := reg.Get(ph.Func)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown func %q", where, ph.Func))
		}
		var known map[string]bool
		if ok {
			known = argNames(fn.NewArgs())
		}
		literal := map[string]any{}
		templated := false
		for _, key := range slices.Sorted(maps.Keys(ph.Args)) {
			raw := ph.Args[key].Raw
			if known != nil && !known[key] {
				errs = append(errs, fmt.Errorf("%s: %s takes no arg %q (it takes: %s)", where, ph.Func, key, strings.Join(slices.Sorted(maps.Keys(known)), ", ")))
				continue
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				errs = append(errs, fmt.Errorf("%s: args.%s: %w", where, key, err))
				continue
			}
			if err := parseTemplates(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: args.%s: %w", where, key, err))
				continue
			}
			if bytes.Contains(raw, []byte("{{")) {
				templated = true
			} else {
				literal[key] = json.RawMessage(raw)
			}
			for _, m := range phaseRef.FindAllStringSubmatch(string(raw), -1) {
				switch ref := m[1]; {
				case !all[ref]:
					errs = append(errs, fmt.Errorf("%s: args.%s refers to phase %q, which does not exist", where, key, ref))
				case !isDefer && !earlier[ref]:
					errs = append(errs, fmt.Errorf("%s: args.%s refers to phase %q, which does not come before it", where, key, ref))
				}
			}
		}
		if ok {
			// Values checks (ArgsValidator) need every arg: only when none is
			// templated; the rest is checked when the phase runs.
			if err := decodeArgs(literal, fn.NewArgs(), !templated); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s %w", where, ph.Func, err))
			}
		}
		earlier[ph.Name] = true
	}
	for i, ph := range p.Spec.Phases {
		check(fmt.Sprintf("phases[%d]", i), ph, false)
	}
	if p.Spec.DeferPhase != nil {
		check("deferPhase", *p.Spec.DeferPhase, true)
	}
	return errs
}

// argNames returns the JSON names of the fields of args, a pointer to a
// func's argument struct.
func argNames(args any) map[string]bool {
	names := map[string]bool{}
	t := reflect.TypeOf(args)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return names
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && f.Anonymous:
			// An embedded struct's fields are promoted (encoding/json).
			for n := range argNames(reflect.New(f.Type).Interface()) {
				names[n] = true
			}
		case name != "" && name != "-":
			names[name] = true
		}
	}
	return names
}
