package phases

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type ScheduledRunSuite struct{}

var _ = Suite(&ScheduledRunSuite{})

// TestScheduledRunsCount: a scheduled run counts as active while its Velero
// Backup runs, whatever its (adopt) plan says; a manual NAB is judged by
// its plan only.
func (s *ScheduledRunSuite) TestScheduledRunsCount(c *C) {
	run := func(labels map[string]string, phase velerov1.BackupPhase) *v1alpha1.NonAdminBackup {
		nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
		nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{Status: &velerov1.BackupStatus{Phase: phase}}
		return nab
	}
	scheduled := map[string]string{v1alpha1.NasOriginNACUUIDLabel: "u"}
	c.Check(scheduledRunActive(run(scheduled, velerov1.BackupPhaseInProgress)), Equals, true)
	c.Check(scheduledRunActive(run(scheduled, velerov1.BackupPhaseNew)), Equals, true)
	c.Check(scheduledRunActive(run(scheduled, velerov1.BackupPhaseCompleted)), Equals, false)
	c.Check(scheduledRunActive(run(scheduled, velerov1.BackupPhasePartiallyFailed)), Equals, false)
	c.Check(scheduledRunActive(run(nil, velerov1.BackupPhaseInProgress)), Equals, false)
}
