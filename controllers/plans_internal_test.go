package controllers

import (
	"context"

	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type StatusPlansSuite struct{}

var _ = Suite(&StatusPlansSuite{})

// statusPlans.Write leaves a stored plan alone when the object's plan is
// the cache's summary of it, and writes a plan that has just ended as its
// summary (every phase plain, engine.Compact).
func (s *StatusPlansSuite) TestSummaryWrites(c *C) {
	ctx := context.Background()
	sc, err := v1alpha1.NewScheme()
	c.Assert(err, IsNil)
	at := metav1.Now()
	whole := &v1alpha1.PlanStatus{Action: v1alpha1.ActionBackup, Blueprint: "nonadminbackup", State: v1alpha1.PlanComplete,
		Compacted: true, Current: "finalStatus: complete", StartTime: &at, CompletionTime: &at,
		Phases: []v1alpha1.PhaseStatus{{Name: "validate", Func: "ValidateBackupSpec", State: v1alpha1.PhaseComplete,
			CompletionTime: &at, Message: "ttl enforced by the admin"}}}
	running := &v1alpha1.PlanStatus{Action: v1alpha1.ActionBackup, Blueprint: "nonadminbackup", State: v1alpha1.PlanRunning,
		StartTime: &at, Phases: []v1alpha1.PhaseStatus{{Name: "validate", Func: "ValidateBackupSpec", State: v1alpha1.PhaseRunning}}}
	stored := func(name string, plan *v1alpha1.PlanStatus) *v1alpha1.NonAdminBackup {
		nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name}}
		nab.Status.Plan = plan.DeepCopy()
		return nab
	}
	cl := fake.NewClientBuilder().WithScheme(sc).WithStatusSubresource(&v1alpha1.NonAdminBackup{}).
		WithObjects(stored("kept", whole), stored("ending", running)).Build()
	read := func(name string) *v1alpha1.NonAdminBackup {
		nab := &v1alpha1.NonAdminBackup{}
		c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: name}, nab), IsNil)
		return nab
	}

	// The cache's copy: the whole plan cut to its summary.
	before := read("kept")
	before.Status.Plan.Summarize()
	obj := before.DeepCopy()
	obj.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
	c.Assert(statusPlans{}.Write(ctx, cl, obj, before, nil), IsNil)
	got := read("kept")
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	c.Check(got.Status.Plan.Phases, HasLen, 1, Commentf("the stored plan stays whole"))

	// A plan that has just ended plain is its summary: written so.
	before = read("ending")
	obj = before.DeepCopy()
	obj.Status.Plan.State, obj.Status.Plan.Compacted, obj.Status.Plan.Phases = v1alpha1.PlanComplete, true, nil
	obj.Status.Plan.Current, obj.Status.Plan.CompletionTime = "finalStatus: complete", &at
	c.Assert(statusPlans{}.Write(ctx, cl, obj, before, nil), IsNil)
	got = read("ending")
	c.Check(got.Status.Plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(got.Status.Plan.IsSummary(), Equals, true)
}
