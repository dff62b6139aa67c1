package controllers

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// backupEvents maps Velero Backup events to reconcile requests: updates and
// deletions wake the Backup's own NonAdminBackup; a Backup that finishes or
// goes also schedules, after the refresh window, every NonAdminBackup whose
// Backup is still unfinished, so their queue positions move up. The
// workqueue keeps the earliest schedule of a key, so a burst of completions
// within one window refreshes each waiting NAB once — not once per
// completion per NAB, as OADP NAC does. (The turns a Backup frees are
// freed's, a watch of their own.)
func (k *backupKind) backupEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	observe := func(obj client.Object) {
		if b, ok := obj.(*velerov1.Backup); ok && k.queue != nil {
			k.queue.Observe(b)
		}
	}
	own := func(obj client.Object, q requests) {
		for _, req := range originOf[*v1alpha1.NonAdminBackup](obj) {
			q.Add(req)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		// A Backup's creation tells its NAB nothing new: the NAB made it (and
		// recorded it in the same reconcile), or — after a rebuild — has no
		// NAB yet; waking the NAB would only cost a reconcile on a stale cache.
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], _ requests) { observe(e.Object) },
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q requests) {
			observe(e.ObjectNew)
			own(e.ObjectNew, q)
			oldB, okOld := e.ObjectOld.(*velerov1.Backup)
			newB, okNew := e.ObjectNew.(*velerov1.Backup)
			if okOld && okNew && !backupFinished(oldB) && backupFinished(newB) {
				k.refreshWaiting(q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q requests) {
			if k.queue != nil {
				k.queue.Forget(e.Object.GetName())
			}
			own(e.Object, q)
			k.refreshWaiting(q)
		},
	}
}

// refreshWaiting wakes, once the refresh window has passed, the
// NonAdminBackups whose shown queue position went stale (phases.PositionStale,
// judged from the in-memory queue when the window ends, so that every
// completion within it counts). While a refresh is already scheduled it does
// nothing: that refresh runs after this completion too.
func (k *backupKind) refreshWaiting(q requests) {
	if k.queue == nil {
		return
	}
	window := k.queueRefreshWindow
	if window <= 0 {
		window = veleroqueue.DefaultRefreshWindow
	}
	now := time.Now()
	k.refreshMu.Lock()
	defer k.refreshMu.Unlock()
	if now.Before(k.refreshAt) {
		return
	}
	k.refreshAt = now.Add(window)
	time.AfterFunc(window, func() {
		for _, key := range k.queue.StaleWaiting() {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	})
}

// turnWaker wakes the operations of one NAC kind whose turn in Velero's
// queue may have come (veleroqueue.Turns.Wake): NonAdminBackups for
// Velero's backup queue, NonAdminRestores for its restore queue.
type turnWaker struct {
	turns *veleroqueue.Turns
	// kind is the NAC kind: NonAdminBackup or NonAdminRestore.
	kind string
}

// turnEvents maps events of the kind's objects to the waiters a change of
// turns may concern: an object that starts or stops waiting for a turn, or
// is admitted, or a waiter deleted. Other status changes wake nobody (the
// For watch sees spec changes only).
func (w turnWaker) turnEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q requests) {
			oldObj, okOld := e.ObjectOld.(v1alpha1.Object)
			newObj, okNew := e.ObjectNew.(v1alpha1.Object)
			if okOld && okNew && veleroqueue.TurnState(oldObj) != veleroqueue.TurnState(newObj) {
				w.wake(ctx, q, newObj.GetNamespace())
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q requests) {
			if obj, ok := e.Object.(v1alpha1.Object); ok && veleroqueue.TurnState(obj) == 1 {
				w.wake(ctx, q, obj.GetNamespace())
			}
		},
	}
}

// wake adds the waiters veleroqueue.Turns.Wake names after a change in
// namespace ns. A cache error is logged: the waiters' timed recheck is the
// safety net.
func (w turnWaker) wake(ctx context.Context, q requests, ns string) {
	if w.turns == nil {
		return
	}
	keys, err := w.turns.Wake(ctx, w.kind, ns)
	if err != nil {
		log.FromContext(ctx).Error(err, "finding the operations whose turn came", "kind", w.kind)
		return
	}
	for _, k := range keys {
		q.Add(reconcile.Request{NamespacedName: k})
	}
}
