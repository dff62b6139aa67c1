package engine_test

import (
	"context"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

type CompileSuite struct{}

var _ = Suite(&CompileSuite{})

// testRegistry has two functions, Echo and Wait, taking {value: string}.
func testRegistry(c *C) *engine.Registry {
	reg, err := engine.NewRegistry(&namedFunc{name: "Echo"}, &namedFunc{name: "Wait"})
	c.Assert(err, IsNil)
	return reg
}

// namedFunc is a do-nothing phase function with args {value: string}.
type namedFunc struct{ name string }

func (f *namedFunc) Name() string { return f.name }
func (f *namedFunc) NewArgs() any { return &stepArgs{} }
func (f *namedFunc) Run(context.Context, *engine.Operation, any) (engine.Result, error) {
	return engine.Done("", nil), nil
}

func (s *CompileSuite) TestCompileErrors(c *C) {
	for _, tc := range []struct {
		about string
		spec  *v1alpha1.BlueprintAction
		err   string
	}{
		{"nil action", nil, `blueprint "bp" action "a": no phases`},
		{"no phases", &v1alpha1.BlueprintAction{}, `blueprint "bp" action "a": no phases`},
		{"unknown templated arg", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo", Args: args(c, map[string]any{"valeu": "{{ .Name }}"})}}},
			`(?s).*phases\[0\] \(a\): Echo takes no arg "valeu" \(it takes: count, value\).*`},
		{"reference to a missing phase", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo", Args: args(c, map[string]any{"value": "{{ .Phases.nope.Output.x }}"})}}},
			`(?s).*phases\[0\] \(a\): args.value refers to phase "nope", which does not exist.*`},
		{"reference to a later phase", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{
			{Name: "a", Func: "Echo", Args: args(c, map[string]any{"value": "{{ .Phases.b.Output.x }}"})}, {Name: "b", Func: "Echo"}}},
			`(?s).*phases\[0\] \(a\): args.value refers to phase "b", which does not come before it.*`},
		{"empty name", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Func: "Echo"}}}, `(?s).*phases\[0\]: name is empty.*`},
		{"duplicate name", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo"}, {Name: "a", Func: "Echo"}}},
			`(?s).*phases\[1\]: phase name "a" is used twice.*`},
		{"defer reuses a name", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo"}}, DeferPhase: &v1alpha1.BlueprintPhase{Name: "a", Func: "Echo"}},
			`(?s).*deferPhase: phase name "a" is used twice.*`},
		{"unknown func", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Nope"}}}, `(?s).*phases\[0\] \(a\): unknown func "Nope".*`},
		{"bad template", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo", Args: args(c, map[string]any{"value": "{{ .Name "})}}},
			`(?s).*phases\[0\] \(a\): args.value: template: .*`},
		{"unknown literal arg", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo", Args: args(c, map[string]any{"valeu": "x"})}}},
			`(?s).*phases\[0\] \(a\): Echo takes no arg "valeu".*`},
		{"wrongly typed literal arg", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo", Args: args(c, map[string]any{"value": 3})}}},
			`(?s).*phases\[0\] \(a\): Echo args: json: cannot unmarshal number.*`},
		{"disallowed func", &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo", Args: args(c, map[string]any{"value": `{{ env "HOME" }}`})}}},
			`(?s).*args.value: .*function "env" not defined.*`},
	} {
		_, err := engine.Compile(engine.ResolvedAction{Name: "a", Blueprint: "bp", Spec: tc.spec}, testRegistry(c), time.Now())
		c.Check(err, ErrorMatches, tc.err, Commentf(tc.about))
	}
}

func (s *CompileSuite) TestCompileSnapshotsAction(c *C) {
	spec := &v1alpha1.BlueprintAction{
		Phases:     []v1alpha1.BlueprintPhase{{Name: "one", Func: "Echo"}, {Name: "two", Func: "Wait"}},
		DeferPhase: &v1alpha1.BlueprintPhase{Name: "cleanup", Func: "Echo"},
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	plan, err := engine.Compile(engine.ResolvedAction{Name: "backup", Blueprint: "bp", BlueprintGeneration: "7", Spec: spec}, testRegistry(c), now)
	c.Assert(err, IsNil)
	c.Check(plan.Action, Equals, "backup")
	c.Check(plan.Blueprint, Equals, "bp")
	c.Check(plan.BlueprintGeneration, Equals, "7")
	c.Check(plan.State, Equals, v1alpha1.PlanPending)
	c.Check(plan.StartTime.Time.Equal(now), Equals, true)
	c.Assert(plan.Phases, HasLen, 2)
	c.Check(plan.Phases[0], DeepEquals, v1alpha1.PhaseStatus{Name: "one", Func: "Echo", State: v1alpha1.PhasePending})
	c.Check(plan.Phases[1].Name, Equals, "two")
	c.Check(plan.DeferPhase, DeepEquals, &v1alpha1.PhaseStatus{Name: "cleanup", Func: "Echo", State: v1alpha1.PhasePending})
	c.Check(plan.Spec, DeepEquals, spec)

	// The snapshot is a copy: editing the blueprint afterwards changes nothing.
	spec.Phases[0].Func = "Wait"
	c.Check(plan.Spec.Phases[0].Func, Equals, "Echo")
}

// A registry remembers the actions it found valid, by blueprint, generation
// and action, and uses that only for an equal action: an invalid action
// under the same name and generation (a Blueprint deleted and created
// again, say) is still refused, and the remembered action is a copy.
func (s *CompileSuite) TestCompileRemembersValidOnlyForEqual(c *C) {
	reg := testRegistry(c)
	valid := &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Echo", Args: args(c, map[string]any{"value": "x"})}}}
	p := engine.ResolvedAction{Name: "backup", Blueprint: "bp", BlueprintGeneration: "1", Spec: valid}
	for range 2 {
		_, err := engine.Compile(p, reg, time.Now())
		c.Assert(err, IsNil)
	}
	valid.Phases[0].Args = args(c, map[string]any{"value": 3}) // the caller's copy changes
	_, err := engine.Compile(p, reg, time.Now())
	c.Check(err, ErrorMatches, `(?s).*phases\[0\] \(a\): Echo args: json: cannot unmarshal number.*`)
	p.Spec = &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "a", Func: "Nope"}}}
	_, err = engine.Compile(p, reg, time.Now())
	c.Check(err, ErrorMatches, `(?s).*phases\[0\] \(a\): unknown func "Nope".*`)
}
