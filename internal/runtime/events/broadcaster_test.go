package events_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/events"
)

type EventsSuite struct{}

var _ = Suite(&EventsSuite{})

// countingSink records when each event is written, on now (nil: the
// clock).
// Writes wait for gate when it is set; fail maps an involved object's name
// to the errors its next writes return.
type countingSink struct {
	mu      sync.Mutex
	now     func() time.Time
	gate    chan struct{}
	fail    map[string][]error
	written []time.Time
	evs     []*corev1.Event
}

func (s *countingSink) add(e *corev1.Event) (*corev1.Event, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if errs := s.fail[e.InvolvedObject.Name]; len(errs) > 0 {
		s.fail[e.InvolvedObject.Name] = errs[1:]
		return nil, errs[0]
	}
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	s.written = append(s.written, now())
	s.evs = append(s.evs, e.DeepCopy())
	return e, nil
}

func (s *countingSink) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.written...)
}

func (s *countingSink) events() []*corev1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*corev1.Event(nil), s.evs...)
}
func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.add(e) }
func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.add(e) }
func (s *countingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.add(e)
}
func (s *countingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.written)
}

// fakeClock is a flowcontrol.Clock whose Sleep moves its time on at once.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

func (f *fakeClock) Sleep(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// --event-qps paces what reaches the API server. On a fake clock, 30 events
// at once with a limit of 10 per second after a burst of 5 are written 5 at
// once, then one every 100ms — all of them, the last at 2.5s. No wall-clock
// rate: the times are the limiter's own, the same on any machine.
// NewBroadcaster puts that limiter, with its qps and burst, in front
// of its sink when qps > 0 and none otherwise.
func (s *EventsSuite) TestEventRateLimit(c *C) {
	start := time.Unix(1000, 0)
	clk := &fakeClock{t: start}
	sink := &countingSink{now: clk.Now}
	b := events.NewBroadcasterWith(flowcontrol.NewTokenBucketRateLimiterWithClock(10, 5, clk), 0, nil)
	b.StartRecordingToSink(sink)
	defer b.Shutdown()
	rec := b.NewRecorder(testScheme, corev1.EventSource{Component: "test"})
	for i := range 30 {
		rec.Eventf(eventNAB(fmt.Sprintf("n%d", i)), corev1.EventTypeNormal, "EndedPhase", "event %d", i)
	}
	eventually(c, 10*time.Second, func() (bool, string) {
		return sink.count() == 30, fmt.Sprintf("%d of 30 events written", sink.count())
	})
	var at, want []time.Duration
	for i, t := range sink.times() {
		at = append(at, t.Sub(start))
		want = append(want, time.Duration(max(0, i-4))*100*time.Millisecond)
	}
	c.Check(at, DeepEquals, want)

	// The wiring: qps and burst reach the limiter (at 0.001 per second, no
	// token comes back while the test runs: exactly the burst passes).
	lim := events.NewBroadcaster(0.001, 5, 0).Limiter()
	c.Assert(lim, NotNil)
	c.Check(lim.QPS(), Equals, float32(0.001))
	passed := 0
	for range 10 {
		if lim.TryAccept() {
			passed++
		}
	}
	c.Check(passed, Equals, 5)
	c.Check(events.NewBroadcaster(0, 0, 0).Limiter(), IsNil)
}

// A burst larger than the queue delays the reconciles that record events; it
// loses none. client-go's broadcaster drops past 1,000 queued events: here
// 8 recorders send 1,504 while the sink is stalled, with room for 10. They
// wait (at most 10 queued and one in the writer's hands), and once the sink
// moves every event is written, each recorder's in order, none dropped, and
// the wait shows in nacflow_event_queue_wait_seconds_total.
func (s *EventsSuite) TestEventsNeverDropped(c *C) {
	sink := &countingSink{gate: make(chan struct{})}
	b := events.NewBroadcasterWith(nil, 10, nil)
	b.StartRecordingToSink(sink)
	defer b.Shutdown()
	rec := b.NewRecorder(testScheme, corev1.EventSource{Component: "test"})
	dropped0, waited0 := droppedTotal(), events.QueueWaitSeconds()
	var recorded atomic.Int64
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nab := eventNAB(fmt.Sprintf("p%d", p))
			for i := range 1504 / 8 {
				// Distinct reasons: the correlator would merge more than
				// 100 alike events of one object.
				rec.Eventf(nab, corev1.EventTypeNormal, fmt.Sprintf("Step%d", i), "%d", i)
				recorded.Add(1)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	c.Check(recorded.Load() <= 11, Equals, true, Commentf("%d events recorded past a stalled sink with room for 10", recorded.Load()))
	close(sink.gate)
	wg.Wait()
	eventually(c, 10*time.Second, func() (bool, string) {
		return sink.count() == 1504, fmt.Sprintf("%d of 1504 events written", sink.count())
	})
	c.Check(droppedTotal()-dropped0, Equals, 0.0)
	c.Check(events.QueueWaitSeconds() > waited0, Equals, true)
	last := map[string]int{}
	for _, e := range sink.events() {
		var i int
		_, _ = fmt.Sscan(e.Message, &i)
		prev, seen := last[e.InvolvedObject.Name]
		c.Check(!seen || i == prev+1, Equals, true, Commentf("%s: %d after %d", e.InvolvedObject.Name, i, prev))
		last[e.InvolvedObject.Name] = i
	}
	c.Check(len(last), Equals, 8)
}

// What is not written is counted, by reason: the API server's refusal
// (rejected, not retried); a transient failure is retried (client-go's
// delays: the first randomised below 10 s, then 10 s) and lands; past the
// correlator's per-object burst (200) events are rate_limited.
func (s *EventsSuite) TestEventDropsCounted(c *C) {
	var sleeps []time.Duration
	sink := &countingSink{fail: map[string][]error{
		"gone":  {apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("namespace gone is terminating"))},
		"flaky": {errors.New("connection refused"), errors.New("connection refused")},
	}}
	b := events.NewBroadcasterWith(nil, 0, func(d time.Duration) bool { sleeps = append(sleeps, d); return true })
	b.StartRecordingToSink(sink)
	defer b.Shutdown()
	rec := b.NewRecorder(testScheme, corev1.EventSource{Component: "test"})
	rejected0, limited0, written0 := events.Dropped("rejected"), events.Dropped("rate_limited"), events.Written()

	rec.Event(eventNAB("gone"), corev1.EventTypeNormal, "EndedPhase", "refused")
	rec.Event(eventNAB("flaky"), corev1.EventTypeNormal, "EndedPhase", "retried")
	eventually(c, 10*time.Second, func() (bool, string) {
		return sink.count() == 1, fmt.Sprintf("%d written", sink.count())
	})
	c.Check(sink.events()[0].Message, Equals, "retried")
	c.Check(events.Dropped("rejected")-rejected0, Equals, 1.0)
	c.Assert(sleeps, HasLen, 2)
	c.Check(sleeps[0] <= 10*time.Second, Equals, true)
	c.Check(sleeps[1], Equals, 10*time.Second)

	spam := eventNAB("spam")
	for i := range 250 {
		rec.Eventf(spam, corev1.EventTypeNormal, "EndedPhase", "spam %d", i)
	}
	eventually(c, 10*time.Second, func() (bool, string) {
		got := events.Written() - written0 - 1 + events.Dropped("rate_limited") - limited0
		return got == 250, fmt.Sprintf("%v of 250 written or dropped", got)
	})
	limited := events.Dropped("rate_limited") - limited0
	c.Check(limited >= 48 && limited <= 50, Equals, true, Commentf("rate_limited %v", limited))
}

// Shutdown writes what is queued before it returns; an event recorded after
// it is dropped (reason shutdown), not written.
func (s *EventsSuite) TestEventShutdownDrains(c *C) {
	sink := &countingSink{gate: make(chan struct{})}
	b := events.NewBroadcasterWith(nil, 0, nil)
	b.StartRecordingToSink(sink)
	rec := b.NewRecorder(testScheme, corev1.EventSource{Component: "test"})
	for i := range 20 {
		rec.Eventf(eventNAB(fmt.Sprintf("n%d", i)), corev1.EventTypeNormal, "EndedPhase", "%d", i)
	}
	shut := make(chan struct{})
	go func() { b.Shutdown(); close(shut) }()
	time.Sleep(50 * time.Millisecond)
	close(sink.gate)
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
		c.Fatal("Shutdown did not return")
	}
	c.Check(sink.count(), Equals, 20)
	shutdown0 := events.Dropped("shutdown")
	rec.Event(eventNAB("late"), corev1.EventTypeNormal, "EndedPhase", "late")
	c.Check(events.Dropped("shutdown")-shutdown0, Equals, 1.0)
	c.Check(sink.count(), Equals, 20)
}

