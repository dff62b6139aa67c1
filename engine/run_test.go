package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	. "gopkg.in/check.v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// stepArgs are the args of the test function.
type stepArgs struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// behaviour scripts what the test function does in one phase on its n-th
// call (n from 1).
type behaviour func(n int, a *stepArgs) (engine.Result, error)

// stepFunc is a test phase function whose behaviour is scripted per phase.
// It counts its calls per phase.
type stepFunc struct {
	script map[string]behaviour
	calls  map[string]int
}

func (f *stepFunc) Name() string { return "Step" }

// KeepsMessage implements engine.MessageKeeper: a message that starts with
// "kept" stays in a compacted plan.
func (f *stepFunc) KeepsMessage(m string) bool { return strings.HasPrefix(m, "kept") }
func (f *stepFunc) NewArgs() any               { return &stepArgs{} }
func (f *stepFunc) Run(_ context.Context, op *engine.Operation, args any) (engine.Result, error) {
	f.calls[op.Phase]++
	if b, ok := f.script[op.Phase]; ok {
		return b(f.calls[op.Phase], args.(*stepArgs))
	}
	a := args.(*stepArgs)
	return engine.Done("did "+op.Phase, map[string]string{"value": a.Value}), nil
}

type RunSuite struct {
	fn       *stepFunc
	recorder *record.FakeRecorder
	runner   *engine.Runner
	now      time.Time
	nab      *v1alpha1.NonAdminBackup
}

var _ = Suite(&RunSuite{})

func (s *RunSuite) SetUpTest(c *C) {
	s.fn = &stepFunc{script: map[string]behaviour{}, calls: map[string]int{}}
	reg, err := engine.NewRegistry(s.fn)
	c.Assert(err, IsNil)
	s.recorder = record.NewFakeRecorder(100)
	s.now = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	s.runner = &engine.Runner{Registry: reg, Recorder: s.recorder, Now: func() time.Time { return s.now }}
	s.nab = &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nab", Namespace: "tenant"}}
}

// request returns a Request for an action with phases a, b, c (b reads a's
// output) and deferPhase d.
func (s *RunSuite) request(c *C, mutate func(*v1alpha1.BlueprintAction)) engine.Request {
	spec := &v1alpha1.BlueprintAction{
		Phases: []v1alpha1.BlueprintPhase{
			{Name: "a", Func: "Step", Args: args(c, map[string]any{"value": "from-a"})},
			{Name: "b", Func: "Step", Args: args(c, map[string]any{"value": "{{ .Phases.a.Output.value }}+b"})},
			{Name: "c", Func: "Step"},
		},
		DeferPhase: &v1alpha1.BlueprintPhase{Name: "d", Func: "Step"},
	}
	if mutate != nil {
		mutate(spec)
	}
	// The suite reads ended plans' whole record (outputs, attempts, the
	// spec Follow renders from): TestEndedPlanIsCompacted covers the default.
	return engine.Request{Object: s.nab, Action: engine.ResolvedAction{Name: "backup", Blueprint: "bp", Spec: spec}, UUID: "u", OADPNamespace: "oadp",
		KeepEndedPlan: true}
}

