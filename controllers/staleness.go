package controllers

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// readTracker guards against acting on a cached object older than the
// controller's own last write to it. controller-runtime's cache does not
// read its own writes: a reconcile that runs right after another (woken,
// say, by the Velero Backup the first one created) may still see the object
// from before the first one's status patch, and would start the plan again.
// After a reconcile writes, the tracker remembers the resourceVersion it had
// read; a later reconcile that reads that same version knows its cache is
// behind and waits for it (the "expectations" of Kubernetes' ReplicaSet
// controller, kept to one version per object).
type readTracker struct {
	mu    sync.Mutex
	stale map[types.NamespacedName]string
}

// wrote records that a reconcile which read resourceVersion rv of key has
// written to the object since.
func (t *readTracker) wrote(key types.NamespacedName, rv string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stale == nil {
		t.stale = map[types.NamespacedName]string{}
	}
	t.stale[key] = rv
}

// isStale reports whether resourceVersion rv of key is one the controller
// has already written past. Reading any other version clears the record.
func (t *readTracker) isStale(key types.NamespacedName, rv string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.stale[key]
	if ok && old == rv {
		return true
	}
	delete(t.stale, key)
	return false
}

// forget drops key (the object is gone).
func (t *readTracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.stale, key)
}
