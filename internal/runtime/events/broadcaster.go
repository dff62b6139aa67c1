// Package events delivers nacflow's Kubernetes events: a broadcaster that
// paces writes to the API server without dropping what it is given
// (Broadcaster), and the buffer a reconcile keeps its events in until its
// status write has landed (Buffer).
package events

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nacflow/nacflow/internal/policy/redact"
)

// Event delivery defaults (--event-qps, --event-burst, --event-queue-size).
// Events reach the API server at most this fast: a bound on a flood, set
// above what the reconciles produce (a reconcile writes at most one Normal
// event per object it moves), so that a wave's events keep pace with it
// instead of piling up in memory: at kubelet's 50 per second a large wave
// ends holding megabytes of events, and writing them later does not make
// the wave faster (docs/performance.md). What the rate holds back waits in
// the queue; a full queue makes the reconcile that records an event wait
// for room (it is never dropped). An event takes about 1 KiB queued.
const (
	DefaultQPS       = 200
	DefaultBurst     = 200
	DefaultQueueSize = 10000
)

// eventDrainTimeout bounds how long Shutdown writes what is still queued.
const eventDrainTimeout = 5 * time.Second

// Retries of one event write that failed for a reason that may pass (the API
// server unreachable, a timeout): client-go's own figures (12 tries, 10 s
// apart, the first sleep randomised).
const (
	eventMaxTries   = 12
	eventRetryDelay = 10 * time.Second
)

// Reasons of nacflow_events_dropped_total.
const (
	dropRateLimited = "rate_limited" // the correlator's per-object spam filter
	dropRejected    = "rejected"     // the API server refused it (malformed, namespace terminating)
	dropWriteFailed = "write_failed" // eventMaxTries failed writes
	dropShutdown    = "shutdown"     // still queued when the process stopped
)

var (
	eventsQueued = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "nacflow_events_queued",
		Help: "Events recorded and not yet written to the API server (paced by --event-qps).",
	})
	eventsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nacflow_events_written_total",
		Help: "Event creates and patches the API server accepted.",
	})
	eventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nacflow_events_dropped_total",
		Help: "Events never written, by reason: rate_limited (over the per-object burst), rejected (by the API server), write_failed (after retries), shutdown (queued at exit). A full queue delays, it does not drop.",
	}, []string{"reason"})
	eventsBlocked = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nacflow_event_queue_wait_seconds_total",
		Help: "Seconds reconciles waited for room in a full event queue (--event-queue-size).",
	})
)

func init() {
	metrics.Registry.MustRegister(eventsQueued, eventsWritten, eventsDropped, eventsBlocked)
	for _, r := range []string{dropRateLimited, dropRejected, dropWriteFailed, dropShutdown} {
		eventsDropped.WithLabelValues(r)
	}
}

// Broadcaster is a record.EventBroadcaster that delivers every event it
// is given, in order, to one sink at a paced rate. client-go's broadcaster
// hands events to its sink through fixed 1,000-event channels and drops
// what does not fit (watch.DropIfChannelFull), so pacing its writes lost
// most of a 1,000-operation wave's events. Here a bounded FIFO sits in front
// of a single writer: Event blocks while the queue is full, so a burst slows
// the reconciles that record events instead of losing their story. The
// writer runs client-go's EventCorrelator (aggregation, per-object spam
// filter) and retries as client-go does. Drops — only the correlator's,
// the API server's refusals, exhausted retries and what is queued at
// shutdown — are counted in nacflow_events_dropped_total.
type Broadcaster struct {
	limiter    flowcontrol.RateLimiter // nil: no pacing
	correlator *record.EventCorrelator
	capacity   int
	sleep      func(time.Duration, <-chan struct{}) bool

	mu       sync.Mutex
	notEmpty *sync.Cond
	notFull  *sync.Cond
	queue    []queuedEvent // FIFO; queue[head:] waits
	head     int
	closed   bool
	sink     record.EventSink
	handlers map[int]func(*corev1.Event)
	nextID   int
	stop     chan struct{} // closed by Shutdown: retries give up
	done     chan struct{} // closed when the writer returns
}

var _ record.EventBroadcaster = (*Broadcaster)(nil)

