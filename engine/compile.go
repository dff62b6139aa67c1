package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nacv1alpha1 "github.com/nacflow/nacflow/api/v1alpha1"
)

// Plan describes the operation to compile: which action of which blueprint.
type Plan struct {
	// Action is the blueprint action's name (backup, delete, ...).
	Action string
	// Blueprint is the blueprint's name.
	Blueprint string
	// BlueprintGeneration is its metadata.generation, or
	// nacv1alpha1.BuiltInGeneration for an embedded built-in.
	BlueprintGeneration string
	// Spec is the resolved action.
	Spec *nacv1alpha1.BlueprintAction
}

// Compile checks a resolved blueprint action against the registry reg and
// turns it into a new plan status: the action snapshotted into spec, every
// phase pending, startTime now. It is pure (no I/O).
//
// It returns an error, naming the phase and field, when the action has no
// phases, a phase name is empty or used twice (the deferPhase included), a
// func is not in reg, an arg's template does not parse, or a phase whose args
// hold no template fails the func's strict decode (an unknown arg, a wrong
// type, a value the func refuses).
func Compile(p Plan, reg *Registry, now time.Time) (*nacv1alpha1.PlanStatus, error) {
	if p.Spec == nil || len(p.Spec.Phases) == 0 {
		return nil, fmt.Errorf("blueprint %q action %q has no phases", p.Blueprint, p.Action)
	}
	var errs []error
	seen := map[string]bool{}
	check := func(where string, ph nacv1alpha1.BlueprintPhase) {
		switch {
		case ph.Name == "":
			errs = append(errs, fmt.Errorf("%s: name is empty", where))
		case seen[ph.Name]:
			errs = append(errs, fmt.Errorf("%s: phase name %q is used twice", where, ph.Name))
		}
		seen[ph.Name] = true
		fn, ok := reg.Get(ph.Func)
		if !ok {
			errs = append(errs, fmt.Errorf("%s (%s): unknown func %q", where, ph.Name, ph.Func))
		}
		templated := false
		for _, key := range sortedKeys(ph.Args) {
			if bytes.Contains(ph.Args[key].Raw, []byte("{{")) {
				templated = true
			}
			var v any
			if err := json.Unmarshal(ph.Args[key].Raw, &v); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): args.%s: %w", where, ph.Name, key, err))
				continue
			}
			if err := parseTemplates(v); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): args.%s: %w", where, ph.Name, key, err))
			}
		}
		if ok && !templated {
			literal := make(map[string]any, len(ph.Args))
			for k, v := range ph.Args {
				literal[k] = json.RawMessage(v.Raw)
			}
			if err := DecodeArgs(literal, fn.NewArgs()); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): %s %w", where, ph.Name, ph.Func, err))
			}
		}
	}
	for i, ph := range p.Spec.Phases {
		check(fmt.Sprintf("phases[%d]", i), ph)
	}
	if p.Spec.DeferPhase != nil {
		check("deferPhase", *p.Spec.DeferPhase)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("blueprint %q action %q: %w", p.Blueprint, p.Action, errors.Join(errs...))
	}

	start := metav1.NewTime(now)
	plan := &nacv1alpha1.PlanStatus{
		Action:              p.Action,
		Blueprint:           p.Blueprint,
		BlueprintGeneration: p.BlueprintGeneration,
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
