// Package staleness keeps a controller from acting on a cached object older
// than its own last write to it (Tracker).
package staleness

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Tracker guards against acting on a cached object older than the
// controller's own last write to it. controller-runtime's cache does not
// read its own writes: a reconcile that runs right after another (woken,
// say, by the Velero Backup the first one created) may still see the object
// from before the first one's status patch, and would start the plan again.
// After a reconcile writes, the tracker remembers the resourceVersions it
// went past: the one it read and those its own earlier writes produced (a
// finalizer patch before the status patch, say). A later reconcile that
// reads one of them knows its cache is behind and waits (the "expectations"
// of Kubernetes' ReplicaSet controller). Versions are only compared for
// equality, never ordered.
//
// Since status and finalizer writes carry a resourceVersion precondition, a
// stale reconcile could not overwrite anything anyway (its write would
// conflict); the tracker spares it the work and the API calls of re-running
// phases only to have its write refused.
type Tracker struct {
	mu    sync.Mutex
	stale map[types.NamespacedName]written
	// waits counts the stale reads of a key in a row, for the backoff.
	waits map[types.NamespacedName]int
	// swept is when records older than forgetAfter were last dropped.
	swept time.Time
	// now returns the time; nil: time.Now.
	now func() time.Time
}

// written is a record of Wrote: the versions passed, and when.
type written struct {
	passed []string
	at     time.Time
}

// forgetAfter is how long a record is kept when no reconcile reads the
// object again (an object whose operation ended: its last status write
// wakes nobody). The cache catches up within milliseconds, so a record
// this old protects nothing; kept, every object ever written would cost
// one (docs/performance.md).
const forgetAfter = time.Minute

// Backoff of a reconcile that found its cache behind its own last write:
// staleRecheck, doubling per stale read in a row, at most staleRecheckMax.
// Status patches do not wake the controller (they do not change
// metadata.generation), so it must requeue itself; the cache normally
// catches up within milliseconds.
const (
	staleRecheck    = 100 * time.Millisecond
	staleRecheckMax = 5 * time.Second
)

// Wrote records that the versions passed of key are superseded by the
// controller's own later write.
func (t *Tracker) Wrote(key types.NamespacedName, passed ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.now != nil {
		now = t.now()
	}
	if t.stale == nil {
		t.stale = map[types.NamespacedName]written{}
	}
	if now.Sub(t.swept) >= forgetAfter {
		// At most one sweep a minute: O(records) each, amortised over the
		// writes of that minute.
		for k, w := range t.stale {
			if now.Sub(w.at) >= forgetAfter {
				delete(t.stale, k)
				delete(t.waits, k)
			}
		}
		t.swept = now
	}
	t.stale[key] = written{passed: passed, at: now}
}

// IsStale reports whether resourceVersion rv of key is one the controller
// has already written past, and if so how long to wait before looking again
// (staleRecheck doubling per stale read in a row, capped at
// staleRecheckMax). Reading any other version clears the record.
func (t *Tracker) IsStale(key types.NamespacedName, rv string) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, old := range t.stale[key].passed {
		if old == rv {
			if t.waits == nil {
				t.waits = map[types.NamespacedName]int{}
			}
			n := t.waits[key]
			t.waits[key] = n + 1
			return true, min(staleRecheck<<min(n, 16), staleRecheckMax)
		}
	}
	delete(t.stale, key)
	delete(t.waits, key)
	return false, 0
}

// Len returns how many objects have a record (for the tests and the
// memory figures).
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.stale)
}

// Forget drops key (the object is gone).
func (t *Tracker) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.stale, key)
	delete(t.waits, key)
}
