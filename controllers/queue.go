package controllers

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// DefaultQueueRefreshWindow is how long the queue positions of waiting
// NonAdminBackups may lag behind a completion, and so the window in which a
// burst of completions costs one refresh.
const DefaultQueueRefreshWindow = 5 * time.Second

// BackupQueue is an in-memory index of the unfinished Velero Backups of the
// OADP namespace, kept current by the Backup watch. It answers queue
// positions without listing (and copying) the namespace's Backups on every
// reconcile. Besides the map by name it keeps the pending Backups sorted by
// (creation time, name), so a position is a binary search — O(log pending) —
// and refreshing every waiting NAB costs O(pending · log pending), not
// O(pending²) (make bench at 10,000 NABs). It implements engine.QueueEstimator
// and is safe for concurrent use.
type BackupQueue struct {
	mu      sync.RWMutex
	pending map[string]queued
	// order holds the pending Backups sorted by (created, name).
	order []queueKey
}

// queued is one unfinished Backup: when it was created and, for a NAC
// Backup, the NonAdminBackup it belongs to.
type queued struct {
	created time.Time
	nab     types.NamespacedName
}

// queueKey orders pending Backups: by creation time, then name.
type queueKey struct {
	created time.Time
	name    string
}

func (k queueKey) compare(o queueKey) int {
	if c := k.created.Compare(o.created); c != 0 {
		return c
	}
	return strings.Compare(k.name, o.name)
}

// NewBackupQueue returns an empty queue index.
func NewBackupQueue() *BackupQueue { return &BackupQueue{pending: map[string]queued{}} }

// Observe records b: pending while unfinished, forgotten once finished.
func (q *BackupQueue) Observe(b *velerov1.Backup) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if v1alpha1.BackupFinished(b.Status.Phase) {
		q.remove(b.Name)
		return
	}
	e := queued{created: b.CreationTimestamp.Time, nab: types.NamespacedName{
		Namespace: b.Annotations[v1alpha1.NabOriginNamespaceAnnotation], Name: b.Annotations[v1alpha1.NabOriginNameAnnotation]}}
	if old, ok := q.pending[b.Name]; ok && old.created.Equal(e.created) {
		q.pending[b.Name] = e
		return
	}
	q.remove(b.Name)
	q.pending[b.Name] = e
	k := queueKey{created: e.created, name: b.Name}
	i, _ := slices.BinarySearchFunc(q.order, k, queueKey.compare)
	q.order = slices.Insert(q.order, i, k)
}

// remove drops the Backup called name from both indexes; q.mu must be held.
func (q *BackupQueue) remove(name string) {
	old, ok := q.pending[name]
	if !ok {
		return
	}
	delete(q.pending, name)
	if i, found := slices.BinarySearchFunc(q.order, queueKey{created: old.created, name: name}, queueKey.compare); found {
		q.order = slices.Delete(q.order, i, i+1)
	}
}

// waiting returns the NonAdminBackups whose Backups are pending.
func (q *BackupQueue) waiting() []types.NamespacedName {
	q.mu.RLock()
	defer q.mu.RUnlock()
	out := make([]types.NamespacedName, 0, len(q.pending))
	for _, e := range q.pending {
		if e.nab.Namespace != "" && e.nab.Name != "" {
			out = append(out, e.nab)
		}
	}
	return out
}

// Len returns how many Backups are pending (Velero's queue depth).
func (q *BackupQueue) Len() int {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return len(q.pending)
}

// Forget drops the Backup called name (deleted).
func (q *BackupQueue) Forget(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.remove(name)
}

// Position implements engine.QueueEstimator: 1 + the pending Backups created
// before (created, name). O(log pending), no allocation.
func (q *BackupQueue) Position(name string, created time.Time) int {
	q.mu.RLock()
	defer q.mu.RUnlock()
	k := queueKey{created: created, name: name}
	i, _ := slices.BinarySearchFunc(q.order, k, queueKey.compare)
	// The Backup itself never counts, even when asked with another time.
	if e, ok := q.pending[name]; ok && (queueKey{created: e.created, name: name}).compare(k) < 0 {
		i--
	}
	return 1 + i
}

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
		},
	}
}

// refreshWaiting schedules, after the refresh window, the NonAdminBackups
// whose Velero Backups have not finished, from the in-memory queue (no
// list). While a refresh is already scheduled it does nothing: that refresh
// runs after this completion too, and the workqueue keeps the earliest
// schedule of a key anyway.
func (r *NonAdminBackupReconciler) refreshWaiting(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if r.Queue == nil {
		return
	}
	window := r.QueueRefreshWindow
	if window <= 0 {
		window = DefaultQueueRefreshWindow
	}
	now := time.Now()
	r.refreshMu.Lock()
	if now.Before(r.refreshAt) {
		r.refreshMu.Unlock()
		return
	}
	r.refreshAt = now.Add(window)
	r.refreshMu.Unlock()
	for _, key := range r.Queue.waiting() {
		r.refresh.Store(key, true)
		q.AddAfter(reconcile.Request{NamespacedName: key}, window)
	}
}
