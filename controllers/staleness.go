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
// After a reconcile writes, the tracker remembers the resourceVersions it
// went past: the one it read and those its own earlier writes produced (a
// finalizer patch before the status patch, say). A later reconcile that
// reads one of them knows its cache is behind and waits (the "expectations"
// of Kubernetes' ReplicaSet controller). Versions are only compared for
// equality, never ordered.
type readTracker struct {
	mu    sync.Mutex
	stale map[types.NamespacedName][]string
}

// wrote records that the versions passed of key are superseded by the
// controller's own later write.
func (t *readTracker) wrote(key types.NamespacedName, passed ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stale == nil {
		t.stale = map[types.NamespacedName][]string{}
	}
	t.stale[key] = passed
}

// isStale reports whether resourceVersion rv of key is one the controller
// has already written past. Reading any other version clears the record.
func (t *readTracker) isStale(key types.NamespacedName, rv string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, old := range t.stale[key] {
		if old == rv {
			return true
		}
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
