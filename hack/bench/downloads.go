package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/internal/localstack/veleroplay"
)

// Values of -downloads.
const (
	downloadsServed = "served"
	downloadsAbsent = "absent"
)

// downloadService plays Velero's DownloadRequest controller and its object
// store (there is no Velero server in the bench): every DownloadRequest of
// its namespace whose status.phase is "" or New is patched, as soon as its
// watch reports it (well within the ~100 ms Velero takes), to Processed with
// a status.downloadURL on a local HTTP server and an expiration 10 minutes
// on. The server answers GET /<namespace>/<kind>/<target> with a gzipped
// file: a Backup's resource list is its origin namespace and a ConfigMap
// app-config in it (what controllers/downloads_test.go serves in the
// integration suite). Its patches are the bench's, not the controller's:
// patches counts them, so that the write counts can leave them out.
type downloadService struct {
	c       client.WithWatch
	ns      string
	srv     *httptest.Server
	patches atomic.Int64
	// ttl is the expiration set on each processed request; expire, when
	// set, deletes each one ttl after it was processed, as Velero does.
	ttl    time.Duration
	expire bool
	mu     sync.Mutex
	done   map[types.UID]bool // patched already
	todo   chan *velerov1.DownloadRequest
}

// serveDownloads starts the service for the DownloadRequests of namespace ns
// until ctx ends.
func serveDownloads(ctx context.Context, c client.WithWatch, ns string) *downloadService {
	d := newDownloadService(ctx, c, ns, veleroDownloadTTL)
	d.start(ctx)
	return d
}

// veleroDownloadTTL is how long Velero keeps a processed DownloadRequest
// (its URL's expiration; its controller then deletes it).
const veleroDownloadTTL = 10 * time.Minute

// serveDownloadsFor is serveDownloads with ttl as each request's
// expiration, and each request deleted once it expired (Velero's
// DownloadRequest controller).
func serveDownloadsFor(ctx context.Context, c client.WithWatch, ns string, ttl time.Duration) *downloadService {
	d := newDownloadService(ctx, c, ns, ttl)
	d.expire = true
	d.start(ctx)
	return d
}

// newDownloadService returns the service for ns, not started.
func newDownloadService(ctx context.Context, c client.WithWatch, ns string, ttl time.Duration) *downloadService {
	d := &downloadService{c: c, ns: ns, ttl: ttl, done: map[types.UID]bool{}, todo: make(chan *velerov1.DownloadRequest, 1024)}
	d.srv = httptest.NewServer(&veleroplay.Files{Reader: d.c, Source: "bench"})
	go func() {
		<-ctx.Done()
		d.srv.Close()
	}()
	return d
}

// start runs the service until ctx ends: 16 requests processed at a time
// (at 100,000 NABs verifications ask for about 50 a second, and 4 at a
// time fell behind the API server's latency under load).
func (d *downloadService) start(ctx context.Context) {
	for range 16 {
		go d.process(ctx)
	}
	go d.watch(ctx)
}

// Patches returns how many patches the service sent (0 for a nil service:
// downloads absent).
func (d *downloadService) Patches() float64 {
	if d == nil {
		return 0
	}
	return float64(d.patches.Load())
}

// watch lists the namespace's DownloadRequests, then watches them from that
// list, queueing each unprocessed one; a watch that ends (an expired
// resource version, the API server's timeout) starts over with a list.
func (d *downloadService) watch(ctx context.Context) {
	for ctx.Err() == nil {
		list := &velerov1.DownloadRequestList{}
		if err := d.c.List(ctx, list, client.InNamespace(d.ns)); err != nil {
			time.Sleep(time.Second)
			continue
		}
		for i := range list.Items {
			d.offer(ctx, &list.Items[i])
		}
		w, err := d.c.Watch(ctx, &velerov1.DownloadRequestList{},
			&client.ListOptions{Namespace: d.ns, Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				if ev.Type == watch.Error {
					break
				}
				continue
			}
			if dr, ok := ev.Object.(*velerov1.DownloadRequest); ok {
				d.offer(ctx, dr)
			}
		}
		w.Stop()
	}
}

// offer queues dr when Velero would process it: not yet processed, and not
// patched by the service already.
func (d *downloadService) offer(ctx context.Context, dr *velerov1.DownloadRequest) {
	if p := dr.Status.Phase; p != "" && p != velerov1.DownloadRequestPhaseNew {
		return
	}
	d.mu.Lock()
	seen := d.done[dr.UID]
	d.done[dr.UID] = true
	d.mu.Unlock()
	if seen {
		return
	}
	select {
	case d.todo <- dr:
	case <-ctx.Done():
	}
}

// process patches queued DownloadRequests Processed: a merge patch of the
// main resource, as Velero's CRD has no status subresource.
func (d *downloadService) process(ctx context.Context) {
	for {
		var dr *velerov1.DownloadRequest
		select {
		case <-ctx.Done():
			return
		case dr = <-d.todo:
		}
		status := map[string]any{"status": map[string]any{
			"phase":       velerov1.DownloadRequestPhaseProcessed,
			"downloadURL": fmt.Sprintf("%s/%s/%s/%s", d.srv.URL, dr.Namespace, dr.Spec.Target.Kind, dr.Spec.Target.Name),
			"expiration":  metav1.NewTime(time.Now().Add(d.ttl)),
		}}
		data, _ := json.Marshal(status)
		d.patches.Add(1) // counted whatever the answer: the API server counts it too
		obj := &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: dr.Namespace, Name: dr.Name}}
		if err := d.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
			debugf("processing DownloadRequest %s: %v", dr.Name, err)
			continue
		}
		if d.expire {
			// Velero's controller deletes a request once it expired.
			time.AfterFunc(d.ttl, func() {
				if err := d.c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil && ctx.Err() == nil {
					debugf("expiring DownloadRequest %s: %v", obj.Name, err)
				}
			})
		}
	}
}
