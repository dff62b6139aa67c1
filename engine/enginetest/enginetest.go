// Package enginetest runs test code as a phase function under the engine's
// guard, for tests of the safety rule and of the reference rules a registry
// is given. Only tests import it.
package enginetest

import (
	"context"
	"fmt"
	"regexp"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/engine"
)

// Probe is a phase function, called "Probe", that runs Do with the guarded
// operation it is given and declares Exceptions.
type Probe struct {
	Do         func(ctx context.Context, op *engine.Operation) error
	Exceptions []engine.Exception
}

// Name implements engine.Func.
func (*Probe) Name() string { return "Probe" }

// NewArgs implements engine.Func: Probe takes no args.
func (*Probe) NewArgs() any { return &struct{}{} }

// Run implements engine.Func: Do's error, and a Done result.
func (p *Probe) Run(ctx context.Context, op *engine.Operation, _ any) (engine.Result, error) {
	return engine.Done("", nil), p.Do(ctx, op)
}

// SafetyExceptions implements engine.Excepted.
func (p *Probe) SafetyExceptions() []engine.Exception { return p.Exceptions }

// RunGuarded runs p once, as phase "hostile" of op (its Object, UUID and
// OADPNamespace), with clients guarded over cl (which serves as both the
// cache and the API server) and refs (nil: none). It returns p's error, or
// NewGuardedRegistry's.
func RunGuarded(ctx context.Context, cl client.Client, refs engine.ReferenceRules, op engine.Operation, p *Probe) error {
	reg, err := engine.NewGuardedRegistry(cl, cl, refs, p)
	if err != nil {
		return err
	}
	fn, _ := reg.Get(p.Name())
	op.Phase = "hostile"
	_, err = fn.Run(ctx, &op, fn.NewArgs())
	return err
}

// Refusal returns nil when err is a terminal *engine.SafetyViolation whose
// whole message matches the regular expression msg; else an error saying
// what err is instead.
func Refusal(err error, msg string) error {
	switch {
	case err == nil:
		return fmt.Errorf("allowed, not refused with %q", msg)
	case !engine.IsSafetyViolation(err):
		return fmt.Errorf("not a safety violation: %w", err)
	case !engine.IsTerminal(err):
		return fmt.Errorf("not terminal: %w", err)
	}
	re, rerr := regexp.Compile("^(?:" + msg + ")$")
	if rerr != nil {
		return fmt.Errorf("message pattern %q: %w", msg, rerr)
	}
	if !re.MatchString(err.Error()) {
		return fmt.Errorf("message %q does not match %q", err.Error(), msg)
	}
	return nil
}
