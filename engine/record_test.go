package engine_test

import (
	"context"
	"strings"

	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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

// A reconcile's consecutive Normal transitions of one object are one event,
// named by the last, telling each in order; a Warning stands alone and
// splits the run; another object starts a new run; a run is cut before its
// message passes MaxEventMessageBytes.
func (s *EventBufferSuite) TestFlushCoalescesTransitions(c *C) {
	nab, other := &v1alpha1.NonAdminBackup{}, &v1alpha1.NonAdminBackup{}
	b := &engine.EventBuffer{}
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

type PatchStatusSuite struct{}

var _ = Suite(&PatchStatusSuite{})

// patchRecorder returns a client whose status patches are recorded in sent
// (as the JSON sent) instead of reaching any server.
func patchRecorder(c *C, sent *[]string) client.Client {
	scheme := runtime.NewScheme()
	c.Assert(v1alpha1.AddToScheme(scheme), IsNil)
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
			c.Check(patch.Type(), Equals, types.JSONPatchType)
			data, err := patch.Data(obj)
			c.Assert(err, IsNil)
			*sent = append(*sent, string(data))
			obj.SetResourceVersion("8")
			return nil
		},
	})
}

// A status write sends the status whole, with the resourceVersion it was
// computed from as its precondition; the object takes the resourceVersion
// the server returned.
func (s *PatchStatusSuite) TestStatusWithResourceVersion(c *C) {
	var sent []string
	before := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7", Labels: map[string]string{"a": "b"}}}
	before.Status.Phase = v1alpha1.NonAdminPhaseNew
	before.Status.QueueInfo = &v1alpha1.QueueInfo{EstimatedQueuePosition: 3}
	obj := before.DeepCopy()
	obj.Status.Phase = v1alpha1.NonAdminPhaseCreated
	obj.Status.QueueInfo = nil // dropped: sent as absent, not merged
	c.Assert(engine.PatchStatus(context.Background(), patchRecorder(c, &sent), obj, before), IsNil)
	c.Assert(sent, DeepEquals, []string{`[{"op":"replace","path":"/metadata/resourceVersion","value":"7"},` +
		`{"op":"add","path":"/status","value":{"phase":"Created"}}]`})
	c.Assert(obj.ResourceVersion, Equals, "8")
}

// Metadata changes are not sent (the status subresource ignores them): a
// change to metadata alone sends nothing.
func (s *PatchStatusSuite) TestMetadataNotSent(c *C) {
	var sent []string
	before := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7"}}
	obj := before.DeepCopy()
	obj.Labels = map[string]string{"x": "y"}
	c.Assert(engine.PatchStatus(context.Background(), patchRecorder(c, &sent), obj, before), IsNil)
	c.Assert(sent, HasLen, 0)
	obj.Status.Phase = v1alpha1.NonAdminPhaseCreated
	c.Assert(engine.PatchStatus(context.Background(), patchRecorder(c, &sent), obj, before), IsNil)
	c.Assert(sent, DeepEquals, []string{`[{"op":"replace","path":"/metadata/resourceVersion","value":"7"},` +
		`{"op":"add","path":"/status","value":{"phase":"Created"}}]`})
}

// Nothing is sent when nothing changed, and a change to an object read
// without a resourceVersion is refused rather than sent unlocked.
func (s *PatchStatusSuite) TestNoChangeNoLock(c *C) {
	var sent []string
	before := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7"}}
	c.Assert(engine.PatchStatus(context.Background(), patchRecorder(c, &sent), before.DeepCopy(), before), IsNil)
	c.Assert(sent, HasLen, 0)
	before.ResourceVersion = ""
	obj := before.DeepCopy()
	obj.Status.Phase = v1alpha1.NonAdminPhaseCreated
	err := engine.PatchStatus(context.Background(), patchRecorder(c, &sent), obj, before)
	c.Assert(err, ErrorMatches, `patching status of t/b: the object has no resourceVersion to lock on`)
	c.Assert(sent, HasLen, 0)
}
