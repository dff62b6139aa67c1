// Package pagedlist makes an informer's full list cost what its cache
// keeps, not what the API server sends. client-go's reflector (v0.33)
// lists with resourceVersion "0", which the API server's watch cache
// answers whole, ignoring the limit: at 100,000 NonAdminBackups that is
// one response of several hundred MB, decoded in full (managedFields, every
// plan's phases) before the cache's transform shrinks any object. The
// restarted controller's peak was twice its settled size
// (docs/performance.md). The ListerWatcher here reads the list in pages
// from the API server instead and runs each page through the cache's
// transform as it arrives, so at most one page is held decoded in full.
package pagedlist

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// DefaultPageSize is the objects asked for per page: client-go's pager's
// own default. A page of NonAdminBackups is about 3 MB of JSON.
const DefaultPageSize = 500

// ListerWatcher wraps an informer's ListerWatcher: a list is read in pages
// of PageSize objects, each object passed through Transform as its page
// arrives; watches pass through unchanged.
//
// Every list is read from the newest state (resourceVersion "", a
// consistent read), whatever version the reflector asked for: a paged
// read at an older version would need that version still in etcd, and
// the newest state is never older than what the reflector asked for (the
// "not older than" the reflector relies on). The cost is that a restart's
// lists are served by etcd rather than the watch cache.
//
// The list returned is a *metav1.List whose items hold the transformed
// objects themselves (client-go's meta.ExtractList hands them to the
// reflector as they are, without a copy), with the first page's
// resourceVersion, which every later page shares (a continue token reads
// the same snapshot).
type ListerWatcher struct {
	// Inner is the informer's own ListerWatcher.
	Inner toolscache.ListerWatcherWithContext
	// Transform is the cache's transform of the listed kind. The informer
	// runs it again on every listed object, so it must give the same
	// object when given its own output. Nil: objects are kept as decoded.
	Transform toolscache.TransformFunc
	// PageSize is the limit of each page; 0 or less: DefaultPageSize.
	PageSize int64
}

var _ toolscache.ListerWatcher = (*ListerWatcher)(nil)
var _ toolscache.ListerWatcherWithContext = (*ListerWatcher)(nil)

// ListWithContext reads the whole list, page by page, at the newest
// resourceVersion (options' resourceVersion, its match, limit and continue
// are replaced; selectors and timeouts are kept).
//
// Errors: the first page request's error as the API server gave it (an
// expired continue token is such an error: the reflector then lists
// again); an error naming the page when a page is not a list or a
// transform fails.
func (l *ListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	size := l.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	options.ResourceVersion, options.ResourceVersionMatch = "", ""
	options.Limit, options.Continue = size, ""
	out := &metav1.List{}
	for page := 1; ; page++ {
		got, err := l.Inner.ListWithContext(ctx, options)
		if err != nil {
			return nil, err
		}
		lm, err := meta.ListAccessor(got)
		if err != nil {
			return nil, fmt.Errorf("page %d of the list is not a list: %w", page, err)
		}
		if page == 1 {
			out.ResourceVersion = lm.GetResourceVersion()
		}
		// Each item copied out of the page's array, so that the array is
		// freed with the page rather than held by the items kept.
		items, err := meta.ExtractListWithAlloc(got)
		if err != nil {
			return nil, fmt.Errorf("page %d of the list: %w", page, err)
		}
		if out.Items == nil {
			out.Items = make([]runtime.RawExtension, 0, len(items))
		}
		for _, item := range items {
			if l.Transform != nil {
				t, err := l.Transform(item)
				if err != nil {
					return nil, fmt.Errorf("page %d of the list: transform: %w", page, err)
				}
				item = t.(runtime.Object)
			}
			out.Items = append(out.Items, runtime.RawExtension{Object: item})
		}
		if lm.GetContinue() == "" {
			return out, nil
		}
		options.Continue = lm.GetContinue()
	}
}

// WatchWithContext is the inner ListerWatcher's watch.
func (l *ListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return l.Inner.WatchWithContext(ctx, options)
}

// List is ListWithContext without a context.
func (l *ListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), options)
}

// Watch is WatchWithContext without a context.
func (l *ListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), options)
}

// NewInformer returns a constructor for controller-runtime's
// cache.Options.NewInformer: client-go's shared index informer over a
// ListerWatcher that lists in pages of pageSize (0: DefaultPageSize) and
// runs each listed object through transform. transform must be the
// transform the cache sets on every informer it makes (its
// DefaultTransform, with no ByObject transform).
func NewInformer(transform toolscache.TransformFunc, pageSize int64) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		paged := &ListerWatcher{Inner: toolscache.ToListerWatcherWithContext(lw), Transform: transform, PageSize: pageSize}
		return toolscache.NewSharedIndexInformer(paged, obj, resync, indexers)
	}
}