// An ended plan is cut to what a reader needs unless the caller keeps it:
// no spec, outputs or phase start times, single attempts as 0, and no
// message of a phase that simply completed unless its function keeps it
// (MessageKeeper); names, functions, states, completion times and the
// messages of failed and skipped phases stay. A failed plan too; Follow
// then finds nothing to follow.
func (s *RunSuite) TestEndedPlanIsCompacted(c *C) {
	for _, fail := range []bool{false, true} {
		s.nab.Status.Plan = nil
		if fail {
			s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) { return engine.Result{}, engine.Terminal(errors.New("no")) }
		}
		s.fn.script["a"] = func(int, *stepArgs) (engine.Result, error) {
			return engine.Done("kept: a note", map[string]string{"value": "v"}), nil
		}
		req := s.request(c, nil)
		req.KeepEndedPlan = false
		_, err := s.runner.Run(context.Background(), req)
		c.Assert(err, IsNil)
		plan := s.nab.Status.Plan
		c.Check(plan.Phase("a").Message, Equals, "kept: a note")
		c.Check(plan.DeferPhase.Message, Equals, "", Commentf("did d: a plain completion"))
		c.Check(plan.Compacted, Equals, true)
		c.Check(plan.Spec, IsNil)
		c.Check(plan.StartTime, NotNil)
		c.Check(plan.CompletionTime, NotNil)
		c.Check(plan.Phases, HasLen, 3)
		for _, ph := range append(plan.Phases, *plan.DeferPhase) {
			c.Check(ph.StartTime, IsNil, Commentf("%s", ph.Name))
			c.Check(ph.Output, IsNil, Commentf("%s", ph.Name))
			c.Check(ph.Attempts, Equals, int32(0), Commentf("%s", ph.Name))
			c.Check(ph.Func, Equals, "Step", Commentf("%s", ph.Name))
			if ph.State != v1alpha1.PhaseSkipped {
				c.Check(ph.CompletionTime, NotNil, Commentf("%s", ph.Name))
			}
		}
		if fail {
			c.Check(plan.State, Equals, v1alpha1.PlanFailed)
			c.Check(plan.Phase("b").Message, Matches, ".*no.*")
			c.Check(plan.Phase("c").State, Equals, v1alpha1.PhaseSkipped)
			c.Check(plan.Phase("c").Message, Not(Equals), "")
		} else {
			c.Check(plan.State, Equals, v1alpha1.PlanComplete)
			c.Check(plan.Phase("b").Message, Equals, "")
			c.Check(plan.Phase("c").Message, Equals, "")
		}
		_, ok, err := s.runner.Follow(context.Background(), req, "Step")
		c.Check(err, IsNil)
		c.Check(ok, Equals, false, Commentf("a compacted plan has no spec to follow"))
		// Ended, it is not run again.
		out, err := s.runner.Run(context.Background(), req)
		c.Check(err, IsNil)
		c.Check(out.Finished, Equals, true)
		c.Check(s.nab.Status.Plan, DeepEquals, plan)
		s.events()
	}
}

// TestPlainPlanKeepsItsSummary: a plan that completed with every phase
// plain (first attempt, no message kept) keeps no phase list; one phase
// with a kept message, a retry, or a failure keeps the whole list.
func (s *RunSuite) TestPlainPlanKeepsItsSummary(c *C) {
	for _, tc := range []struct {
		name  string
		a     func(int, *stepArgs) (engine.Result, error)
		whole bool
	}{
		{"plain", func(int, *stepArgs) (engine.Result, error) {
			return engine.Done("dropped", map[string]string{"value": "v"}), nil
		}, false},
		{"kept message", func(int, *stepArgs) (engine.Result, error) {
			return engine.Done("kept: a note", map[string]string{"value": "v"}), nil
		}, true},
		{"retried", func(n int, _ *stepArgs) (engine.Result, error) {
			if n == 1 {
				return engine.Result{}, errors.New("once")
			}
			return engine.Done("", map[string]string{"value": "v"}), nil
		}, true},
	} {
		s.nab.Status.Plan = nil
		s.fn.script["a"], s.fn.calls = tc.a, map[string]int{}
		req := s.request(c, func(a *v1alpha1.BlueprintAction) {
			one := int32(1)
			a.Phases[0].Retries = &one
		})
		req.KeepEndedPlan = false
		for range 3 {
			if out, err := s.runner.Run(context.Background(), req); err == nil && out.Finished {
				break
			}
		}
		plan := s.nab.Status.Plan
		c.Assert(plan.State, Equals, v1alpha1.PlanComplete, Commentf("%s", tc.name))
		c.Check(plan.Compacted, Equals, true, Commentf("%s", tc.name))
		c.Check(plan.StartTime, NotNil, Commentf("%s", tc.name))
		c.Check(plan.CompletionTime, NotNil, Commentf("%s", tc.name))
		c.Check(plan.Current, Not(Equals), "", Commentf("%s", tc.name))
		if tc.whole {
			c.Check(plan.Phases, HasLen, 3, Commentf("%s", tc.name))
			c.Check(plan.DeferPhase, NotNil, Commentf("%s", tc.name))
			c.Check(plan.IsSummary(), Equals, false, Commentf("%s", tc.name))
		} else {
			c.Check(plan.Phases, IsNil, Commentf("%s", tc.name))
			c.Check(plan.DeferPhase, IsNil, Commentf("%s", tc.name))
			c.Check(plan.IsSummary(), Equals, true, Commentf("%s", tc.name))
		}
		s.events()
	}
}

