package veleroqueue_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
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
	q := veleroqueue.NewBackupQueue()
	for _, b := range []velerov1.Backup{
		backupAt("done", 0, velerov1.BackupPhaseCompleted, 0),
		backupAt("running", 1, velerov1.BackupPhaseInProgress, 0),
		backupAt("a", 2, velerov1.BackupPhaseNew, 0),
		backupAt("b", 2, "", 0), // same second as a: they share a place
		backupAt("failed", 3, velerov1.BackupPhaseFailed, 0),
	} {
		q.Observe(&b)
	}
	at := func(sec int) time.Time { return time.Unix(int64(1000+sec), 0) }
	c.Check(q.Position("running", at(1)), Equals, 1)
	c.Check(q.Position("a", at(2)), Equals, 2)
	c.Check(q.Position("b", at(2)), Equals, 2, Commentf("OADP NAC counts the Backups created strictly before"))
	c.Check(q.Position("new", at(9)), Equals, 4, Commentf("a Backup not yet observed"))
	c.Check(q.Position("c", at(2)), Equals, 2, Commentf("one created later in the same second does not move a or b"))
	// running finishes, a is deleted: everyone moves up.
	fin := backupAt("running", 1, velerov1.BackupPhaseCompleted, 0)
	q.Observe(&fin)
	q.Forget("a")
	c.Check(q.Position("b", at(2)), Equals, 1)
	c.Check(q.Position("new", at(9)), Equals, 2)
}

// The sorted index answers as counting does, over a random mix of new,
// re-observed, finished and deleted Backups.
func (s *QueueSuite) TestQueuePositionMatchesCounting(c *C) {
	rng := rand.New(rand.NewPCG(7, 9))
	q := veleroqueue.NewBackupQueue()
	pending := map[string]int{} // name → creation second
	for step := range 5000 {
		name := fmt.Sprintf("b%03d", rng.IntN(300))
		sec := rng.IntN(50)
		if old, ok := pending[name]; ok {
			sec = old // creation time never changes
		}
		switch rng.IntN(4) {
		case 0, 1:
			b := backupAt(name, sec, velerov1.BackupPhaseInProgress, 0)
			q.Observe(&b)
			pending[name] = sec
		case 2:
			b := backupAt(name, sec, velerov1.BackupPhaseCompleted, 0)
			q.Observe(&b)
			delete(pending, name)
		case 3:
			q.Forget(name)
			delete(pending, name)
		}
		probe, psec := fmt.Sprintf("b%03d", rng.IntN(300)), rng.IntN(50)
		want := 1
		for n, t := range pending {
			if n != probe && t < psec {
				want++
			}
		}
		c.Assert(q.Position(probe, time.Unix(int64(1000+psec), 0)), Equals, want, Commentf("step %d", step))
	}
}

// A position recorded by the phase that created a Backup, before the
// Backup's watch event indexed it, counts once the event comes: after one
// completion only the NABs whose figure went stale are woken, not every
// NAB of the wave (each showed as unknown, so the first completion cost a
// reconcile per waiting NAB). Record never makes a Backup pending.
func (s *QueueSuite) TestRecordBeforeObserve(c *C) {
	q := veleroqueue.NewBackupQueue()
	var backups []velerov1.Backup
	for i := range 20 {
		b := backupAt(fmt.Sprintf("b%02d", i), i, velerov1.BackupPhaseNew, 0)
		b.Annotations = map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "tenant", v1alpha1.NabOriginNameAnnotation: b.Name}
		backups = append(backups, b)
	}
	for i := range backups {
		b := &backups[i]
		if i != 19 { // b19's NAB never recorded a figure
			q.Record(b.Name, b.CreationTimestamp.Time, i+1)
		}
		q.Observe(b)
	}
	q.Record("ghost", time.Unix(1050, 0), 21) // created, but never seen by the watch
	c.Check(q.Len(), Equals, 20)
	c.Check(q.Position("later", time.Unix(1099, 0)), Equals, 21)

	done := backups[0]
	done.Status.Phase = velerov1.BackupPhaseCompleted
	q.Observe(&done)
	var woken []string
	for _, key := range q.StaleWaiting() {
		woken = append(woken, key.Name)
	}
	// b01..b05 moved into the exact positions; b19 shows nothing yet.
	c.Check(woken, DeepEquals, []string{"b01", "b02", "b03", "b04", "b05", "b19"})
}
