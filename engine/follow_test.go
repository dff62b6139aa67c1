package engine_test

import (
	"context"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// TestFollowRunsTheRecordedPhaseAgain: after the plan has ended, Follow runs
// the phase of the recorded plan that calls the function, its args rendered
// from the record, and changes nothing in the plan; a plan without such a
// phase, or no plan, follows nothing.
func (s *RunSuite) TestFollowRunsTheRecordedPhaseAgain(c *C) {
	ctx := context.Background()
	req := s.request(c, nil)
	_, _, err := s.runner.Follow(ctx, req, "Step")
	c.Assert(err, IsNil)
	c.Check(s.fn.calls, HasLen, 0, Commentf("no plan: nothing followed"))

	_, err = s.runner.Run(ctx, req)
	c.Assert(err, IsNil)
	recorded := s.nab.Status.Plan.DeepCopy()
	s.events()
	s.fn.script["a"] = func(n int, a *stepArgs) (engine.Result, error) {
		return engine.Result{Message: "again " + a.Value, RecheckAfter: 42}, nil
	}
	res, ok, err := s.runner.Follow(ctx, req, "Step")
	c.Assert(err, IsNil)
	c.Check(ok, Equals, true)
	c.Check(res, DeepEquals, engine.Result{Message: "again from-a", RecheckAfter: 42})
	c.Check(s.fn.calls["a"], Equals, 2, Commentf("the first phase calling the function"))
	c.Check(s.nab.Status.Plan, DeepEquals, recorded)
	c.Check(s.events(), HasLen, 0)

	_, ok, err = s.runner.Follow(ctx, req, "Missing")
	c.Check(err, IsNil)
	c.Check(ok, Equals, false)
	c.Check(s.nab.Status.Plan.State, Equals, v1alpha1.PlanComplete)
}
