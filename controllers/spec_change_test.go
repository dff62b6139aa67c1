package controllers

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/events"
)

// SpecChangeSuite: reportSpecChange on a NonAdminRestore, in memory.
type SpecChangeSuite struct{}

var _ = Suite(&SpecChangeSuite{})

func (SpecChangeSuite) TestRestoreSpecChange(c *C) {
	nar := &v1alpha1.NonAdminRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "r", Generation: 1},
		Spec:       v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "b1"}},
	}
	buffer := &events.Buffer{}
	// Not validated yet: nothing to compare with.
	reportSpecChange(nar, restoreSpecDecided, buffer)
	c.Check(nar.Status.Conditions, HasLen, 0)

	nar.Status.SpecHash = v1alpha1.SpecHash(nar.Spec.RestoreSpec)
	reportSpecChange(nar, restoreSpecDecided, buffer)
	c.Check(nar.Status.Conditions, HasLen, 0)
	c.Check(buffer.Len(), Equals, 0)

	// A sibling's backup named later: reported once per generation.
	nar.Spec.RestoreSpec.BackupName = "b2"
	nar.Generation = 2
	reportSpecChange(nar, restoreSpecDecided, buffer)
	reportSpecChange(nar, restoreSpecDecided, buffer)
	cond := meta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionSpecChanged)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionTrue)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonSpecImmutable)
	c.Check(cond.Message, Equals, "spec.restoreSpec changed after it was validated and is not acted on: spec.restoreSpec is immutable: create a new NonAdminRestore instead")
	c.Check(buffer.Len(), Equals, 1)

	nar.Spec.RestoreSpec.BackupName = "b1"
	nar.Generation = 3
	reportSpecChange(nar, restoreSpecDecided, buffer)
	c.Check(nar.Status.Conditions, HasLen, 0)
	c.Check(buffer.Len(), Equals, 1)
}

func (SpecChangeSuite) TestSpecHashIgnoresZeroValues(c *C) {
	empty := &velerov1.BackupSpec{}
	c.Check(v1alpha1.SpecHash(empty), HasLen, 64)
	c.Check(v1alpha1.SpecHash(empty), Equals, v1alpha1.SpecHash(&velerov1.BackupSpec{Hooks: velerov1.BackupHooks{}}))
	c.Check(v1alpha1.SpecHash(empty), Not(Equals), v1alpha1.SpecHash(&velerov1.BackupSpec{StorageLocation: "x"}))
	c.Check(v1alpha1.SpecHash((*velerov1.BackupSpec)(nil)), Equals, "")
}
