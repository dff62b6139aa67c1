package controllers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// NewEventBroadcasterWith returns an EventBroadcaster pacing its writes
// with lim (nil: none), holding queueSize events, and sleeping between
// retries with sleep (false: stop retrying).
func NewEventBroadcasterWith(lim flowcontrol.RateLimiter, queueSize int, sleep func(time.Duration) bool) *EventBroadcaster {
	b := newEventBroadcaster(lim, queueSize)
	if sleep != nil {
		b.sleep = func(d time.Duration, _ <-chan struct{}) bool { return sleep(d) }
	}
	return b
}

// EventsQueued returns the value of nacflow_events_queued.
func EventsQueued() float64 { return testutil.ToFloat64(eventsQueued) }

// EventsWritten returns the value of nacflow_events_written_total.
func EventsWritten() float64 { return testutil.ToFloat64(eventsWritten) }

// EventsDropped returns nacflow_events_dropped_total{reason}.
func EventsDropped(reason string) float64 {
	return testutil.ToFloat64(eventsDropped.WithLabelValues(reason))
}

// EventQueueWaitSeconds returns nacflow_event_queue_wait_seconds_total.
func EventQueueWaitSeconds() float64 { return testutil.ToFloat64(eventsBlocked) }

// NewTurnsFakeClient returns a fake client holding objs with the cache
// indexes VeleroTurns reads, for unit tests of the turns.
func NewTurnsFakeClient(scheme *runtime.Scheme, objs ...client.Object) client.WithWatch {
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.NonAdminBackup{})
	for _, i := range turnsIndexes {
		b = b.WithIndex(i.obj, i.field, i.value)
	}
	return b.Build()
}