func eventNAB(name string) *v1alpha1.NonAdminBackup {
	return &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

func droppedTotal() float64 {
	n := 0.0
	for _, r := range []string{"rate_limited", "rejected", "write_failed", "shutdown"} {
		n += events.Dropped(r)
	}
	return n
}

// The queue holds only what the recorder was given; the event written from
// it is the one client-go's recorder makes: named after the object and the
// time, in the object's namespace ("default" for one without),
// with the reference, source, annotations and one count.
func (s *EventsSuite) TestEventWrittenAsRecorded(c *C) {
	sink := &countingSink{}
	b := events.NewBroadcasterWith(nil, 0, nil)
	b.StartRecordingToSink(sink)
	defer b.Shutdown()
	rec := b.NewRecorder(testScheme, corev1.EventSource{Component: "nacflow-nab", Host: "node-1"})
	before := time.Now()
	rec.AnnotatedEventf(eventNAB("b1"), map[string]string{"k": "v"}, corev1.EventTypeWarning, "PhaseFailed", "phase %s failed", "validate")
	rec.Event(&v1alpha1.Blueprint{ObjectMeta: metav1.ObjectMeta{Name: "no-namespace", UID: "uid-bp"}}, corev1.EventTypeNormal, "Compiled", "ok")
	eventually(c, 5*time.Second, func() (bool, string) { return sink.count() == 2, fmt.Sprintf("%d of 2 written", sink.count()) })
	evs := sink.events()
	e := evs[0]
	c.Check(e.Name, Matches, `b1\.[0-9a-f]+`)
	c.Check(e.Namespace, Equals, "ns")
	c.Check(e.Annotations, DeepEquals, map[string]string{"k": "v"})
	c.Check(e.InvolvedObject.Kind, Equals, "NonAdminBackup")
	c.Check(e.InvolvedObject.APIVersion, Equals, v1alpha1.GroupVersion.String())
	c.Check(e.InvolvedObject.Name, Equals, "b1")
	c.Check(e.InvolvedObject.UID, Equals, types.UID("uid-b1"))
	c.Check([]string{e.Type, e.Reason, e.Message}, DeepEquals, []string{"Warning", "PhaseFailed", "phase validate failed"})
	c.Check(e.Count, Equals, int32(1))
	c.Check(e.FirstTimestamp, Equals, e.LastTimestamp)
	c.Check(e.FirstTimestamp.Time.Before(before.Add(-time.Second)), Equals, false)
	c.Check(e.Source, Equals, corev1.EventSource{Component: "nacflow-nab", Host: "node-1"})
	c.Check([]string{e.ReportingController, e.ReportingInstance}, DeepEquals, []string{"nacflow-nab", "node-1"})
	c.Check(evs[1].Namespace, Equals, metav1.NamespaceDefault)
	c.Check(evs[1].InvolvedObject.Namespace, Equals, "")
}