// events drains the recorded events as "Type Reason" strings.
func (s *RunSuite) events() []string {
	var out []string
	for {
		select {
		case e := <-s.recorder.Events:
			f := strings.Fields(e)
			out = append(out, f[0]+" "+f[1])
		default:
			return out
		}
	}
}

func (s *RunSuite) states() []v1alpha1.PhaseState {
	var out []v1alpha1.PhaseState
	for _, p := range s.nab.Status.Plan.Phases {
		out = append(out, p.State)
	}
	return append(out, s.nab.Status.Plan.DeferPhase.State)
}

func (s *RunSuite) TestRunsToCompletionPassingOutputs(c *C) {
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out, DeepEquals, engine.Outcome{Finished: true})
	plan := s.nab.Status.Plan
	c.Check(plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(s.states(), DeepEquals, []v1alpha1.PhaseState{"complete", "complete", "complete", "complete"})
	c.Check(plan.Phase("b").Output, DeepEquals, map[string]string{"value": "from-a+b"})
	c.Check(plan.Phase("a").Attempts, Equals, int32(1))
	c.Check(plan.CompletionTime, NotNil)
	c.Check(plan.Current, Equals, "d: complete")
	c.Check(s.events(), DeepEquals, []string{
		"Normal StartedAction",
		"Normal EndedPhase",
		"Normal EndedPhase",
		"Normal EndedPhase",
		"Normal EndedDeferPhase",
		"Normal EndedAction",
	})

	// A finished plan is never run again.
	out, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.fn.calls, DeepEquals, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1})
	c.Check(s.events(), HasLen, 0)
}

func (s *RunSuite) TestResumeAfterRestart(c *C) {
	ready := false
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) {
		if !ready {
			return engine.Wait("not ready", time.Minute), nil
		}
		return engine.Done("ready", nil), nil
	}
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.RequeueAfter, Equals, time.Minute)
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanRunning)
	c.Check(s.nab.Status.Plan.Phase("b").State, Equals, v1alpha1.PhaseWaiting)
	c.Check(s.nab.Status.Plan.Phase("b").Message, Equals, "not ready")
	c.Check(s.nab.Status.Plan.Current, Equals, "b: waiting")

	// A restart: a new runner (and function) starts from the recorded status
	// only, as a new controller process reading the object would.
	persisted := s.nab.DeepCopy()
	script := s.fn.script
	s.SetUpTest(c)
	s.fn.script = script
	s.nab = persisted
	ready = true
	out, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.fn.calls, DeepEquals, map[string]int{"b": 1, "c": 1, "d": 1}, Commentf("a must not run again"))
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanComplete)
	// No second StartedAction for the resumed plan; one event per phase.
	c.Check(s.events(), DeepEquals, []string{
		"Normal EndedPhase",
		"Normal EndedPhase",
		"Normal EndedDeferPhase",
		"Normal EndedAction",
	})
}

func (s *RunSuite) TestPhaseWaitingOncePerWait(c *C) {
	s.fn.script["a"] = func(n int, _ *stepArgs) (engine.Result, error) {
		return engine.Wait("poll", time.Second), nil
	}
	for range 3 {
		_, err := s.runner.Run(context.Background(), s.request(c, nil))
		c.Assert(err, IsNil)
		s.now = s.now.Add(time.Second)
	}
	c.Check(s.fn.calls["a"], Equals, 3)
	c.Check(s.events(), DeepEquals, []string{"Normal StartedAction", "Normal PhaseWaiting"})
}

// A waiting phase may record its progress as output (a place in a queue);
// a wait without output keeps what was recorded; completion replaces it.
func (s *RunSuite) TestWaitingPhaseRecordsProgress(c *C) {
	s.fn.script["a"] = func(n int, _ *stepArgs) (engine.Result, error) {
		switch n {
		case 1:
			return engine.Result{Wait: true, Message: "4th", Output: map[string]string{"position": "4"}}, nil
		case 2:
			return engine.Wait("still 4th", time.Second), nil
		}
		return engine.Done("its turn", map[string]string{"value": "x"}), nil
	}
	want := []map[string]string{{"position": "4"}, {"position": "4"}, {"value": "x"}}
	for i := range 3 {
		_, err := s.runner.Run(context.Background(), s.request(c, nil))
		c.Assert(err, IsNil)
		c.Check(s.nab.Status.Plan.Phase("a").Output, DeepEquals, want[i], Commentf("run %d", i+1))
	}
	c.Check(s.nab.Status.Plan.Phase("b").Output, DeepEquals, map[string]string{"value": "x+b"})
}

