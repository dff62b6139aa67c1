package v1alpha1_test

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type RPOSuite struct{}

var _ = Suite(&RPOSuite{})

func (s *RPOSuite) TestEvaluateRPO(c *C) {
	created := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	success := metav1.NewTime(created.Add(time.Hour))
	rpo := 2 * time.Hour
	for _, tc := range []struct {
		name        string
		last        *metav1.Time
		paused      bool
		newest      velerov1.BackupPhase
		queue       int
		now         time.Time
		met         bool
		reason, msg string
		deadline    time.Time
	}{
		{"fresh schedule, no run yet", nil, false, "", 0, created.Add(30 * time.Minute), true, v1alpha1.ReasonWithinObjective,
			"no run has succeeded since the schedule was created at 2026-11-23T10:00:00Z; the objective of 2h0m0s holds until 2026-11-23T12:00:00Z", created.Add(rpo)},
		{"recent success", &success, false, velerov1.BackupPhaseCompleted, 0, created.Add(2 * time.Hour), true, v1alpha1.ReasonWithinObjective,
			"the last successful backup completed at 2026-11-23T11:00:00Z; the objective of 2h0m0s holds until 2026-11-23T13:00:00Z", success.Add(rpo)},
		{"exactly at the objective still holds", &success, false, velerov1.BackupPhaseCompleted, 0, success.Add(rpo), true, v1alpha1.ReasonWithinObjective,
			"the last successful backup completed at 2026-11-23T11:00:00Z; the objective of 2h0m0s holds until 2026-11-23T13:00:00Z", success.Add(rpo)},
		{"paused wins over everything", &success, true, velerov1.BackupPhaseFailed, 5, success.Add(rpo + time.Second), false, v1alpha1.ReasonSchedulePaused,
			"the last successful backup completed at 2026-11-23T11:00:00Z, more than the objective of 2h0m0s ago: the schedule is paused (spec.paused), no new run is taken", success.Add(rpo)},
		{"last run failed", &success, false, velerov1.BackupPhasePartiallyFailed, 0, success.Add(3 * time.Hour), false, v1alpha1.ReasonLastRunFailed,
			"the last successful backup completed at 2026-11-23T11:00:00Z, more than the objective of 2h0m0s ago: the last run ended PartiallyFailed", success.Add(rpo)},
		{"queued behind others", &success, false, velerov1.BackupPhaseNew, 4, success.Add(3 * time.Hour), false, v1alpha1.ReasonVeleroQueue,
			"the last successful backup completed at 2026-11-23T11:00:00Z, more than the objective of 2h0m0s ago: the last run waits at position 4 of Velero's queue", success.Add(rpo)},
		{"first in the queue is not the queue's fault", &success, false, velerov1.BackupPhaseInProgress, 1, success.Add(3 * time.Hour), false, v1alpha1.ReasonObjectiveMissed,
			"the last successful backup completed at 2026-11-23T11:00:00Z, more than the objective of 2h0m0s ago", success.Add(rpo)},
		{"never succeeded", nil, false, velerov1.BackupPhaseCompleted, 0, created.Add(3 * time.Hour), false, v1alpha1.ReasonObjectiveMissed,
			"no run has succeeded since the schedule was created at 2026-11-23T10:00:00Z, more than the objective of 2h0m0s ago", created.Add(rpo)},
	} {
		v := v1alpha1.EvaluateRPO(rpo, created, tc.last, tc.paused, tc.newest, tc.queue, tc.now)
		c.Check(v.Met, Equals, tc.met, Commentf(tc.name))
		c.Check(v.Reason, Equals, tc.reason, Commentf(tc.name))
		c.Check(v.Message, Equals, tc.msg, Commentf(tc.name))
		c.Check(v.Deadline.Equal(tc.deadline), Equals, true, Commentf("%s: %s", tc.name, v.Deadline))
	}
}
