package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/controllers"
	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
)

// listRequests records the list requests of ConfigMaps a rest.Config
// sends (its query), watches apart.
type listRequests struct {
	mu      sync.Mutex
	queries []string
}

func (l *listRequests) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps") && r.URL.Query().Get("watch") != "true" {
				l.mu.Lock()
				l.queries = append(l.queries, r.URL.RawQuery)
				l.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

func (l *listRequests) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.queries...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The manager's cache reads a kind's full list in pages from the API
// server (unless the page size is 0), at the newest version (never the watch cache's whole answer to
// resourceVersion=0), each object transformed; the watch then goes on from
// the list's version: an object made after the sync reaches the cache.
func (s *ControllerSuite) TestCacheListsInPages(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := createNamespace(c, "paged")
	// The test's own ConfigMaps (the namespace also gets kube-root-ca.crt
	// from kube-controller-manager, at a moment of its own).
	mine := map[string]string{"test": ns}
	for i := range 23 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%02d", i), Labels: mine}}
		c.Assert(testClient.Create(ctx, cm), IsNil)
	}
	count := func(reader client.Reader) (int, bool) {
		list := &corev1.ConfigMapList{}
		c.Assert(reader.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(mine)), IsNil)
		stripped := true
		for _, cm := range list.Items {
			stripped = stripped && cm.ManagedFields == nil
		}
		return len(list.Items), stripped
	}
	start := func(opts cache.Options, reqs *listRequests) cache.Cache {
		opts.Scheme = testScheme
		informers, err := cache.New(reqs.wrap(testCfg), opts)
		c.Assert(err, IsNil)
		go func() { _ = informers.Start(ctx) }()
		c.Assert(informers.WaitForCacheSync(ctx), Equals, true)
		n, stripped := count(informers) // starts the ConfigMap informer and waits for its sync
		c.Check(n, Equals, 23)
		c.Check(stripped, Equals, true, Commentf("every listed object went through the transform"))
		return informers
	}

	// As cmd/nac builds it: one page of DefaultPageSize, from etcd.
	var asIs listRequests
	start(controllers.CacheOptions(s.oadp, pagedlist.DefaultPageSize), &asIs)
	c.Assert(asIs.get(), Not(HasLen), 0)
	for _, q := range asIs.get() {
		c.Check(q, Matches, fmt.Sprintf(".*limit=%d.*", pagedlist.DefaultPageSize))
		c.Check(strings.Contains(q, "resourceVersion=0"), Equals, false, Commentf("%s", q))
	}

	// --cache-list-page-size 0: client-go's own list, answered whole by
	// the watch cache.
	var whole listRequests
	start(controllers.CacheOptions(s.oadp, 0), &whole)
	c.Assert(whole.get(), Not(HasLen), 0)
	c.Check(strings.Contains(whole.get()[0], "resourceVersion=0"), Equals, true, Commentf("%s", whole.get()[0]))

	// Pages of 5: five requests, each going on from the last.
	var paged listRequests
	opts := controllers.CacheOptions(s.oadp, pagedlist.DefaultPageSize)
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	opts.NewInformer = pagedlist.NewInformer(opts.DefaultTransform, 5)
	informers := start(opts, &paged)
	queries := paged.get()
	c.Assert(queries, HasLen, 5, Commentf("%q", queries))
	for i, q := range queries {
		c.Check(strings.Contains(q, "limit=5"), Equals, true, Commentf("%s", q))
		c.Check(strings.Contains(q, "continue="), Equals, i > 0, Commentf("%s", q))
	}
	c.Assert(testClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after", Labels: mine}}), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		n, stripped := count(informers)
		return n == 24 && stripped, fmt.Sprint(n, stripped)
	})
	c.Check(paged.get(), HasLen, 5, Commentf("the new object came by the watch, not a second list"))
}
