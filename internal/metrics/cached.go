package metrics

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// eachCached calls f with each cached object of obj's kind, in no order,
// without copying it: f must neither modify an object nor keep it.
//
// It walks the informer's store when informers gives one (a kind watched
// cluster-wide: the NAC kinds); else, and when informers is nil, it lists
// into list from r with client.UnsafeDisableDeepCopy. A List copies every
// object's struct into list's Items, a slice as large as the cache's share
// of that kind, which a pass that only counts does not need.
//
// It returns the error of getting the informer (the cache not started, or
// ctx done before it synced) or of the List.
func eachCached(ctx context.Context, informers cache.Informers, r client.Reader, obj client.Object, list client.ObjectList, f func(client.Object)) error {
	if informers != nil {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
			for _, item := range s.GetStore().List() {
				if o, ok := item.(client.Object); ok {
					f(o)
				}
			}
			return nil
		}
	}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	return meta.EachListItem(list, func(o runtime.Object) error {
		if co, ok := o.(client.Object); ok {
			f(co)
		}
		return nil
	})
}
