package controllers_test

import (
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/controllers"
)

type CacheTransformSuite struct{}

var _ = Suite(&CacheTransformSuite{})

func planned(name, generation, action string, phases ...string) *v1alpha1.NonAdminBackup {
	spec := &v1alpha1.BlueprintAction{}
	for _, p := range phases {
		spec.Phases = append(spec.Phases, v1alpha1.BlueprintPhase{Name: p, Func: "WaitFor"})
	}
	return &v1alpha1.NonAdminBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Status: v1alpha1.NonAdminBackupStatus{Plan: &v1alpha1.PlanStatus{
			Blueprint: "nonadminbackup", BlueprintGeneration: generation, Action: action, Spec: spec}},
	}
}

// The cache keeps one copy of equal plan snapshots: objects of the same
// blueprint generation and action share it; a different snapshot under the
// same key, another action or generation keeps its own; objects without a
// plan pass; managedFields are dropped from all.
func (s *CacheTransformSuite) TestPlanSnapshotsShared(c *C) {
	tr := controllers.CacheTransform()
	in := func(o *v1alpha1.NonAdminBackup) *v1alpha1.NonAdminBackup {
		out, err := tr(o)
		c.Assert(err, IsNil)
		return out.(*v1alpha1.NonAdminBackup)
	}
	a := in(planned("a", "1", "backup", "validate", "wait"))
	b := in(planned("b", "1", "backup", "validate", "wait"))
	c.Check(b.Status.Plan.Spec == a.Status.Plan.Spec, Equals, true, Commentf("equal snapshots are one copy"))
	c.Check(a.ManagedFields, IsNil)

	edited := in(planned("c", "1", "backup", "validate", "verify"))
	c.Check(edited.Status.Plan.Spec == a.Status.Plan.Spec, Equals, false)
	c.Check(edited.Status.Plan.Spec.Phases[1].Name, Equals, "verify")
	again := in(planned("d", "1", "backup", "validate", "verify"))
	c.Check(again.Status.Plan.Spec == edited.Status.Plan.Spec, Equals, true, Commentf("a second variant is shared too"))

	c.Check(in(planned("e", "2", "backup", "validate", "wait")).Status.Plan.Spec == a.Status.Plan.Spec, Equals, false)
	c.Check(in(planned("f", "1", "delete", "validate", "wait")).Status.Plan.Spec == a.Status.Plan.Spec, Equals, false)

	bare := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	c.Check(in(bare).Status.Plan, IsNil)
}
