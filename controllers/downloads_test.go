package controllers_test

import (
	"bytes"
	"compress/gzip"
	"context"
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
	"github.com/nacflow/nacflow/internal/localstack/veleroplay"
	"github.com/nacflow/nacflow/internal/policy/endpoint"
)

// veleroDownloads plays Velero's DownloadRequest controller and object
// store for every suite of the package (there is no Velero here): it
// processes each DownloadRequest within about 100ms, as Velero does, with a
// URL to a local HTTP server that serves the file gzipped, and an
// expiration 10 minutes on (2 seconds for a target whose NAC object's name
// starts with "expiring-"). A backup's resource list is, unless a test set
// one (setResourceList), the namespace and a ConfigMap app-config in it; a
// log names the Velero object. A target whose NAC object's name starts with
// "signed-" gets a URL signed as S3 signs one, to a store that does not
// resolve: the failure a tenant's broken or hostile store gives.
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

// list returns the resource list a test set for backup (setResourceList).
func (d *downloadStore) list(backup string) (map[string][]string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.lists[backup]
	return l, ok
}

// start serves files and processes DownloadRequests until ctx ends.
func (d *downloadStore) start(ctx context.Context) {
	d.srv = httptest.NewServer(&veleroplay.Files{Reader: testClient, List: d.list, Source: "test"})
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

// signedQuery is the query of a pre-signed S3 URL; its credential and
// signature must never show in a status or an event.
const signedQuery = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASIGNEDLEAK%2F20261127%2Fus-east-1%2Fs3%2Faws4_request" +
	"&X-Amz-Date=20261127T000000Z&X-Amz-Expires=600&X-Amz-SignedHeaders=host&X-Amz-Signature=5ecre7519a7e5ecre7519a7e"

// endpoints are the endpoint rules of the tests' controllers: the default
// rules, plus this store's own address (on loopback, which they deny), as
// make run allows its store.
func (d *downloadStore) endpoints(c *C) endpoint.Policy {
	p, err := endpoint.Lists{AllowHosts: []string{d.srv.Listener.Addr().String()}}.Compile("")
	c.Assert(err, IsNil)
	return p
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
		url := fmt.Sprintf("%s/%s/%s/%s", d.srv.URL, dr.Namespace, dr.Spec.Target.Kind, dr.Spec.Target.Name)
		if strings.HasPrefix(origin, "signed-") || strings.HasPrefix(dr.Annotations[v1alpha1.NabOriginNameAnnotation], "signed-") {
			url = "http://store.unresolvable.test:9000/bucket/backups/" + dr.Spec.Target.Name + "?" + signedQuery
		}
		dr.Status = velerov1.DownloadRequestStatus{
			Phase:       velerov1.DownloadRequestPhaseProcessed,
			DownloadURL: url,
			Expiration:  &metav1.Time{Time: time.Now().Add(expiry)},
		}
		_ = testClient.Patch(ctx, dr, client.MergeFrom(before)) // no status subresource in Velero's CRD
	}
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
