package phases

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// deleteReferring asks the NAC objects of list's kind in namespace ns that
// refer to the object being deleted (refers) to delete themselves: each
// one's own finalize action then runs. list is read through the cache. An
// object already gone is fine, and so is a delete error tolerated reports
// (nil: none). It returns how many it asked. Errors: the API server's,
// naming the kind (retryable).
func deleteReferring(ctx context.Context, op *engine.Operation, ns string, list client.ObjectList,
	refers func(client.Object) bool, tolerated func(error) bool) (int, error) {
	kind := fmt.Sprintf("%T", list)
	if k, ok := v1alpha1.KindOf(list); ok {
		kind = k.Kind
	}
	if err := op.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("listing %ss in %s: %w", kind, ns, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return 0, fmt.Errorf("listing %ss in %s: %w", kind, ns, err)
	}
	deleted := 0
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || !refers(obj) {
			continue
		}
		if err := op.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil && (tolerated == nil || !tolerated(err)) {
			return 0, fmt.Errorf("deleting %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
		deleted++
	}
	return deleted, nil
}
