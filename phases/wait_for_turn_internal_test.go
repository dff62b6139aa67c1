package phases

import (
	"context"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

type WaitForTurnSuite struct{}

var _ = Suite(&WaitForTurnSuite{})

// fixedTurns answers every request with d and records the requests.
type fixedTurns struct {
	d    TurnDecision
	reqs []TurnRequest
}

func (f *fixedTurns) Turn(_ context.Context, req TurnRequest) (TurnDecision, error) {
	f.reqs = append(f.reqs, req)
	return f.d, nil
}

func (f *fixedTurns) RunTurn(_ context.Context, req TurnRequest) (TurnDecision, error) {
	f.reqs = append(f.reqs, req)
	return f.d, nil
}

// turnOp returns an operation of a NonAdminBackup of namespace a whose plan
// is in phase waitForTurn (running; waiting with message and output when
// msg is set).
func turnOp(msg string, out map[string]string) *engine.Operation {
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b7", UID: "uid",
		CreationTimestamp: metav1.NewTime(time.Unix(100, 0))}}
	ps := v1alpha1.PhaseStatus{Name: "waitForTurn", Func: "WaitForTurn", State: v1alpha1.PhaseRunning}
	if msg != "" {
		ps.State, ps.Message, ps.Output = v1alpha1.PhaseWaiting, msg, out
	}
	nab.Status.Plan = &v1alpha1.PlanStatus{Phases: []v1alpha1.PhaseStatus{ps}}
	return &engine.Operation{Object: nab, UUID: "u-1", Phase: "waitForTurn", OADPNamespace: "oadp"}
}

func intp(n int) *int { return &n }

func (s *WaitForTurnSuite) TestWaitsSayingWhyAndWhere(c *C) {
	turns := &fixedTurns{d: TurnDecision{InVelero: 2, Position: 4, Waiting: 22}}
	f := bind(&WaitForTurn{tools: tools{turns: turns}, defaultMax: 2})
	op := turnOp("", nil)
	res, err := f.Run(context.Background(), op, &WaitForTurnArgs{})
	c.Assert(err, IsNil)
	want := "waiting for a turn in Velero's queue: namespace a has 2 of its 2 backups in Velero; this is 4th of 22 waiting in a"
	c.Check(res, DeepEquals, engine.Result{Wait: true, RecheckAfter: time.Minute, Message: want,
		Output: map[string]string{"limit": "2", "position": "4", "waiting": "22", "why": "full"}})
	c.Check(turns.reqs, DeepEquals, []TurnRequest{{Kind: "NonAdminBackup", Namespace: "a", Name: "b7", Created: time.Unix(100, 0),
		Velero: v1alpha1.NACObjectName("a", "b7", "u-1"), Max: 2}})
	cond := meta.FindStatusCondition(op.Object.(*v1alpha1.NonAdminBackup).Status.Conditions, v1alpha1.ConditionQueued)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonWaitingForTurn)
	c.Check(cond.Message, Equals, want)

	// Another namespace first: said so, without naming it.
	turns.d = TurnDecision{InVelero: 1, Position: 1, Waiting: 3, OtherFirst: true}
	res, err = f.Run(context.Background(), turnOp("", nil), &WaitForTurnArgs{Max: intp(3)})
	c.Assert(err, IsNil)
	c.Check(res.Message, Equals, "waiting for a turn in Velero's queue: namespace a has 1 of its 3 backups in Velero and another namespace's turn comes first (round-robin across namespaces); this is 1st of 3 waiting in a")
	c.Check(turns.reqs[1].Max, Equals, 3, Commentf("the blueprint's max wins over the default"))
}

// A place that moved a little is not rewritten: the earlier message and
// output stay, so the status write is empty. One that moved by a third, or
// into the first five, is.
func (s *WaitForTurnSuite) TestPlaceRewrittenOnlyWhenStale(c *C) {
	old := "waiting for a turn in Velero's queue: namespace a has 2 of its 2 backups in Velero; this is 12th of 22 waiting in a"
	oldOut := map[string]string{"limit": "2", "position": "12", "waiting": "22", "why": "full"}
	for _, tc := range []struct {
		pos     int
		rewrite bool
	}{{12, false}, {11, false}, {9, false}, {8, true}, {5, true}} {
		turns := &fixedTurns{d: TurnDecision{InVelero: 2, Position: tc.pos, Waiting: 21}}
		f := bind(&WaitForTurn{tools: tools{turns: turns}, defaultMax: 2})
		res, err := f.Run(context.Background(), turnOp(old, oldOut), &WaitForTurnArgs{})
		c.Assert(err, IsNil)
		c.Check(res.Message == old, Equals, !tc.rewrite, Commentf("position %d: %s", tc.pos, res.Message))
	}
	// A limit that changed is always told.
	f := bind(&WaitForTurn{tools: tools{turns: &fixedTurns{d: TurnDecision{InVelero: 2, Position: 12, Waiting: 22}}}, defaultMax: 2})
	res, err := f.Run(context.Background(), turnOp(old, oldOut), &WaitForTurnArgs{Max: intp(3)})
	c.Assert(err, IsNil)
	c.Check(res.Message, Matches, ".* has 2 of its 3 backups .*")
}

