package controllers

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// PriorityInFlight is the work-queue priority of a NAC object woken because
// a Velero object it waits on changed (a Backup finished, a DownloadRequest
// was served, a Restore ended). New operations (priority 0) and the
// initial list after a restart (handler.LowPriority, -100) wait behind it.
//
// Why: under a burst, an operation that has already started holds a whole
// plan in the cache and, while verifying, a DownloadRequest whose URL
// Velero expires (10 minutes after serving it; the bench plays 1 minute).
// Taken in arrival order behind thousands of new NABs, its wake-up can come
// after the expiry, and the phase must ask Velero again: three more writes
// for nothing, and more running plans at once. Finishing what started first
// keeps both bounded by what Velero does at once, not by the burst.
const PriorityInFlight = 10

// inFlight wraps h, a handler that maps a Velero object of the OADP
// namespace to the NAC object waiting on it, so that the requests its update
// and delete events add take PriorityInFlight (when the controller's queue
// is controller-runtime's priority queue; otherwise it changes nothing).
// Create and generic events keep h's priority: a creation tells the waiter
// nothing it did not do itself, and an initial list stays low. An event
// that changed nothing (a resync, handler.LowPriority) stays low too.
func inFlight(h handler.EventHandler) handler.EventHandler { return inFlightHandler{h: h} }

type inFlightHandler struct{ h handler.EventHandler }

func (i inFlightHandler) Create(ctx context.Context, e event.TypedCreateEvent[client.Object], q requests) {
	i.h.Create(ctx, e, q)
}

func (i inFlightHandler) Update(ctx context.Context, e event.TypedUpdateEvent[client.Object], q requests) {
	i.h.Update(ctx, e, raised(q))
}

func (i inFlightHandler) Delete(ctx context.Context, e event.TypedDeleteEvent[client.Object], q requests) {
	i.h.Delete(ctx, e, raised(q))
}

func (i inFlightHandler) Generic(ctx context.Context, e event.TypedGenericEvent[client.Object], q requests) {
	i.h.Generic(ctx, e, q)
}

// raised returns q, when it is a priority queue, as one whose additions
// take at least PriorityInFlight (handler.LowPriority ones excepted); any
// other queue as it is.
func raised(q requests) requests {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		return raisedQueue{PriorityQueue: pq}
	}
	return q
}

type raisedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (r raisedQueue) Add(item reconcile.Request) { r.AddWithOpts(priorityqueue.AddOpts{}, item) }

func (r raisedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority != handler.LowPriority && o.Priority < PriorityInFlight {
		o.Priority = PriorityInFlight
	}
	r.PriorityQueue.AddWithOpts(o, items...)
}

// newQueue is every NAC controller's work queue (controller.Options.NewQueue):
// controller-runtime's priority queue, with its rate limiter rl, made
// shutdownSafe.
func newQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) requests {
	pq := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rl })
	return &shutdownSafe{PriorityQueue: pq, done: make(chan struct{})}
}

// shutdownSafe is a priority queue whose Get and GetWithPriority return
// (shutdown true) once it is shut down, even to a worker already waiting.
// controller-runtime v0.21's priority queue leaves such a worker waiting for
// ever (kubernetes-sigs/controller-runtime#3239, fixed upstream by #3337 in
// a release that needs newer Kubernetes libraries), and the manager's stop
// then waits out its whole grace period and fails.
type shutdownSafe struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	once sync.Once
	done chan struct{}
}

// got is one answer of the inner queue's GetWithPriority.
type got struct {
	req      reconcile.Request
	priority int
	shutdown bool
}

// GetWithPriority waits for the next request, or for the queue to be shut
// down. The inner queue is asked from a goroutine of its own, which a shut
// down queue leaves waiting: one per idle worker, once, at the end.
func (q *shutdownSafe) GetWithPriority() (reconcile.Request, int, bool) {
	select {
	case <-q.done:
		return reconcile.Request{}, 0, true
	default:
	}
	ch := make(chan got, 1)
	go func() {
		req, priority, shutdown := q.PriorityQueue.GetWithPriority()
		ch <- got{req: req, priority: priority, shutdown: shutdown}
	}()
	select {
	case g := <-ch:
		return g.req, g.priority, g.shutdown
	case <-q.done:
		return reconcile.Request{}, 0, true
	}
}

// Get is GetWithPriority without the priority.
func (q *shutdownSafe) Get() (reconcile.Request, bool) {
	req, _, shutdown := q.GetWithPriority()
	return req, shutdown
}

// ShutDown shuts the queue down once, waking every waiting worker.
func (q *shutdownSafe) ShutDown() {
	q.once.Do(func() {
		close(q.done)
		q.PriorityQueue.ShutDown()
	})
}

// ShutDownWithDrain is ShutDown, as controller-runtime's own.
func (q *shutdownSafe) ShutDownWithDrain() { q.ShutDown() }
