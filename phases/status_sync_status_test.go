package phases_test

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// SyncStatusSuite: SyncStatus, the one path by which a Velero object's
// status reaches its NAC object, in a plan and, as the controllers run it
// after each reconcile, out of it.
type SyncStatusSuite struct{}

var _ = Suite(&SyncStatusSuite{})

// TestBackupGoneOnceThePlanEnded: a NonAdminBackup's Velero Backup missing
// while the plan runs is nothing to mirror; missing once the plan has ended,
// it was deleted outside nacflow: BackingOff, Queued=False
// (VeleroBackupNotFound). A Backup that is there is mirrored either way.
func (s *SyncStatusSuite) TestBackupGoneOnceThePlanEnded(c *C) {
	ctx := context.Background()
	sc, err := v1alpha1.NewScheme()
	c.Assert(err, IsNil)
	const uuid = "u1-uuid"
	present := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: "present",
		Labels:      map[string]string{v1alpha1.NabOriginNACUUIDLabel: uuid, v1alpha1.OADPLabel: v1alpha1.OADPLabelValue},
		Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "team", v1alpha1.NabOriginNameAnnotation: "nightly"}},
		Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted}}
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(present).Build()
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, phases.Options{})
	c.Assert(err, IsNil)
	sync, ok := reg.Get("SyncStatus")
	c.Assert(ok, Equals, true)
	for _, tc := range []struct {
		about, name string
		ended       bool
		backingOff  bool
	}{
		{"gone while the plan runs", "gone", false, false},
		{"gone once the plan ended", "gone", true, true},
		{"there once the plan ended", "present", true, false},
	} {
		nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nightly", UID: "u1"}}
		nab.Status.Phase = v1alpha1.NonAdminPhaseCreated
		nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{NACUUID: uuid, Name: tc.name, Namespace: "oadp"}
		nab.Status.Plan = &v1alpha1.PlanStatus{Action: v1alpha1.ActionBackup, State: v1alpha1.PlanRunning}
		if tc.ended {
			now := metav1.Now()
			nab.Status.Plan.State, nab.Status.Plan.CompletionTime = v1alpha1.PlanComplete, &now
		}
		_, err := sync.Run(ctx, &engine.Operation{Object: nab, OADPNamespace: "oadp", UUID: uuid, Phase: "mirror"},
			&phases.SyncStatusArgs{Kind: "Backup", Name: tc.name})
		c.Assert(err, IsNil, Commentf(tc.about))
		queued := meta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionQueued)
		if tc.backingOff {
			c.Check(nab.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff, Commentf(tc.about))
			c.Assert(queued, NotNil, Commentf(tc.about))
			c.Check(queued.Status, Equals, metav1.ConditionFalse, Commentf(tc.about))
			c.Check(queued.Reason, Equals, v1alpha1.ReasonVeleroBackupNotFound, Commentf(tc.about))
			continue
		}
		c.Check(nab.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated, Commentf(tc.about))
		c.Check(queued, IsNil, Commentf(tc.about))
	}
}