func (s *WaitForTurnSuite) TestAdmittedUnlimitedAndMisuse(c *C) {
	f := bind(&WaitForTurn{tools: tools{turns: &fixedTurns{d: TurnDecision{Admitted: true, InVelero: 1}}}, defaultMax: 2})
	res, err := f.Run(context.Background(), turnOp("", nil), &WaitForTurnArgs{})
	c.Assert(err, IsNil)
	c.Check(res, DeepEquals, engine.Done("its turn in Velero's queue: namespace a had 1 of its 2 backups in Velero", map[string]string{"limit": "2"}))

	// 0 is unlimited: no keeper asked, none needed.
	none := bind(&WaitForTurn{})
	res, err = none.Run(context.Background(), turnOp("", nil), &WaitForTurnArgs{})
	c.Assert(err, IsNil)
	c.Check(res.Wait, Equals, false)
	c.Check(res.Message, Equals, "no limit on namespace a's backups in Velero")
	_, err = none.Run(context.Background(), turnOp("", nil), &WaitForTurnArgs{Max: intp(1)})
	c.Check(engine.IsTerminal(err), Equals, true)

	c.Check(WaitForTurnArgs{Max: intp(-1)}.Validate(), ErrorMatches, `max: must be 0 \(unlimited\) or more, got -1`)
	c.Check(WaitForTurnArgs{Max: intp(0)}.Validate(), IsNil)
	_, err = f.Run(context.Background(), &engine.Operation{Object: &v1alpha1.NonAdminSchedule{}}, &WaitForTurnArgs{})
	c.Check(engine.IsTerminal(err), Equals, true)
	c.Check(err, ErrorMatches, `WaitForTurn serves NonAdminBackup and NonAdminRestore, not \*v1alpha1.NonAdminSchedule`)

	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 112: "112th", 101: "101st"} {
		c.Check(ordinal(n), Equals, want)
	}
}

// A NonAdminRestore waits for Velero's restore queue: its own default limit,
// its kind in the request (the keeper's lane), restores in the message,
// and its Queued condition.
func (s *WaitForTurnSuite) TestRestoreWaitsForTheRestoreQueue(c *C) {
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "r3", UID: "uid",
		CreationTimestamp: metav1.NewTime(time.Unix(200, 0))}}
	nar.Status.Plan = &v1alpha1.PlanStatus{Phases: []v1alpha1.PhaseStatus{{Name: "waitForTurn", Func: "WaitForTurn", State: v1alpha1.PhaseRunning}}}
	op := &engine.Operation{Object: nar, UUID: "u-3", Phase: "waitForTurn", OADPNamespace: "oadp"}
	turns := &fixedTurns{d: TurnDecision{InVelero: 1, Position: 2, Waiting: 3}}
	f := bind(&WaitForTurn{tools: tools{turns: turns}, defaultMax: 5, defaultRestoreMax: 1})
	res, err := f.Run(context.Background(), op, &WaitForTurnArgs{})
	c.Assert(err, IsNil)
	want := "waiting for a turn in Velero's queue: namespace a has 1 of its 1 restores in Velero; this is 2nd of 3 waiting in a"
	c.Check(res.Message, Equals, want)
	c.Check(turns.reqs, DeepEquals, []TurnRequest{{Kind: "NonAdminRestore", Namespace: "a", Name: "r3", Created: time.Unix(200, 0),
		Velero: v1alpha1.NACObjectName("a", "r3", "u-3"), Max: 1}})
	cond := meta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionQueued)
	c.Assert(cond, NotNil)
	c.Check(cond.Reason+": "+cond.Message, Equals, v1alpha1.ReasonWaitingForTurn+": "+want)

	turns.d = TurnDecision{Admitted: true}
	res, err = f.Run(context.Background(), op, &WaitForTurnArgs{})
	c.Assert(err, IsNil)
	c.Check(res.Message, Equals, "its turn in Velero's queue: namespace a had 0 of its 1 restores in Velero")
}
