package events_test

import (
	"strings"

	. "gopkg.in/check.v1"
	"k8s.io/client-go/tools/record"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/runtime/events"
)

type BufferSuite struct{}

var _ = Suite(&BufferSuite{})

// Buffered events reach the recorder only when flushed, in order, once.
func (s *BufferSuite) TestFlushInOrderOnce(c *C) {
	obj := &v1alpha1.NonAdminBackup{}
	b := &events.Buffer{}
	b.Eventf(obj, "Normal", engine.EventStartedAction, "Started action %s", "backup")
	b.Event(obj, "Warning", engine.EventPhaseFailed, "Phase validate failed")
	b.AnnotatedEventf(obj, map[string]string{"k": "v"}, "Normal", engine.EventEndedAction, "Ended action %s", "backup")
	c.Check(b.Len(), Equals, 3)
	to := record.NewFakeRecorder(10)
	c.Check(len(to.Events), Equals, 0, Commentf("nothing before the flush"))
	b.Flush(to)
	c.Check(b.Len(), Equals, 0)
	c.Check(<-to.Events, Equals, "Normal StartedAction Started action backup")
	c.Check(<-to.Events, Equals, "Warning PhaseFailed Phase validate failed")
	c.Check(<-to.Events, Matches, "Normal EndedAction Ended action backup.*")
	b.Flush(to)
	c.Check(len(to.Events), Equals, 0, Commentf("a second flush sends nothing"))
}

// A reconcile's consecutive Normal transitions of one object are one event,
// named by the last, telling each in order; a Warning stands alone and
// splits the run; another object starts a new run; a run is cut before its
// message passes MaxMessageBytes.
func (s *BufferSuite) TestFlushCoalescesTransitions(c *C) {
	nab, other := &v1alpha1.NonAdminBackup{}, &v1alpha1.NonAdminBackup{}
	b := &events.Buffer{}
	b.Event(nab, "Normal", engine.EventStartedAction, "Started action create")
	b.Event(nab, "Normal", engine.EventEndedPhase, "Ended phase validate (ValidateBackupSpec) in 0s")
	b.Event(nab, "Normal", engine.EventPhaseWaiting, "Phase waitForBackup (WaitFor) is waiting: New")
	b.Event(nab, "Warning", engine.EventPhaseRetrying, "Phase x attempt 1 failed")
	b.Event(nab, "Normal", engine.EventEndedPhase, "Ended phase a (A) in 1s")
	b.Event(other, "Normal", engine.EventEndedPhase, "Ended phase b (B) in 2s")
	b.Event(other, "Normal", engine.EventEndedAction, "Ended action create")
	to := record.NewFakeRecorder(10)
	b.Flush(to)
	c.Check(drain(to), DeepEquals, []string{
		"Normal PhaseWaiting Started action create; Ended phase validate (ValidateBackupSpec) in 0s; Phase waitForBackup (WaitFor) is waiting: New",
		"Warning PhaseRetrying Phase x attempt 1 failed",
		"Normal EndedPhase Ended phase a (A) in 1s",
		"Normal EndedAction Ended phase b (B) in 2s; Ended action create",
	})

	long := strings.Repeat("x", 400)
	for range 3 {
		b.Event(nab, "Normal", engine.EventEndedPhase, long)
	}
	b.Flush(to)
	got := drain(to)
	c.Check(got, DeepEquals, []string{"Normal EndedPhase " + long + "; " + long, "Normal EndedPhase " + long})
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
