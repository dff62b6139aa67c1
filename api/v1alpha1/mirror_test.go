package v1alpha1_test

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type MirrorSuite struct{}

var _ = Suite(&MirrorSuite{})

// MirrorBackup copies the Velero Backup into status.veleroBackup and its
// queue position into status.queueInfo, reports a change only when one of
// them changed, and leaves the rest of the status alone.
func (s *MirrorSuite) TestMirrorBackup(c *C) {
	b := &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "nab-1", Namespace: "oadp", Labels: map[string]string{v1alpha1.NabOriginNACUUIDLabel: "uuid-1"}},
		Spec:       velerov1.BackupSpec{IncludedNamespaces: []string{"t"}, StorageLocation: "default"},
		Status:     velerov1.BackupStatus{Phase: velerov1.BackupPhaseNew, QueuePosition: 3},
	}
	plan := &v1alpha1.PlanStatus{Action: "backup", State: v1alpha1.PlanRunning}
	nab := &v1alpha1.NonAdminBackup{Status: v1alpha1.NonAdminBackupStatus{Plan: plan}}

	c.Check(nab.MirrorBackup(b), Equals, true)
	vb := nab.Status.VeleroBackup
	c.Assert(vb, NotNil)
	c.Check([]string{vb.Name, vb.Namespace, vb.NACUUID}, DeepEquals, []string{"nab-1", "oadp", "uuid-1"})
	c.Check(*vb.Spec, DeepEquals, b.Spec)
	c.Check(*vb.Status, DeepEquals, b.Status)
	c.Check(nab.Status.QueueInfo, DeepEquals, &v1alpha1.QueueInfo{EstimatedQueuePosition: 3})
	c.Check(nab.Status.Plan, Equals, plan)

	// The mirror is a copy: changing the Backup changes nothing until the
	// next mirror.
	b.Spec.IncludedNamespaces[0] = "changed"
	c.Check(vb.Spec.IncludedNamespaces, DeepEquals, []string{"t"})
	b.Spec.IncludedNamespaces[0] = "t"
	c.Check(nab.MirrorBackup(b), Equals, false)

	for _, change := range []func(){
		func() { b.Status.Phase = velerov1.BackupPhaseInProgress },
		func() { b.Status.QueuePosition = 2 },
		func() { b.Spec.TTL = metav1.Duration{Duration: 3600e9} },
		func() { b.Labels[v1alpha1.NabOriginNACUUIDLabel] = "uuid-2" },
	} {
		change()
		c.Check(nab.MirrorBackup(b), Equals, true)
		c.Check(nab.MirrorBackup(b), Equals, false)
	}
	c.Check(nab.Status.QueueInfo.EstimatedQueuePosition, Equals, 2)
	c.Check(nab.Status.VeleroBackup.NACUUID, Equals, "uuid-2")

	b.Status.Phase = velerov1.BackupPhaseCompleted
	c.Check(nab.MirrorBackup(b), Equals, true)
	c.Check(nab.Status.QueueInfo.EstimatedQueuePosition, Equals, 0)
	c.Check(nab.Status.VeleroBackup.Status.Phase, Equals, velerov1.BackupPhaseCompleted)
}
