// Package veleroqueue keeps, in memory, what nacflow knows of Velero's
// queue of Backups: the index of unfinished Backups that answers queue
// positions (BackupQueue), and the fair share of the queue between tenant
// namespaces (Turns). Both rebuild from the manager's cache after a
// restart. They implement the interfaces the phases declare
// (phases.QueueEstimator, phases.TurnKeeper).
package veleroqueue

import (
	"slices"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/phases"
)

// DefaultRefreshWindow is how long the queue positions of waiting
// NonAdminBackups may lag behind a completion, and so the window in which a
// burst of completions costs one refresh.
const DefaultRefreshWindow = 5 * time.Second

// BackupQueue is an in-memory index of the unfinished Velero Backups of the
// OADP namespace, kept current by the Backup watch. It answers queue
// positions without listing (and copying) the namespace's Backups on every
// reconcile. Besides the map by name it keeps the pending Backups sorted by
// (creation time, name), so a position is a binary search — O(log pending) —
// and refreshing every waiting NAB costs O(pending · log pending), not
// O(pending²). It implements phases.QueueEstimator and is safe for
// concurrent use.
type BackupQueue struct {
	mu      sync.RWMutex
	pending map[string]queued
	// order holds the pending Backups sorted by (created, name).
	order []queueKey
	// early holds what Record was told before the Backup's watch event
	// indexed it, by Backup name: the phase that creates a Backup records
	// the position its NonAdminBackup shows in the same reconcile, before
	// the cache has seen the Backup. Observe takes it over; at most
	// maxEarlyShown are kept.
	early map[string]earlyShown
}

// earlyShown is a position recorded for a Backup not yet indexed.
type earlyShown struct {
	created time.Time
	pos     int
}

// maxEarlyShown bounds BackupQueue.early. Entries live from a Backup's
// creation to its watch event (milliseconds); past the bound the map starts
// afresh, and a Backup whose entry was dropped only costs its NAB one
// reconcile at the next refresh.
const maxEarlyShown = 4096

// queued is one unfinished Backup: when it was created and, for a NAC
// Backup, the NonAdminBackup it belongs to.
type queued struct {
	created time.Time
	nab     types.NamespacedName
	// shown is the estimatedQueuePosition its NonAdminBackup shows (0:
	// unknown), so a refresh wakes only the NABs whose figure went stale.
	shown int
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
		delete(q.early, b.Name)
		return
	}
	e := queued{created: b.CreationTimestamp.Time, nab: types.NamespacedName{
		Namespace: b.Annotations[v1alpha1.NabOriginNamespaceAnnotation], Name: b.Annotations[v1alpha1.NabOriginNameAnnotation]}}
	if old, ok := q.pending[b.Name]; ok && old.created.Equal(e.created) {
		e.shown = old.shown
		q.pending[b.Name] = e
		return
	}
	q.remove(b.Name)
	if es, ok := q.early[b.Name]; ok {
		delete(q.early, b.Name)
		if es.created.Equal(e.created) {
			e.shown = es.pos
		}
	}
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

// StaleWaiting returns the NonAdminBackups whose pending Backups' shown
// queue position is stale by phases.PositionStale: after one completion in a
// queue of n, O(1) of them (the first phases.ExactPositions and those whose
// figure drifted by a third), not n. O(pending), no allocation per entry
// beyond the result.
func (q *BackupQueue) StaleWaiting() []types.NamespacedName {
	q.mu.RLock()
	defer q.mu.RUnlock()
	var out []types.NamespacedName
	first := 0 // the index of the first Backup created when k was
	for i, k := range q.order {
		if i > 0 && !k.created.Equal(q.order[i-1].created) {
			first = i
		}
		e := q.pending[k.name]
		if e.nab.Namespace != "" && e.nab.Name != "" && phases.PositionStale(e.shown, first+1) {
			out = append(out, e.nab)
		}
	}
	return out
}

// Record implements phases.QueueEstimator: the NonAdminBackup of the
// unfinished Backup called name, created at created, shows position pos.
// It may come before the Backup's watch event: the phase that
// creates the Backup records its first figure at once, and Observe takes it
// over. Without it every NAB of a wave would show as unknown, and the first
// completion would wake all n of them to find nothing to write (a
// reconcile per waiting NAB). It never makes a Backup pending, and a Backup
// indexed with another creation time (deleted and created again under its
// name) keeps what it shows.
func (q *BackupQueue) Record(name string, created time.Time, pos int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.pending[name]; ok {
		if e.created.Equal(created) {
			e.shown = pos
			q.pending[name] = e
		}
		return
	}
	if q.early == nil || len(q.early) >= maxEarlyShown {
		q.early = map[string]earlyShown{}
	}
	q.early[name] = earlyShown{created: created, pos: pos}
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
	delete(q.early, name)
}

// Position implements phases.QueueEstimator: 1 + the pending Backups created
// strictly before created, as OADP NAC counts (GetBackupQueueInfo): Backups
// created in the same second share a place. A Backup's figure thus never
// depends on Backups created after it — a wave's later Backups of the same
// second, which sort before it by name, do not make the figure it recorded
// at creation stale. O(log pending), no allocation.
func (q *BackupQueue) Position(name string, created time.Time) int {
	q.mu.RLock()
	defer q.mu.RUnlock()
	// Names are never empty: this finds the first Backup created at created.
	i, _ := slices.BinarySearchFunc(q.order, queueKey{created: created}, queueKey.compare)
	// The Backup itself never counts, even when asked with another time.
	if e, ok := q.pending[name]; ok && e.created.Before(created) {
		i--
	}
	return 1 + i
}
