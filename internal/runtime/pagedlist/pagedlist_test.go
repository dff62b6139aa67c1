package pagedlist_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
)

func Test(t *testing.T) { TestingT(t) }

type PagedListSuite struct{}

var _ = Suite(&PagedListSuite{})

// server serves n ConfigMaps in pages as the API server does: limit and
// continue honoured, the first page's resourceVersion on every page. It
// records each request's options and keeps each page it sent.
type server struct {
	n       int
	asked   []metav1.ListOptions
	pages   []*corev1.ConfigMapList
	failAt  int // the page (1-based) that fails; 0: none
	watched []metav1.ListOptions
}

func (s *server) lw() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.asked = append(s.asked, o)
			if s.failAt == len(s.asked) {
				return nil, errors.New("the server is gone")
			}
			from := 0
			if o.Continue != "" {
				from, _ = strconv.Atoi(o.Continue)
			}
			to := s.n
			if o.Limit > 0 && from+int(o.Limit) < s.n {
				to = from + int(o.Limit)
			}
			page := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "41"}}
			if len(s.asked) == 1 {
				page.ResourceVersion = "42"
			}
			for i := from; i < to; i++ {
				page.Items = append(page.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("cm-%03d", i), ResourceVersion: strconv.Itoa(i),
					ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}})
			}
			if to < s.n {
				page.Continue = strconv.Itoa(to)
			}
			s.pages = append(s.pages, page)
			return page, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.watched = append(s.watched, o)
			return watch.NewFake(), nil
		},
	}
}

// strip is a transform as the cache's: it drops managedFields and counts.
func strip(calls *int) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		*calls++
		obj.(metav1.Object).SetManagedFields(nil)
		return obj, nil
	}
}

// A reflector's first list (resourceVersion "0", its pager's limit) is
// read in pages of PageSize at the newest version, each object
// transformed, in order, with the first page's resourceVersion.
func (s *PagedListSuite) TestListsInPages(c *C) {
	srv := &server{n: 23}
	calls := 0
	l := &pagedlist.ListerWatcher{Inner: srv.lw(), Transform: strip(&calls), PageSize: 5}
	got, err := l.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "a=b"})
	c.Assert(err, IsNil)

	c.Assert(srv.asked, HasLen, 5)
	for i, o := range srv.asked {
		c.Check(o.ResourceVersion, Equals, "", Commentf("page %d", i+1))
		c.Check(o.Limit, Equals, int64(5))
		c.Check(o.LabelSelector, Equals, "a=b", Commentf("the selector is kept"))
		want := ""
		if i > 0 {
			want = strconv.Itoa(5 * i)
		}
		c.Check(o.Continue, Equals, want)
	}
	lm, err := meta.ListAccessor(got)
	c.Assert(err, IsNil)
	c.Check(lm.GetResourceVersion(), Equals, "42")
	c.Check(lm.GetContinue(), Equals, "")
	items, err := meta.ExtractList(got)
	c.Assert(err, IsNil)
	c.Assert(items, HasLen, 23)
	c.Check(calls, Equals, 23)
	for i, item := range items {
		cm := item.(*corev1.ConfigMap)
		c.Check(cm.Name, Equals, fmt.Sprintf("cm-%03d", i))
		c.Check(cm.ManagedFields, IsNil)
		// A copy of its own: nothing kept points into a page's array.
		page := srv.pages[i/5]
		c.Check(cm == &page.Items[i%5], Equals, false)
	}
}

// A list asked at an older version is read at the newest too; one page
// when everything fits; no transform keeps objects as they came.
func (s *PagedListSuite) TestRelistAndDefaults(c *C) {
	srv := &server{n: 3}
	l := &pagedlist.ListerWatcher{Inner: srv.lw()}
	got, err := l.List(metav1.ListOptions{ResourceVersion: "17", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	c.Assert(err, IsNil)
	c.Assert(srv.asked, HasLen, 1)
	c.Check(srv.asked[0].ResourceVersion, Equals, "")
	c.Check(string(srv.asked[0].ResourceVersionMatch), Equals, "")
	c.Check(srv.asked[0].Limit, Equals, int64(pagedlist.DefaultPageSize))
	items, err := meta.ExtractList(got)
	c.Assert(err, IsNil)
	c.Assert(items, HasLen, 3)
	c.Check(items[0].(*corev1.ConfigMap).ManagedFields, HasLen, 1)

	// An empty kind is an empty list with its version.
	empty := &server{}
	got, err = (&pagedlist.ListerWatcher{Inner: empty.lw()}).List(metav1.ListOptions{})
	c.Assert(err, IsNil)
	items, err = meta.ExtractList(got)
	c.Assert(err, IsNil)
	c.Check(items, HasLen, 0)
	lm, _ := meta.ListAccessor(got)
	c.Check(lm.GetResourceVersion(), Equals, "42")
}

// A page that fails fails the list with the server's error, and a
// transform that fails names the page; nothing partial is returned.
func (s *PagedListSuite) TestErrors(c *C) {
	srv := &server{n: 12, failAt: 2}
	l := &pagedlist.ListerWatcher{Inner: srv.lw(), PageSize: 5}
	got, err := l.List(metav1.ListOptions{})
	c.Check(got, IsNil)
	c.Check(err, ErrorMatches, "the server is gone")

	srv = &server{n: 12}
	seen := 0
	l = &pagedlist.ListerWatcher{Inner: srv.lw(), PageSize: 5, Transform: func(obj any) (any, error) {
		seen++
		if seen == 7 {
			return nil, errors.New("bad object")
		}
		return obj, nil
	}}
	got, err = l.List(metav1.ListOptions{})
	c.Check(got, IsNil)
	c.Check(err, ErrorMatches, "page 2 of the list: transform: bad object")
}

// Watches pass through with the reflector's options unchanged.
func (s *PagedListSuite) TestWatchPassesThrough(c *C) {
	srv := &server{}
	l := &pagedlist.ListerWatcher{Inner: srv.lw()}
	w, err := l.Watch(metav1.ListOptions{ResourceVersion: "42", AllowWatchBookmarks: true})
	c.Assert(err, IsNil)
	w.Stop()
	c.Assert(srv.watched, HasLen, 1)
	c.Check(srv.watched[0].ResourceVersion, Equals, "42")
	c.Check(srv.watched[0].AllowWatchBookmarks, Equals, true)
}

// NewInformer's informer lists through the pages: a synced informer holds
// every object, transformed.
func (s *PagedListSuite) TestInformerSyncsFromPages(c *C) {
	srv := &server{n: 1203}
	calls := 0
	inf := pagedlist.NewInformer(strip(&calls), 0)(srv.lw(), &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.Run(ctx.Done())
	c.Assert(toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced), Equals, true)
	c.Check(inf.GetStore().ListKeys(), HasLen, 1203)
	c.Check(len(srv.pages), Equals, 3, Commentf("pages of %d", pagedlist.DefaultPageSize))
	obj, ok, err := inf.GetStore().GetByKey("cm-1202")
	c.Assert(err, IsNil)
	c.Assert(ok, Equals, true)
	c.Check(obj.(*corev1.ConfigMap).ManagedFields, IsNil)
	c.Check(calls >= 1203, Equals, true, Commentf("%d", calls))
}
