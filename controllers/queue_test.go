package controllers_test

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type QueueSuite struct{}

var _ = Suite(&QueueSuite{})

func backupAt(name string, sec int, phase velerov1.BackupPhase, veleroPos int) velerov1.Backup {
	return velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+sec), 0))},
		Status:     velerov1.BackupStatus{Phase: phase, QueuePosition: veleroPos},
	}
}

func (s *QueueSuite) TestQueuePosition(c *C) {
	all := []velerov1.Backup{
		backupAt("done", 0, velerov1.BackupPhaseCompleted, 0),
		backupAt("running", 1, velerov1.BackupPhaseInProgress, 0),
		backupAt("a", 2, velerov1.BackupPhaseNew, 0),
		backupAt("b", 2, "", 0), // same second as a: name breaks the tie
		backupAt("failed", 3, velerov1.BackupPhaseFailed, 0),
		backupAt("c", 4, velerov1.BackupPhaseQueued, 7),
	}
	for i, want := range []int{0, 1, 2, 3, 0, 7} {
		c.Check(v1alpha1.BackupQueuePosition(all, &all[i]), Equals, want, Commentf(all[i].Name))
	}
}
