package blueprints

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// SafetyFuncs returns the funcs of the phases the built-in blueprint of the
// NAC kind marks safety: true in its action called action, in phase order
// and without repeats; nil when the kind, the action or the marks are
// missing. The built-ins are the reference: an admin's marks count for
// nothing here.
func SafetyFuncs(kind, action string) []string {
	bp, err := parsedBuiltIn(BuiltInFor(kind))
	if err != nil {
		return nil
	}
	a, ok := bp.Spec.Actions[action]
	if !ok {
		return nil
	}
	var funcs []string
	for _, p := range a.Phases {
		if p.Safety && !Contains(funcs, p.Func) {
			funcs = append(funcs, p.Func)
		}
	}
	return funcs
}

// SafetyErrors returns why the action called name of an admin's Blueprint
// serving kind drops a safety phase of the built-in action it overrides,
// one message per problem, each starting with the field it is about
// relative to spec.actions.<name> ("phases: ...", "phases[4] (verify):
// ...", "safetyOptOut[0]: ..."); nil when it drops none. A safety phase is
// known by its func (SafetyFuncs), never by its name: renaming the phase
// keeps it, and a phase named like the built-in's that runs another func
// does not. It is kept when one of the action's phases (not its
// deferPhase, which runs after the operation's outcome is set) runs that
// func without onTimeout: continue (a timeout would complete the phase
// with the check not done). A func listed in a.SafetyOptOut may be left
// out; a listed func that is not a safety func of the built-in action is an
// error, so that a misspelt opt-out is not mistaken for one. It is pure.
func SafetyErrors(kind, name string, a *v1alpha1.BlueprintAction) []string {
	safety := SafetyFuncs(kind, name)
	var errs []string
	for i, f := range a.SafetyOptOut {
		if !Contains(safety, f) {
			which := "has none"
			if len(safety) > 0 {
				which = "has " + strings.Join(safety, ", ")
			}
			errs = append(errs, fmt.Sprintf("safetyOptOut[%d]: %q is not a safety phase func of the built-in %s action (it %s)", i, f, name, which))
		}
	}
	for _, f := range safety {
		if Contains(a.SafetyOptOut, f) {
			continue
		}
		kept, weakened := false, []string(nil)
		for i, p := range a.Phases {
			switch {
			case p.Func != f:
			case p.OnTimeout == v1alpha1.OnTimeoutContinue:
				weakened = append(weakened, fmt.Sprintf("phases[%d] (%s): safety phase %s may not set onTimeout: continue, which would skip the check on a timeout; remove it, or name %s in spec.actions.%s.safetyOptOut to leave the check out on purpose", i, p.Name, f, f, name))
			default:
				kept = true
			}
		}
		switch {
		case kept:
		case len(weakened) > 0:
			errs = append(errs, weakened...)
		default:
			errs = append(errs, fmt.Sprintf("phases: no phase runs the built-in %s action's safety phase %s (a phase is known by its func, not its name); keep it, or name %s in spec.actions.%s.safetyOptOut to leave the check out on purpose", name, f, f, name))
		}
	}
	return errs
}

// SafetyOptOuts describes the safety phases the actions leave out on
// purpose ("backup: VerifyBackupContents; restore: ValidateRestoreSpec",
// actions sorted), counting only funcs the built-in action marks; "" when
// none. The Blueprint controller puts it in the Valid condition's message.
func SafetyOptOuts(kind string, actions map[string]v1alpha1.BlueprintAction) string {
	names := make([]string, 0, len(actions))
	for n := range actions {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		safety := SafetyFuncs(kind, n)
		var out []string
		for _, f := range actions[n].SafetyOptOut {
			if Contains(safety, f) {
				out = append(out, f)
			}
		}
		if len(out) > 0 {
			parts = append(parts, n+": "+strings.Join(out, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
