package controllers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// veleroDownloads plays Velero's DownloadRequest controller and object
// store for every suite of the package (there is no Velero here): it
// processes each DownloadRequest within about 100ms, as Velero does, with a
// URL to a local HTTP server that serves the file gzipped, and an
// expiration 10 minutes on (2 seconds for a target whose NAC object's name
// starts with "expiring-"). A backup's resource list is, unless a test set
// one (setResourceList), the namespace and a ConfigMap app-config in it; a
// log names the Velero object.
var veleroDownloads = &downloadStore{lists: map[string]map[string][]string{}, held: map[string]bool{}}

type downloadStore struct {
	srv   *httptest.Server
	mu    sync.Mutex
	lists map[string]map[string][]string // by Velero Backup name
	held  map[string]bool                // targets whose requests wait
}

// holdDownloads leaves the DownloadRequests for target unprocessed, as a
// busy Velero would, until the returned release is called.
func holdDownloads(target string) (release func()) {
	veleroDownloads.mu.Lock()
	defer veleroDownloads.mu.Unlock()
	veleroDownloads.held[target] = true
	return func() {
		veleroDownloads.mu.Lock()
		defer veleroDownloads.mu.Unlock()
		delete(veleroDownloads.held, target)
	}
}

// setResourceList makes backup's resource list list.
func setResourceList(backup string, list map[string][]string) {
	veleroDownloads.mu.Lock()
	defer veleroDownloads.mu.Unlock()
	veleroDownloads.lists[backup] = list
}

// start serves files and processes DownloadRequests until ctx ends.
func (d *downloadStore) start(ctx context.Context) {
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	go func() {
		<-ctx.Done()
		d.srv.Close()
	}()
	go func() {
		for ctx.Err() == nil {
			d.processAll(ctx)
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

// processAll sets every unprocessed DownloadRequest of the cluster
// Processed, with a URL /<namespace>/<kind>/<target> and an expiration.
func (d *downloadStore) processAll(ctx context.Context) {
	list := &velerov1.DownloadRequestList{}
	if testClient.List(ctx, list) != nil {
		return
	}
	for i := range list.Items {
		dr := &list.Items[i]
		d.mu.Lock()
		held := d.held[dr.Spec.Target.Name]
		d.mu.Unlock()
		if held || dr.Status.Phase == velerov1.DownloadRequestPhaseProcessed {
			continue
		}
		expiry := 10 * time.Minute
		origin := dr.Annotations[v1alpha1.NadrOriginNameAnnotation]
		if strings.HasPrefix(origin, "expiring-") {
			expiry = 2 * time.Second
		}
		before := dr.DeepCopy()
		dr.Status = velerov1.DownloadRequestStatus{
			Phase:       velerov1.DownloadRequestPhaseProcessed,
			DownloadURL: fmt.Sprintf("%s/%s/%s/%s", d.srv.URL, dr.Namespace, dr.Spec.Target.Kind, dr.Spec.Target.Name),
			Expiration:  &metav1.Time{Time: time.Now().Add(expiry)},
		}
		_ = testClient.Patch(ctx, dr, client.MergeFrom(before)) // no status subresource in Velero's CRD
	}
}

// serve answers GET /<namespace>/<kind>/<target> with the gzipped file.
func (d *downloadStore) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	oadp, kind, target := parts[0], velerov1.DownloadTargetKind(parts[1]), parts[2]
	var body []byte
	switch kind {
	case velerov1.DownloadTargetKindBackupResourceList:
		d.mu.Lock()
		list, ok := d.lists[target]
		d.mu.Unlock()
		if !ok {
			b := &velerov1.Backup{}
			if err := testClient.Get(r.Context(), client.ObjectKey{Namespace: oadp, Name: target}, b); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			ns := b.Annotations[v1alpha1.NabOriginNamespaceAnnotation]
			list = map[string][]string{"v1/Namespace": {ns}, "v1/ConfigMap": {ns + "/app-config"}}
		}
		body, _ = json.Marshal(list)
	case velerov1.DownloadTargetKindBackupLog, velerov1.DownloadTargetKindRestoreLog:
		body = fmt.Appendf(nil, "time=%q level=info msg=\"the log of %s\" logSource=\"test\"\n", time.Now().Format(time.RFC3339), target)
	default:
		body = fmt.Appendf(nil, "{%q: %q}\n", kind, target)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	gz := gzip.NewWriter(w)
	_, _ = gz.Write(body)
	_ = gz.Close()
}

// download GETs url and returns the gunzipped body.
func download(c *C, url string) string {
	resp, err := http.Get(url)
	c.Assert(err, IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, Equals, http.StatusOK)
	raw, err := io.ReadAll(resp.Body)
	c.Assert(err, IsNil)
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	c.Assert(err, IsNil)
	data, err := io.ReadAll(gz)
	c.Assert(err, IsNil)
	return string(data)
}
