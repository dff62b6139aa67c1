package engine_test

import (
	. "gopkg.in/check.v1"
	"k8s.io/client-go/tools/record"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

type EventBufferSuite struct{}

var _ = Suite(&EventBufferSuite{})

// Buffered events reach the recorder only when flushed, in order, once.
func (s *EventBufferSuite) TestFlushInOrderOnce(c *C) {
	obj := &v1alpha1.NonAdminBackup{}
	b := &engine.EventBuffer{}
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
