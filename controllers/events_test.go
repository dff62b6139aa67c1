package controllers_test

import (
	"fmt"
	"sync"
	"time"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/controllers"
)

type EventsSuite struct{}

var _ = Suite(&EventsSuite{})

// countingSink records when each event is written, on now (nil: the
// clock).
type countingSink struct {
	mu      sync.Mutex
	now     func() time.Time
	written []time.Time
}

func (s *countingSink) add(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	s.written = append(s.written, now())
	return e, nil
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
// NewEventBroadcaster puts that limiter, with its qps and burst, in front
// of its sinks when qps > 0 and none otherwise, and events go through it.
func (s *EventsSuite) TestEventRateLimit(c *C) {
	start := time.Unix(1000, 0)
	clk := &fakeClock{t: start}
	sink := &countingSink{now: clk.Now}
	throttled := controllers.ThrottledSink(sink, 10, 5, clk)
	for i := range 30 {
		_, err := throttled.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("e%d", i)}})
		c.Assert(err, IsNil)
	}
	var at, want []time.Duration
	for i, t := range sink.written {
		at = append(at, t.Sub(start))
		want = append(want, time.Duration(max(0, i-4))*100*time.Millisecond)
	}
	c.Check(at, DeepEquals, want)

	// The wiring: qps and burst reach the limiter (at 0.001 per second, no
	// token comes back while the test runs: exactly the burst passes).
	lim := controllers.EventLimiter(controllers.NewEventBroadcaster(0.001, 5))
	c.Assert(lim, NotNil)
	c.Check(lim.QPS(), Equals, float32(0.001))
	passed := 0
	for range 10 {
		if lim.TryAccept() {
			passed++
		}
	}
	c.Check(passed, Equals, 5)
	c.Check(controllers.EventLimiter(controllers.NewEventBroadcaster(0, 0)), IsNil)

	// Through a broadcaster, limited or not, every event reaches the sink.
	for _, tc := range []struct {
		qps   float32
		burst int
	}{{1000, 5}, {0, 0}} {
		b := controllers.NewEventBroadcaster(tc.qps, tc.burst)
		sink := &countingSink{}
		b.StartRecordingToSink(sink)
		rec := b.NewRecorder(testScheme, corev1.EventSource{Component: "test"})
		for i := range 30 {
			nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("n%d", i), UID: "u"}}
			rec.Eventf(nab, corev1.EventTypeNormal, "StartedAction", "event %d", i)
		}
		eventually(c, 10*time.Second, func() (bool, string) {
			return sink.count() == 30, fmt.Sprintf("qps %v: %d of 30 events written", tc.qps, sink.count())
		})
		b.Shutdown()
	}
}
