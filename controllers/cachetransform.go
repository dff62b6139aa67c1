package controllers

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Bounds of the plan-spec interner: distinct specs kept per (blueprint,
// generation, action), and in all. Past them a spec is simply not shared.
const (
	maxSpecsPerKey = 4
	maxSpecs       = 256
)

// planSpecInterner makes the cached NAC objects whose status.plan.spec is
// the same snapshot share one copy of it. Every NonAdminBackup of a
// blueprint generation snapshots the same action (DESIGN.md §3: the plan is
// frozen when the operation starts), so at 10,000 NABs the cache held
// 10,000 equal copies. Sharing is safe because the cache never hands out
// its objects (controller-runtime deep-copies every Get and List, and the
// two lists that do not — backup sync, metrics — only read).
type planSpecInterner struct {
	mu    sync.Mutex
	byKey map[string][]*v1alpha1.BlueprintAction
	n     int
}

// intern replaces p.Spec with the shared copy equal to it, registering it
// as the shared copy when it is new.
func (in *planSpecInterner) intern(p *v1alpha1.PlanStatus) {
	if p == nil || p.Spec == nil {
		return
	}
	key := p.Blueprint + "\x00" + p.BlueprintGeneration + "\x00" + p.Action
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, shared := range in.byKey[key] {
		if shared == p.Spec {
			return
		}
		if equality.Semantic.DeepEqual(shared, p.Spec) {
			p.Spec = shared
			return
		}
	}
	if in.n < maxSpecs && len(in.byKey[key]) < maxSpecsPerKey {
		if in.byKey == nil {
			in.byKey = map[string][]*v1alpha1.BlueprintAction{}
		}
		in.byKey[key] = append(in.byKey[key], p.Spec)
		in.n++
	}
}

// planHolder is a NAC kind with a plan (engine.Object without the import).
type planHolder interface {
	GetPlan() *v1alpha1.PlanStatus
}

// cacheTransform returns the transform every cached object goes through:
// managedFields are dropped (never read), and NAC objects share their
// plan's spec snapshot with the other objects of the same one.
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	interner := &planSpecInterner{}
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		if h, ok := obj.(planHolder); ok {
			interner.intern(h.GetPlan())
		}
		return obj, nil
	}
}
