package phases_test

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/phases"
)

type QueuePositionSuite struct{}

var _ = Suite(&QueuePositionSuite{})

// fixedQueue estimates every backup at pos and remembers what was recorded.
type fixedQueue struct {
	pos      int
	recorded []int
}

func (q *fixedQueue) Position(string, time.Time) int { return q.pos }
func (q *fixedQueue) Record(_ string, _ time.Time, pos int) {
	q.recorded = append(q.recorded, pos)
}

// TestShowQueuePosition: the estimate is written when the figure shown is
// stale, or differs while the status is written anyway; never for a
// finished backup or one Velero places itself; what is shown is recorded.
func (s *QueuePositionSuite) TestShowQueuePosition(c *C) {
	for _, tc := range []struct {
		about         string
		shown, pos    int
		phase         velerov1.BackupPhase
		veleroPos     int
		statusWritten bool
		want          int // the figure shown after; -1: no queueInfo
		recorded      []int
	}{
		{about: "none shown", shown: -1, pos: 40, want: 40, recorded: []int{40}},
		{about: "drifted by a third", shown: 30, pos: 20, want: 20, recorded: []int{20}},
		{about: "drifted less", shown: 30, pos: 25, want: 30, recorded: []int{30}},
		{about: "drifted less, status written anyway", shown: 30, pos: 25, statusWritten: true, want: 25, recorded: []int{25}},
		{about: "at the head: exact", shown: 5, pos: 4, want: 4, recorded: []int{4}},
		{about: "finished", shown: 3, pos: 1, phase: velerov1.BackupPhaseCompleted, want: 3},
		{about: "Velero's own position", shown: 3, pos: 1, veleroPos: 2, want: 3},
	} {
		nab := &v1alpha1.NonAdminBackup{}
		if tc.shown >= 0 {
			nab.Status.QueueInfo = &v1alpha1.QueueInfo{EstimatedQueuePosition: tc.shown}
		}
		b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: velerov1.BackupStatus{Phase: tc.phase, QueuePosition: tc.veleroPos}}
		q := &fixedQueue{pos: tc.pos}
		phases.ShowQueuePosition(q, nab, b, tc.statusWritten)
		got := -1
		if nab.Status.QueueInfo != nil {
			got = nab.Status.QueueInfo.EstimatedQueuePosition
		}
		c.Check(got, Equals, tc.want, Commentf(tc.about))
		c.Check(q.recorded, DeepEquals, tc.recorded, Commentf(tc.about))
	}
	nab := &v1alpha1.NonAdminBackup{}
	phases.ShowQueuePosition(nil, nab, &velerov1.Backup{}, true)
	c.Check(nab.Status.QueueInfo, IsNil, Commentf("no estimator"))
}