func (s *RunSuite) TestDeferPhaseRunsAfterFailure(c *C) {
	s.fn.script["a"] = func(int, *stepArgs) (engine.Result, error) {
		return engine.Result{}, engine.Terminalf("spec.x is invalid")
	}
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	plan := s.nab.Status.Plan
	c.Check(plan.State, Equals, v1alpha1.PlanFailed)
	c.Check(s.states(), DeepEquals, []v1alpha1.PhaseState{"failed", "skipped", "skipped", "complete"})
	c.Check(plan.Phase("a").Message, Equals, "spec.x is invalid")
	c.Check(plan.Phase("a").Attempts, Equals, int32(1))
	c.Check(s.fn.calls, DeepEquals, map[string]int{"a": 1, "d": 1})
	c.Check(s.events(), DeepEquals, []string{
		"Normal StartedAction", "Warning PhaseFailed",
		"Normal EndedDeferPhase", "Warning ActionFailed",
	})
}

func (s *RunSuite) TestRetryableErrorsBackOffThenFail(c *C) {
	s.fn.script["a"] = func(int, *stepArgs) (engine.Result, error) {
		return engine.Result{}, errors.New("apiserver unavailable")
	}
	req := s.request(c, func(a *v1alpha1.BlueprintAction) {
		two := int32(2)
		a.Phases[0].Retries = &two
	})
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := s.runner.Run(context.Background(), req)
		c.Assert(err, ErrorMatches, "phase a: apiserver unavailable")
		c.Check(engine.IsTerminal(err), Equals, false)
		c.Check(s.nab.Status.Plan.Phase("a").State, Equals, v1alpha1.PhaseRunning)
		c.Check(s.nab.Status.Plan.Phase("a").Attempts, Equals, int32(attempt))
	}
	out, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.nab.Status.Plan.Phase("a").State, Equals, v1alpha1.PhaseFailed)
	c.Check(s.nab.Status.Plan.Phase("a").Message, Equals, "failed after 3 attempts: apiserver unavailable")
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanFailed)
}

func (s *RunSuite) TestRetryableErrorThenSuccess(c *C) {
	s.fn.script["a"] = func(n int, _ *stepArgs) (engine.Result, error) {
		if n == 1 {
			return engine.Result{}, errors.New("conflict")
		}
		return engine.Done("ok", map[string]string{"value": "v"}), nil
	}
	_, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, NotNil)
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.nab.Status.Plan.Phase("a").Attempts, Equals, int32(2))
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanComplete)
}

func (s *RunSuite) waitForever(c *C, onTimeout v1alpha1.OnTimeout) engine.Request {
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) { return engine.Wait("velero busy", time.Hour), nil }
	return s.request(c, func(a *v1alpha1.BlueprintAction) {
		a.Phases[1].Args = nil
		a.Phases[1].Timeout = &metav1.Duration{Duration: 5 * time.Minute}
		a.Phases[1].OnTimeout = onTimeout
	})
}

func (s *RunSuite) TestWaitTimeoutFails(c *C) {
	req := s.waitForever(c, v1alpha1.OnTimeoutFail)
	out, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	// The recheck is capped by the time left before the timeout.
	c.Check(out.RequeueAfter, Equals, 5*time.Minute)
	s.now = s.now.Add(5 * time.Minute)
	out, err = s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.states(), DeepEquals, []v1alpha1.PhaseState{"complete", "failed", "skipped", "complete"})
	c.Check(s.nab.Status.Plan.Phase("b").Message, Equals, "timed out after 5m0s: velero busy")
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanFailed)
}

func (s *RunSuite) TestWaitTimeoutContinues(c *C) {
	req := s.waitForever(c, v1alpha1.OnTimeoutContinue)
	_, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	s.now = s.now.Add(6 * time.Minute)
	out, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.states(), DeepEquals, []v1alpha1.PhaseState{"complete", "complete", "complete", "complete"})
	c.Check(s.nab.Status.Plan.Phase("b").Message, Equals, "timed out after 5m0s: velero busy; continued (onTimeout: continue)")
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(s.events(), DeepEquals, []string{
		"Normal StartedAction", "Normal EndedPhase",
		"Normal PhaseWaiting", "Warning PhaseTimedOut", "Normal EndedPhase",
		"Normal EndedPhase",
		"Normal EndedDeferPhase", "Normal EndedAction",
	})
}

