package engine

import "context"

// Follow runs, once more and outside the plan, the phase of req.Object's
// recorded plan whose function is fn: for work that goes on after the plan
// has ended, such as taking the runs a schedule keeps making. The phase's
// args are rendered from the recorded plan as when it ran, and its function
// gets the same guarded clients; nothing is recorded in the plan and no
// event is made: what the function changes in the object's status is the
// caller's to persist. ok is false when the plan has no such phase (its
// blueprint left it out) or the object has no plan. err is the function's
// (Terminal for a bad render or args, as in a plan).
func (r *Runner) Follow(ctx context.Context, req Request, fn string) (res Result, ok bool, err error) {
	plan := req.Object.GetPlan()
	if plan == nil || plan.Spec == nil {
		return Result{}, false, nil
	}
	for _, spec := range plan.Spec.Phases {
		if spec.Func != fn {
			continue
		}
		op := &Operation{Object: req.Object, OADPNamespace: req.OADPNamespace, UUID: req.UUID, Phase: spec.Name, NamespaceLabels: req.NamespaceLabels}
		res, err = r.call(ctx, op, plan, spec)
		return res, true, err
	}
	return Result{}, false, nil
}
