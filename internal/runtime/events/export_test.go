package events

import (
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/flowcontrol"
)

// NewBroadcasterWith returns a Broadcaster pacing its writes
// with lim (nil: none), holding queueSize events, and sleeping between
// retries with sleep (false: stop retrying).
func NewBroadcasterWith(lim flowcontrol.RateLimiter, queueSize int, sleep func(time.Duration) bool) *Broadcaster {
	b := newBroadcaster(lim, queueSize)
	if sleep != nil {
		b.sleep = func(d time.Duration, _ <-chan struct{}) bool { return sleep(d) }
	}
	return b
}

// Queued returns the value of nacflow_events_queued.
func Queued() float64 { return testutil.ToFloat64(eventsQueued) }

// Written returns the value of nacflow_events_written_total.
func Written() float64 { return testutil.ToFloat64(eventsWritten) }

// Dropped returns nacflow_events_dropped_total{reason}.
func Dropped(reason string) float64 {
	return testutil.ToFloat64(eventsDropped.WithLabelValues(reason))
}

// QueueWaitSeconds returns nacflow_event_queue_wait_seconds_total.
func QueueWaitSeconds() float64 { return testutil.ToFloat64(eventsBlocked) }