func (s *RunSuite) TestDefaultWaitTimeout(c *C) {
	s.runner.WaitTimeout = 2 * time.Minute
	s.fn.script["a"] = func(int, *stepArgs) (engine.Result, error) { return engine.Wait("x", time.Hour), nil }
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.RequeueAfter, Equals, 2*time.Minute)
	s.now = s.now.Add(2 * time.Minute)
	_, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.Phase("a").Message, Equals, "timed out after 2m0s: x")
}

func (s *RunSuite) TestRenderErrorIsTerminal(c *C) {
	req := s.request(c, func(a *v1alpha1.BlueprintAction) {
		a.Phases[2].Args = args(c, map[string]any{"value": "{{ .Phases.a.Output.missing }}"})
	})
	out, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.nab.Status.Plan.Phase("c").State, Equals, v1alpha1.PhaseFailed)
	c.Check(s.nab.Status.Plan.Phase("c").Message, Matches, `rendering args.value: .*map has no entry for key "missing".*`)
	c.Check(s.fn.calls["c"], Equals, 0)
}

// TestStrictArgDecodeIsTerminal: templated values are decoded only once
// rendered; a wrongly typed one fails the phase (literal ones fail Compile).
func (s *RunSuite) TestStrictArgDecodeIsTerminal(c *C) {
	req := s.request(c, func(a *v1alpha1.BlueprintAction) {
		a.Phases[0].Args = args(c, map[string]any{"value": "x", "count": "{{ .Name }}"})
	})
	_, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.Phase("a").Message, Matches, `Step args: json: cannot unmarshal string into Go struct field stepArgs.count of type int`)
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanFailed)
}

func (s *RunSuite) TestBrokenBlueprintIsNotStarted(c *C) {
	req := s.request(c, func(a *v1alpha1.BlueprintAction) { a.Phases[0].Func = "Missing" })
	_, err := s.runner.Run(context.Background(), req)
	c.Check(engine.IsTerminal(err), Equals, true)
	c.Check(err, ErrorMatches, `(?s).*unknown func "Missing".*`)
	c.Check(s.nab.Status.Plan, IsNil)
	c.Check(s.events(), HasLen, 0)
}

func (s *RunSuite) TestRegistryRejectsDuplicates(c *C) {
	_, err := engine.NewRegistry(&stepFunc{}, &stepFunc{})
	c.Check(err, ErrorMatches, `phase function "Step" registered twice`)
}

// An API server that cannot answer (conflicts, 503, 429, 500, timeouts,
// refused connections) is not the phase's failure: more such errors than
// the phase has retries still end in success once the server answers, with
// no attempt used and no event.
func (s *RunSuite) TestTransientAPIErrorsDoNotUseRetries(c *C) {
	gr := schema.GroupResource{Resource: "backups"}
	transient := []error{
		apierrors.NewConflict(gr, "x", errors.New("changed")),
		apierrors.NewServiceUnavailable("restarting"),
		apierrors.NewTooManyRequests("slow down", 1),
		apierrors.NewInternalError(errors.New("etcdserver: leader changed")),
		apierrors.NewServerTimeout(gr, "create", 1),
		fmt.Errorf("creating Velero Backup: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}),
	}
	s.fn.script["a"] = func(n int, _ *stepArgs) (engine.Result, error) {
		if n <= len(transient) {
			return engine.Result{}, transient[n-1]
		}
		return engine.Done("ok", nil), nil
	}
	for i, want := range transient {
		_, err := s.runner.Run(context.Background(), s.request(c, nil))
		c.Assert(err, NotNil, Commentf("call %d", i+1))
		c.Check(errors.Is(err, want) || err.Error() == "phase a: "+want.Error(), Equals, true, Commentf("%v", err))
		c.Check(engine.IsTransient(err), Equals, true, Commentf("%v", err))
		c.Check(s.nab.Status.Plan.Phase("a").Attempts, Equals, int32(0))
		c.Check(s.nab.Status.Plan.Phase("a").Message, Matches, "the API server could not answer, retrying: .*")
	}
	_, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.Phase("a").State, Equals, v1alpha1.PhaseComplete)
	c.Check(s.nab.Status.Plan.Phase("a").Attempts, Equals, int32(1))
	for _, e := range s.events() {
		c.Check(e, Not(Equals), "Warning PhaseRetrying")
	}
	c.Check(engine.IsTransient(errors.New("admission webhook denied the request")), Equals, false)
	c.Check(engine.IsTransient(apierrors.NewForbidden(gr, "x", errors.New("no"))), Equals, false)
	c.Check(engine.IsTransient(engine.Terminal(apierrors.NewServiceUnavailable("x"))), Equals, false)
}

