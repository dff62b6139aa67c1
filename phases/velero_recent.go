package phases

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recentTTL is how long an object this process created counts as "just
// created" when the cache does not have it yet: far longer than the cache
// normally lags (milliseconds), short enough that an object deleted right
// after its creation is noticed on a later recheck.
const recentTTL = 30 * time.Second

// recentCreates remembers the objects this process created in the last
// recentTTL, so that a phase that waits for one of them right after its
// creation (WaitFor after CreateVeleroBackup, in the same reconcile) does not
// ask the API server whether the cache is merely behind: the answer is known.
// It is the "expectations" idea of Kubernetes' own controllers (ReplicaSet).
// It saves a GET per operation whose create the cache has not seen yet. Safe
// for concurrent use; the zero value is not: use newRecentCreates.
type recentCreates struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[recentKey]time.Time
	// pruned is when expired entries were last dropped: at most once per
	// recentTTL, so adding stays O(1) amortized however many are created.
	pruned time.Time
}

type recentKey struct {
	kind, namespace, name string
}

func newRecentCreates() *recentCreates {
	return &recentCreates{now: time.Now, seen: map[recentKey]time.Time{}}
}

// add records that obj (of the Go type named by kind) was just created.
func (r *recentCreates) add(kind string, obj client.Object) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.pruned) > recentTTL {
		for k, t := range r.seen {
			if now.Sub(t) > recentTTL {
				delete(r.seen, k)
			}
		}
		r.pruned = now
	}
	r.seen[recentKey{kind, obj.GetNamespace(), obj.GetName()}] = now
}

// has reports whether this process created the object kind namespace/name
// within the last recentTTL.
func (r *recentCreates) has(kind, namespace, name string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.seen[recentKey{kind, namespace, name}]
	return ok && r.now().Sub(t) <= recentTTL
}
