package engine

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nacv1alpha1 "github.com/nacflow/nacflow/api/v1alpha1"
)

// PreviewPhase is one phase of a previewed plan.
type PreviewPhase struct {
	Name      string         `json:"name"`
	Func      string         `json:"func"`
	Timeout   string         `json:"timeout,omitempty"`
	OnTimeout string         `json:"onTimeout,omitempty"`
	Retries   int32          `json:"retries"`
	Args      map[string]any `json:"args,omitempty"`
}

// PreviewPlan is the plan an operation would run, rendered without running
// anything (`nac plan`).
type PreviewPlan struct {
	Object              string         `json:"object"`
	Action              string         `json:"action"`
	Blueprint           string         `json:"blueprint"`
	BlueprintGeneration string         `json:"blueprintGeneration"`
	BlueprintMessage    string         `json:"blueprintMessage,omitempty"`
	Deadline            string         `json:"deadline,omitempty"`
	Phases              []PreviewPhase `json:"phases"`
	DeferPhase          *PreviewPhase  `json:"deferPhase,omitempty"`
}

// Preview checks p against reg and renders each phase's args for req's
// object as Run would, but runs nothing. Outputs of earlier phases are not
// known yet: they render as "<phases.NAME.output.KEY>". Unset timeouts show
// waitTimeout (the controller's --wait-timeout), unset retries
// DefaultRetries. It returns CheckAction's errors, or the first render error.
func Preview(p ResolvedAction, req Request, reg *Registry, waitTimeout time.Duration, now time.Time) (*PreviewPlan, error) {
	if errs := CheckAction(p, reg); len(errs) > 0 {
		return nil, fmt.Errorf("blueprint %q action %q: %w", p.Blueprint, p.Name, errors.Join(errs...))
	}
	start := metav1.NewTime(now)
	plan := &nacv1alpha1.PlanStatus{StartTime: &start}
	op := &Operation{Object: req.Object, OADPNamespace: req.OADPNamespace, UUID: req.UUID, NamespaceLabels: req.NamespaceLabels}
	params, err := NewParams(op, plan)
	if err != nil {
		return nil, err
	}
	// Every output any phase refers to, as a placeholder.
	all := append(append([]nacv1alpha1.BlueprintPhase{}, p.Spec.Phases...), deferOf(p.Spec)...)
	for _, ph := range all {
		params.Phases[ph.Name] = PhaseParams{Output: map[string]string{}}
	}
	for _, ph := range all {
		for _, raw := range ph.Args {
			for _, m := range outputRef.FindAllStringSubmatch(string(raw.Raw), -1) {
				params.Phases[m[1]].Output[m[2]] = fmt.Sprintf("<phases.%s.output.%s>", m[1], m[2])
			}
		}
	}
	out := &PreviewPlan{
		Object: fmt.Sprintf("%s %s/%s", req.Object.GetObjectKind().GroupVersionKind().Kind, req.Object.GetNamespace(), req.Object.GetName()),
		Action: p.Name, Blueprint: p.Blueprint, BlueprintGeneration: p.BlueprintGeneration, BlueprintMessage: p.Message,
	}
	if p.Spec.Deadline != nil {
		out.Deadline = p.Spec.Deadline.Duration.String()
	}
	render := func(ph nacv1alpha1.BlueprintPhase) (PreviewPhase, error) {
		args, err := RenderArgs(ph.Args, params)
		if err != nil {
			return PreviewPhase{}, fmt.Errorf("phase %s: rendering %w", ph.Name, err)
		}
		pp := PreviewPhase{Name: ph.Name, Func: ph.Func, Args: args, Retries: DefaultRetries}
		if ph.Retries != nil {
			pp.Retries = *ph.Retries
		}
		fn, _ := reg.Get(ph.Func)
		d, documented := fn.(Documented)
		if (documented && d.Doc().Waits) || ph.Timeout != nil {
			pp.Timeout, pp.OnTimeout = waitTimeout.String(), string(nacv1alpha1.OnTimeoutFail)
			if ph.Timeout != nil {
				pp.Timeout = ph.Timeout.Duration.String()
			}
			if ph.OnTimeout != "" {
				pp.OnTimeout = string(ph.OnTimeout)
			}
		}
		return pp, nil
	}
	for _, ph := range p.Spec.Phases {
		pp, err := render(ph)
		if err != nil {
			return nil, err
		}
		out.Phases = append(out.Phases, pp)
	}
	if d := p.Spec.DeferPhase; d != nil {
		pp, err := render(*d)
		if err != nil {
			return nil, err
		}
		out.DeferPhase = &pp
	}
	return out, nil
}

func deferOf(a *nacv1alpha1.BlueprintAction) []nacv1alpha1.BlueprintPhase {
	if a.DeferPhase == nil {
		return nil
	}
	return []nacv1alpha1.BlueprintPhase{*a.DeferPhase}
}