func (s *RunSuite) TestDamagedPlanFailsOnceNotPanicking(c *C) {
	s.fn.script["a"] = func(int, *stepArgs) (engine.Result, error) { return engine.Wait("x", time.Minute), nil }
	_, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	s.events()
	s.nab.Status.Plan.Phases = s.nab.Status.Plan.Phases[:1] // a damaged status
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil, Commentf("not a blueprint error, nothing to retry"))
	c.Check(out.Finished, Equals, true)
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanFailed)
	c.Check(s.nab.Status.Plan.Message, Equals, `status.plan of action "backup" does not match its spec snapshot: the plan cannot be resumed`)
	c.Check(s.events(), DeepEquals, []string{"Warning ActionFailed"})
	// And it stays failed: no hot loop, no second event.
	out, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.events(), HasLen, 0)
}

// A running phase whose recorded start time is lost does not panic: its
// clock restarts.
func (s *RunSuite) TestRunningPhaseWithoutStartTime(c *C) {
	s.fn.script["a"] = func(int, *stepArgs) (engine.Result, error) { return engine.Wait("x", time.Minute), nil }
	_, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	s.nab.Status.Plan.Phases[0].StartTime = nil
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.RequeueAfter, Equals, time.Minute)
	c.Check(s.nab.Status.Plan.Phases[0].StartTime.Time, Equals, s.now)
}

// An output that would not fit in status fails its phase with the limit,
// instead of making every status write fail.
func (s *RunSuite) TestOversizedOutputFailsThePhase(c *C) {
	s.fn.script["a"] = func(int, *stepArgs) (engine.Result, error) {
		out := map[string]string{}
		for i := range 17 {
			out[fmt.Sprintf("k%d", i)] = "v"
		}
		return engine.Done("many", out), nil
	}
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) {
		return engine.Done("big", map[string]string{"blob": strings.Repeat("x", engine.MaxOutputValueBytes+1)}), nil
	}
	_, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.Phase("a").State, Equals, v1alpha1.PhaseFailed)
	c.Check(s.nab.Status.Plan.Phase("a").Message, Equals, "phase output has 17 keys, at most 16 fit in status.plan")
	c.Check(s.nab.Status.Plan.Phase("a").Output, HasLen, 0)
	s.SetUpTest(c)
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) {
		return engine.Done("big", map[string]string{"blob": strings.Repeat("x", engine.MaxOutputValueBytes+1)}), nil
	}
	_, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.Phase("b").Message, Equals, `phase output "blob" is 4097 bytes, at most 4096 fit in status.plan`)
}

// A plan whose revision changes while it runs is superseded: its remaining
// phases are skipped, its deferPhase runs (here over two calls: it waits
// first), EndedAction says why, the Observer is told, and only then does the
// new run start, recording the superseded one.
func (s *RunSuite) TestSupersededPlanEndsProperly(c *C) {
	obs := &countingObserver{}
	s.runner.Observer = obs
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) { return engine.Wait("velero works", time.Minute), nil }
	req := s.request(c, nil)
	req.Revision = "g1"
	_, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.Current, Equals, "b: waiting")
	s.events()

	waits := 0
	s.fn.script["d"] = func(int, *stepArgs) (engine.Result, error) {
		if waits++; waits == 1 {
			return engine.Wait("cleaning up", time.Second), nil
		}
		return engine.Done("cleaned up", nil), nil
	}
	delete(s.fn.script, "b")
	req.Revision = "g2"
	out, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.RequeueAfter, Equals, time.Second, Commentf("the old deferPhase waits first"))
	c.Check(s.nab.Status.Plan.Revision, Equals, "g1")
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanSuperseded)
	c.Check(s.states(), DeepEquals, []v1alpha1.PhaseState{"complete", "skipped", "skipped", "waiting"})
	c.Check(s.nab.Status.Plan.Phase("b").Message, Equals, "skipped: the plan was superseded by a new run of action backup (revision changed)")
	c.Check(s.fn.calls["c"], Equals, 0)

	out, err = s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	p := s.nab.Status.Plan
	c.Check(p.Revision, Equals, "g2")
	c.Check(p.State, Equals, v1alpha1.PlanComplete)
	c.Assert(p.Superseded, NotNil)
	c.Check(p.Superseded.Action, Equals, "backup")
	c.Check(p.Superseded.Revision, Equals, "g1")
	c.Check(p.Superseded.Reason, Equals, "superseded by a new run of action backup (revision changed)")
	c.Check(p.Superseded.DeferPhaseState, Equals, v1alpha1.PhaseComplete)
	c.Check(p.Superseded.CompletionTime, NotNil)
	c.Check(s.events()[:4], DeepEquals, []string{"Normal PhaseWaiting", "Normal EndedDeferPhase",
		"Normal EndedAction", "Normal StartedAction"})
	c.Check(obs.ended, DeepEquals, []string{"backup failed=true", "backup failed=false"})
}