// NewBroadcaster returns a broadcaster writing at most qps events per
// second (bursts of burst; qps <= 0: no pacing), holding at most queueSize
// events (<= 0: DefaultQueueSize) before Event waits. Its correlator
// is sized for phase plans: client-go's defaults drop events past 25 per
// object within 5 minutes and merge more than 10 alike ones (same reason)
// into one, which would cut the story kubectl describe tells of a NAB.
func NewBroadcaster(qps float32, burst, queueSize int) *Broadcaster {
	var lim flowcontrol.RateLimiter
	if qps > 0 {
		lim = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	}
	return NewBroadcasterWithLimiter(lim, queueSize)
}

// NewBroadcasterWithLimiter is NewBroadcaster with the writer paced by lim
// (nil: no pacing): the writer calls lim.Accept before each write, so a
// limiter that blocks holds every event in the queue.
func NewBroadcasterWithLimiter(lim flowcontrol.RateLimiter, queueSize int) *Broadcaster {
	return newBroadcaster(lim, queueSize)
}

func newBroadcaster(lim flowcontrol.RateLimiter, queueSize int) *Broadcaster {
	if queueSize <= 0 {
		queueSize = DefaultQueueSize
	}
	b := &Broadcaster{
		limiter: lim,
		correlator: record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{
			BurstSize:            200, // events per object before the spam filter
			QPS:                  1,   // refill, events per second per object
			MaxEvents:            100, // alike events before they are aggregated
			MaxIntervalInSeconds: 600,
			// Objects remembered by the spam filter and the aggregator
			// (client-go: 4,096). Their keys hold the message: at 4,096 the
			// caches took 10 MiB; an object pushed out starts afresh.
			LRUCacheSize: 1024,
		}),
		capacity: queueSize,
		sleep: func(d time.Duration, stop <-chan struct{}) bool {
			select {
			case <-stop:
				return false
			case <-time.After(d):
				return true
			}
		},
		handlers: map[int]func(*corev1.Event){},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	b.notEmpty = sync.NewCond(&b.mu)
	b.notFull = sync.NewCond(&b.mu)
	return b
}

// Limiter returns the rate limiter in front of the sink, nil when none.
func (b *Broadcaster) Limiter() flowcontrol.RateLimiter { return b.limiter }

// Queued returns how many events wait in this broadcaster's queue (at most
// its queue size; the one being written is not counted).
func (b *Broadcaster) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) - b.head
}

// StartRecordingToSink implements record.EventBroadcaster: it starts the
// writer. Only the first sink is used; later calls return an empty watch.
// Stopping the returned watch shuts the broadcaster down.
func (b *Broadcaster) StartRecordingToSink(sink record.EventSink) watch.Interface {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sink != nil || b.closed {
		return watch.NewEmptyWatch()
	}
	b.sink = sink
	go b.write()
	return stopper(b.Shutdown)
}

// StartEventWatcher implements record.EventBroadcaster: handler sees each
// event, in the writer's goroutine, before it is written.
func (b *Broadcaster) StartEventWatcher(handler func(*corev1.Event)) watch.Interface {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.nextID
	b.nextID++
	b.handlers[id] = handler
	return stopper(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.handlers, id)
	})
}

// StartLogging implements record.EventBroadcaster.
func (b *Broadcaster) StartLogging(logf func(format string, args ...any)) watch.Interface {
	return b.StartEventWatcher(func(e *corev1.Event) {
		logf("Event(%#v): type: '%v' reason: '%v' %v", e.InvolvedObject, e.Type, e.Reason, e.Message)
	})
}

// StartStructuredLogging implements record.EventBroadcaster.
func (b *Broadcaster) StartStructuredLogging(verbosity klog.Level) watch.Interface {
	logger := klog.Background().V(int(verbosity))
	return b.StartEventWatcher(func(e *corev1.Event) {
		logger.Info("Event occurred", "object", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name),
			"kind", e.InvolvedObject.Kind, "type", e.Type, "reason", e.Reason, "message", e.Message)
	})
}

// NewRecorder implements record.EventBroadcaster.
func (b *Broadcaster) NewRecorder(scheme *runtime.Scheme, source corev1.EventSource) record.EventRecorderLogger {
	return &eventRecorder{b: b, scheme: scheme, source: source, logger: klog.Background()}
}

