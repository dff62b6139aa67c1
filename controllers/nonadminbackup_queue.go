package controllers

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// backupEvents maps Velero Backup events to reconcile requests: updates and
// deletions wake the Backup's own NonAdminBackup; a Backup that finishes or goes also
// schedules, after the refresh window, every NonAdminBackup whose Backup is
// still unfinished, so their queue positions move up. The workqueue keeps the
// earliest schedule of a key, so a burst of completions within one window
// refreshes each waiting NAB once — not once per completion per NAB, as OADP
// NAC does.
func (r *NonAdminBackupReconciler) backupEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	own := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if b, ok := obj.(*velerov1.Backup); ok && r.Queue != nil {
			r.Queue.Observe(b)
		}
		for _, req := range r.backupToNAB(context.Background(), obj) {
			q.Add(req)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		// A Backup's creation tells its NAB nothing new: the NAB made it (and
		// recorded it in the same reconcile), or — after a rebuild — has no
		// NAB yet; waking the NAB would only cost a reconcile on a stale cache.
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if b, ok := e.Object.(*velerov1.Backup); ok && r.Queue != nil {
				r.Queue.Observe(b)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			own(e.ObjectNew, q)
			oldB, okOld := e.ObjectOld.(*velerov1.Backup)
			newB, okNew := e.ObjectNew.(*velerov1.Backup)
			if okOld && okNew && !v1alpha1.BackupFinished(oldB.Status.Phase) && v1alpha1.BackupFinished(newB.Status.Phase) {
				r.refreshWaiting(ctx, q)
				if ns := veleroqueue.UnfinishedOrigin(oldB); ns != "" {
					r.wakeTurns(ctx, q, ns)
				}
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if r.Queue != nil {
				r.Queue.Forget(e.Object.GetName())
			}
			for _, req := range r.backupToNAB(ctx, e.Object) {
				q.Add(req)
			}
			r.refreshWaiting(ctx, q)
			if b, ok := e.Object.(*velerov1.Backup); ok {
				if ns := veleroqueue.UnfinishedOrigin(b); ns != "" {
					r.wakeTurns(ctx, q, ns)
				}
			}
		},
	}
}

// refreshWaiting wakes, once the refresh window has passed, the
// NonAdminBackups whose shown queue position went stale (phases.PositionStale,
// judged from the in-memory queue when the window ends, so that every
// completion within it counts). While a refresh is already scheduled it does
// nothing: that refresh runs after this completion too.
func (r *NonAdminBackupReconciler) refreshWaiting(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if r.Queue == nil {
		return
	}
	window := r.QueueRefreshWindow
	if window <= 0 {
		window = veleroqueue.DefaultRefreshWindow
	}
	now := time.Now()
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	if now.Before(r.refreshAt) {
		return
	}
	r.refreshAt = now.Add(window)
	time.AfterFunc(window, func() {
		for _, key := range r.Queue.StaleWaiting() {
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
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldObj, okOld := e.ObjectOld.(v1alpha1.Object)
			newObj, okNew := e.ObjectNew.(v1alpha1.Object)
			if okOld && okNew && veleroqueue.TurnState(oldObj) != veleroqueue.TurnState(newObj) {
				w.wake(ctx, q, newObj.GetNamespace())
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if obj, ok := e.Object.(v1alpha1.Object); ok && veleroqueue.TurnState(obj) == 1 {
				w.wake(ctx, q, obj.GetNamespace())
			}
		},
	}
}

// restoreEvents maps Velero Restore events to the NonAdminRestores whose
// turn may have come: a tenant's Restore that finishes or goes frees a
// place of its namespace.
func (w turnWaker) restoreEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldR, okOld := e.ObjectOld.(*velerov1.Restore)
			newR, okNew := e.ObjectNew.(*velerov1.Restore)
			if okOld && okNew && !v1alpha1.RestoreFinished(oldR.Status.Phase) && v1alpha1.RestoreFinished(newR.Status.Phase) {
				if ns := veleroqueue.UnfinishedRestoreOrigin(oldR); ns != "" {
					w.wake(ctx, q, ns)
				}
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if r, ok := e.Object.(*velerov1.Restore); ok {
				if ns := veleroqueue.UnfinishedRestoreOrigin(r); ns != "" {
					w.wake(ctx, q, ns)
				}
			}
		},
	}
}

// wake adds the waiters veleroqueue.Turns.Wake names after a change in
// namespace ns. A cache error is logged: the waiters' timed recheck is the
// safety net.
func (w turnWaker) wake(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], ns string) {
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

// wakeTurns wakes the NonAdminBackups whose turn may have come after a
// change in namespace ns.
func (r *NonAdminBackupReconciler) wakeTurns(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], ns string) {
	turnWaker{turns: r.Turns, kind: "NonAdminBackup"}.wake(ctx, q, ns)
}