// countingObserver records ActionEnded and PhaseEnded calls.
type countingObserver struct{ ended, phases []string }

func (o *countingObserver) ActionStarted(engine.Object, string) {}
func (o *countingObserver) ActionEnded(_ engine.Object, action string, failed bool, _ time.Duration) {
	o.ended = append(o.ended, fmt.Sprintf("%s failed=%v", action, failed))
}
func (o *countingObserver) PhaseEnded(_ engine.Object, fn string, failed bool, _ time.Duration) {
	o.phases = append(o.phases, fmt.Sprintf("%s failed=%v", fn, failed))
}

func (s *RunSuite) TestNewRevisionStartsANewRun(c *C) {
	req := s.request(c, nil)
	req.Revision = "g1"
	_, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(s.nab.Status.Plan.Revision, Equals, "g1")
	// Same revision: nothing runs again.
	_, err = s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(s.fn.calls["a"], Equals, 1)
	// New revision: the action runs again from its first phase.
	req.Revision = "g2"
	c.Check(engine.NeedsNewPlan(s.nab, "backup", "g2"), Equals, true)
	_, err = s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(s.fn.calls["a"], Equals, 2)
	c.Check(s.nab.Status.Plan.Revision, Equals, "g2")
}

func (s *RunSuite) TestPlanDeadline(c *C) {
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) { return engine.Wait("slow", time.Hour), nil }
	req := s.request(c, func(a *v1alpha1.BlueprintAction) {
		a.Deadline = &metav1.Duration{Duration: 20 * time.Minute}
		a.Phases[1].Timeout = &metav1.Duration{Duration: 2 * time.Hour}
	})
	out, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.RequeueAfter, Equals, 20*time.Minute, Commentf("the recheck is capped by the deadline"))
	s.now = s.now.Add(20 * time.Minute)
	out, err = s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.states(), DeepEquals, []v1alpha1.PhaseState{"complete", "failed", "skipped", "complete"})
	c.Check(s.nab.Status.Plan.Phase("b").Message, Equals, "plan deadline of 20m0s exceeded")
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanFailed)
}

func (s *RunSuite) TestNamespaceLabelsInTemplates(c *C) {
	req := s.request(c, func(a *v1alpha1.BlueprintAction) {
		a.Phases[0].Args = args(c, map[string]any{"value": `{{ index .NamespaceLabels "cost-centre" }}/{{ index .NamespaceLabels "absent" }}`})
	})
	req.NamespaceLabels = map[string]string{"cost-centre": "cc-42"}
	_, err := s.runner.Run(context.Background(), req)
	c.Assert(err, IsNil)
	c.Check(s.nab.Status.Plan.Phase("a").Output, DeepEquals, map[string]string{"value": "cc-42/"})
}

func (s *RunSuite) TestPanicFailsThePhaseNotTheController(c *C) {
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) {
		var m map[string]int
		m["boom"]++ // a nil map write: a bug in a function
		return engine.Done("", nil), nil
	}
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanFailed)
	c.Check(s.nab.Status.Plan.Phase("b").Message, Matches, `Step panicked: assignment to entry in nil map \(a bug: please report it\)`)
	c.Check(s.nab.Status.Plan.DeferPhase.State, Equals, v1alpha1.PhaseComplete)
}