// Shutdown implements record.EventBroadcaster: new events are dropped
// (reason shutdown), what is queued is still written for up to 5 s, the
// rest is dropped. It returns when the writer has stopped, or at most a
// second after the drain ran out of time.
func (b *Broadcaster) Shutdown() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.done
		return
	}
	b.closed = true
	started := b.sink != nil
	b.notEmpty.Broadcast()
	b.notFull.Broadcast()
	b.mu.Unlock()
	if !started {
		b.dropQueued()
		close(b.done)
		return
	}
	select {
	case <-b.done:
	case <-time.After(eventDrainTimeout):
		close(b.stop)
		// A write in flight may hang on an unreachable API server: give
		// it a second, then leave the writer behind.
		select {
		case <-b.done:
		case <-time.After(time.Second):
		}
	}
}

// queuedEvent is an event waiting to be written: only what the recorder
// was given (the reference, reason, message and time: about 310 bytes with
// their strings). A corev1.Event is built from it when its turn comes:
// queued whole, an event takes about 690 bytes, which a wave's events
// waiting for --event-qps would hold many times over.
type queuedEvent struct {
	ref         corev1.ObjectReference
	annotations map[string]string
	eventType   string
	reason      string
	message     string
	at          metav1.Time
	source      *corev1.EventSource
}

// event returns the corev1.Event q stands for, as client-go's recorder
// makes it (its name is the object's and the time's, in nanoseconds).
func (q *queuedEvent) event() *corev1.Event {
	ns := q.ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        util.GenerateEventName(q.ref.Name, q.at.UnixNano()),
			Namespace:   ns,
			Annotations: q.annotations,
		},
		InvolvedObject:      q.ref,
		Reason:              q.reason,
		Message:             q.message,
		FirstTimestamp:      q.at,
		LastTimestamp:       q.at,
		Count:               1,
		Type:                q.eventType,
		Source:              *q.source,
		ReportingController: q.source.Component,
		ReportingInstance:   q.source.Host,
	}
}

// enqueue adds e, waiting while the queue is full. It drops e only after
// Shutdown.
func (b *Broadcaster) enqueue(e queuedEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue)-b.head >= b.capacity && !b.closed {
		start := time.Now()
		for len(b.queue)-b.head >= b.capacity && !b.closed {
			b.notFull.Wait()
		}
		eventsBlocked.Add(time.Since(start).Seconds())
	}
	if b.closed {
		eventsDropped.WithLabelValues(dropShutdown).Inc()
		return
	}
	b.queue = append(b.queue, e)
	eventsQueued.Inc()
	b.notEmpty.Signal()
}

// next returns the oldest queued event and the handlers to show it to; ok
// is false once the broadcaster is shut down and the queue is empty, or
// the drain timed out.
func (b *Broadcaster) next() (e *corev1.Event, handlers []func(*corev1.Event), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.head == len(b.queue) && !b.closed {
		b.notEmpty.Wait()
	}
	if b.head == len(b.queue) || b.stopped() {
		return nil, nil, false
	}
	e = b.queue[b.head].event()
	b.queue[b.head] = queuedEvent{}
	b.head++
	if b.head == len(b.queue) {
		b.queue, b.head = b.queue[:0], 0
	} else if b.head > 1024 && b.head*2 > len(b.queue) {
		// Reclaim the consumed front of a long queue.
		b.queue, b.head = append(b.queue[:0:0], b.queue[b.head:]...), 0
	}
	eventsQueued.Dec()
	b.notFull.Signal()
	for _, h := range b.handlers {
		handlers = append(handlers, h)
	}
	return e, handlers, true
}

func (b *Broadcaster) stopped() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

// dropQueued counts what is still queued as dropped at shutdown.
func (b *Broadcaster) dropQueued() {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.queue) - b.head
	eventsDropped.WithLabelValues(dropShutdown).Add(float64(n))
	eventsQueued.Sub(float64(n))
	b.queue, b.head = nil, 0
}

// write is the writer goroutine: one event at a time, paced, in order.
func (b *Broadcaster) write() {
	defer close(b.done)
	defer b.dropQueued()
	for {
		e, handlers, ok := b.next()
		if !ok {
			return
		}
		for _, h := range handlers {
			h(e)
		}
		b.record(e)
	}
}

