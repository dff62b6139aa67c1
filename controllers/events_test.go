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

// countingSink records when each event is written.
type countingSink struct {
	mu      sync.Mutex
	written []time.Time
}

func (s *countingSink) add(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = append(s.written, time.Now())
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

// --event-qps paces what reaches the API server: 30 events at once, a limit
// of 10 per second after a burst of 5, are written over about 2.5 s, all of
// them; with no limit they go at once.
func (s *EventsSuite) TestEventRateLimit(c *C) {
	for _, tc := range []struct {
		qps            float32
		burst          int
		atOneSecondMax int
	}{{10, 5, 16}, {0, 0, 30}} {
		b := controllers.NewEventBroadcaster(tc.qps, tc.burst)
		sink := &countingSink{}
		b.StartRecordingToSink(sink)
		rec := b.NewRecorder(testScheme, corev1.EventSource{Component: "test"})
		start := time.Now()
		for i := range 30 {
			nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("n%d", i), UID: "u"}}
			rec.Eventf(nab, corev1.EventTypeNormal, "StartedAction", "event %d", i)
		}
		time.Sleep(time.Second - time.Since(start))
		n := sink.count()
		c.Check(n <= tc.atOneSecondMax, Equals, true, Commentf("qps %v: %d written after 1 s", tc.qps, n))
		if tc.qps == 0 {
			eventually(c, time.Second, func() (bool, string) { return sink.count() == 30, fmt.Sprint(sink.count()) })
		} else {
			c.Check(n >= 10, Equals, true, Commentf("qps %v: only %d written after 1 s", tc.qps, n))
			eventually(c, 4*time.Second, func() (bool, string) { return sink.count() == 30, fmt.Sprint(sink.count()) })
		}
		b.Shutdown()
	}
}