// A render cut short by the reconcile's cancellation (the controller
// stopping) does not fail the phase: the same blueprint renders next time.
func (s *RunSuite) TestCancelledRenderIsNotTerminal(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.runner.Run(ctx, s.request(c, nil))
	c.Assert(err, NotNil)
	c.Check(engine.IsTerminal(err), Equals, false, Commentf("%v", err))
	c.Check(err, ErrorMatches, "phase b: rendering stopped: context canceled") // a's args are plain values
	c.Check(s.nab.Status.Plan.Phase("b").State, Not(Equals), v1alpha1.PhaseFailed)
}

// A wait on a watched object is rechecked only as a safety net that backs
// off with the time waited (5 s, 10 s, 20 s, ... up to 5 min), never later
// than the function's deadline or the phase's timeout; a deadline within 5
// min is the only recheck.
func (s *RunSuite) TestWatchedWaitBacksOff(c *C) {
	deadline := 6 * time.Minute
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) {
		return engine.WaitWatched("waiting for Velero", deadline), nil
	}
	var got []time.Duration
	for range 6 {
		out, err := s.runner.Run(context.Background(), s.request(c, nil))
		c.Assert(err, IsNil)
		got = append(got, out.RequeueAfter)
		s.now = s.now.Add(out.RequeueAfter)
		deadline -= out.RequeueAfter
	}
	c.Check(got, DeepEquals, []time.Duration{5 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 280 * time.Second},
		Commentf("at 80 s the deadline is 280 s away, within 5 min: the only recheck"))
	c.Check(s.fn.calls["b"], Equals, 6)
	s.fn.script["c"] = func(int, *stepArgs) (engine.Result, error) {
		return engine.WaitWatched("waiting for Velero", 2*time.Minute), nil
	}
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) { return engine.Done("", nil), nil }
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.RequeueAfter, Equals, 2*time.Minute, Commentf("a deadline within 5 min: no earlier recheck"))
	c.Check(engine.SafetyNet(time.Hour), Equals, engine.MaxSafetyNet)
	c.Check(engine.SafetyNet(0), Equals, engine.MinSafetyNet)
}

// A brief wait that is not recorded yet holds the run back: the caller need
// not write it, the Observer hears nothing, and the next run, once the
// answer came, makes the same transitions again and ends the plan. A brief
// wait of a phase already recorded as waiting is an ordinary watched wait.
func (s *RunSuite) TestBriefWaitIsHeldBack(c *C) {
	obs := &countingObserver{}
	s.runner.Observer = obs
	answered := false
	s.fn.script["b"] = func(int, *stepArgs) (engine.Result, error) {
		if answered {
			return engine.Done("answered", nil), nil
		}
		return engine.WaitBriefly("asked Velero", 2*time.Second), nil
	}
	out, err := s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out, DeepEquals, engine.Outcome{RequeueAfter: 2 * time.Second, Held: true})
	c.Check(obs.phases, HasLen, 0, Commentf("phase a ended in memory only"))

	// The caller did not write: the next run starts from the same record.
	s.nab.Status.Plan = nil
	answered = true
	out, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Finished, Equals, true)
	c.Check(out.Held, Equals, false)
	c.Check(s.fn.calls, DeepEquals, map[string]int{"a": 2, "b": 2, "c": 1, "d": 1})
	c.Check(obs.phases, DeepEquals, []string{"Step failed=false", "Step failed=false", "Step failed=false", "Step failed=false"})
	c.Check(obs.ended, DeepEquals, []string{"backup failed=false"})

	// Recorded as waiting already: not held.
	s.nab.Status.Plan = nil
	answered = false
	s.fn.script["b"] = func(n int, _ *stepArgs) (engine.Result, error) {
		if n == 3 {
			return engine.Wait("slow", time.Minute), nil
		}
		return engine.WaitBriefly("asked Velero", 2*time.Second), nil
	}
	out, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Held, Equals, false)
	c.Check(s.nab.Status.Plan.Phase("b").State, Equals, v1alpha1.PhaseWaiting)
	out, err = s.runner.Run(context.Background(), s.request(c, nil))
	c.Assert(err, IsNil)
	c.Check(out.Held, Equals, false)
	c.Check(out.RequeueAfter, Equals, 2*time.Second)
}