// record runs e through the correlator and writes it, retrying as
// client-go's recordToSink does.
func (b *Broadcaster) record(e *corev1.Event) {
	result, err := b.correlator.EventCorrelate(e)
	if err != nil {
		klog.Background().Error(err, "Correlating event")
	}
	if result.Skip {
		eventsDropped.WithLabelValues(dropRateLimited).Inc()
		return
	}
	if b.limiter != nil {
		b.limiter.Accept()
	}
	for tries := 1; ; tries++ {
		done, dropReason := b.writeOnce(result.Event, result.Patch)
		if done {
			if dropReason != "" {
				eventsDropped.WithLabelValues(dropReason).Inc()
			}
			return
		}
		if tries >= eventMaxTries {
			klog.Background().Error(nil, "Unable to write event (retry limit exceeded)", "reason", e.Reason, "object", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name))
			eventsDropped.WithLabelValues(dropWriteFailed).Inc()
			return
		}
		delay := eventRetryDelay
		if tries == 1 {
			delay = time.Duration(float64(delay) * rand.Float64())
		}
		if !b.sleep(delay, b.stop) {
			eventsDropped.WithLabelValues(dropShutdown).Inc()
			return
		}
	}
}

// writeOnce creates e (or patches it when the correlator aggregated it into
// an earlier one). done is false when the write may succeed if retried;
// dropReason names why a finished write did not land.
func (b *Broadcaster) writeOnce(e *corev1.Event, patch []byte) (done bool, dropReason string) {
	var written *corev1.Event
	var err error
	update := e.Count > 1
	if update {
		written, err = b.sink.Patch(e, patch)
	}
	if !update || util.IsKeyNotFoundError(err) {
		e.ResourceVersion = ""
		written, err = b.sink.Create(e)
	}
	if err == nil {
		b.correlator.UpdateState(written)
		eventsWritten.Inc()
		return true, ""
	}
	var construction *restclient.RequestConstructionError
	var status *apierrors.StatusError
	switch {
	case errors.As(err, &construction):
		klog.Background().Error(err, "Unable to construct event (will not retry)", "reason", e.Reason)
		return true, dropRejected
	case errors.As(err, &status):
		if !apierrors.IsAlreadyExists(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			klog.Background().Error(err, "Server rejected event (will not retry)", "reason", e.Reason)
		}
		return true, dropRejected
	}
	klog.Background().V(1).Info("Unable to write event (will retry)", "err", err.Error())
	return false, ""
}

// eventRecorder makes events as client-go's recorder does and queues them.
type eventRecorder struct {
	b      *Broadcaster
	scheme *runtime.Scheme
	source corev1.EventSource
	logger klog.Logger
}

var _ record.EventRecorderLogger = (*eventRecorder)(nil)

func (r *eventRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	r.generate(obj, nil, eventType, reason, message)
}

func (r *eventRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.generate(obj, nil, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *eventRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventType, reason, format string, args ...any) {
	r.generate(obj, annotations, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *eventRecorder) WithLogger(logger klog.Logger) record.EventRecorderLogger {
	c := *r
	c.logger = logger
	return &c
}

func (r *eventRecorder) generate(obj runtime.Object, annotations map[string]string, eventType, reason, message string) {
	ref, err := reference.GetReference(r.scheme, obj)
	if err != nil {
		r.logger.Error(err, "Could not construct reference, will not report event", "reason", reason, "message", message)
		return
	}
	if !util.ValidateEventType(eventType) {
		r.logger.Error(nil, "Unsupported event type", "eventType", eventType)
		return
	}
	// Tenants and view users read events: no pre-signed URL or token in
	// one, whoever recorded it (redact.String).
	r.b.enqueue(queuedEvent{ref: *ref, annotations: annotations, eventType: eventType, reason: reason,
		message: redact.String(message), at: metav1.Now(), source: &r.source})
}

// stopper is a watch.Interface whose Stop runs a function once.
type stopper func()

func (s stopper) Stop() { s() }

func (s stopper) ResultChan() <-chan watch.Event {
	c := make(chan watch.Event)
	close(c)
	return c
}
