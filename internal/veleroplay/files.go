// Package veleroplay plays parts of Velero for the tests and the benchmark,
// where no Velero server runs: today the object store behind the URLs of
// its DownloadRequests.
package veleroplay

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Files serves the files of Velero's DownloadRequests: GET
// /<oadp-namespace>/<kind>/<target> answers the gzipped file, as the
// pre-signed URL of Velero's object store would. A backup's resource list is
// List's answer for the target when it has one, else the Backup's origin
// namespace and a ConfigMap app-config in it (read with Reader); a log is one
// line naming the target, with logSource Source; any other file a small JSON
// object naming its kind and target.
type Files struct {
	Reader client.Reader
	// List returns the resource list to serve for the Velero Backup
	// target (nil: always the default).
	List func(target string) (map[string][]string, bool)
	// Source is the log lines' logSource.
	Source string
}

// ServeHTTP implements http.Handler. An unknown Backup is 404.
func (f *Files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	oadp, kind, target := parts[0], velerov1.DownloadTargetKind(parts[1]), parts[2]
	var body []byte
	switch kind {
	case velerov1.DownloadTargetKindBackupResourceList:
		var list map[string][]string
		ok := false
		if f.List != nil {
			list, ok = f.List(target)
		}
		if !ok {
			b := &velerov1.Backup{}
			if err := f.Reader.Get(r.Context(), client.ObjectKey{Namespace: oadp, Name: target}, b); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			ns := b.Annotations[v1alpha1.NabOriginNamespaceAnnotation]
			list = map[string][]string{"v1/Namespace": {ns}, "v1/ConfigMap": {ns + "/app-config"}}
		}
		body, _ = json.Marshal(list)
	case velerov1.DownloadTargetKindBackupLog, velerov1.DownloadTargetKindRestoreLog:
		body = fmt.Appendf(nil, "time=%q level=info msg=\"the log of %s\" logSource=%q\n", time.Now().Format(time.RFC3339), target, f.Source)
	default:
		body = fmt.Appendf(nil, "{%q: %q}\n", kind, target)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	gz := gzip.NewWriter(w)
	_, _ = gz.Write(body)
	_ = gz.Close()
}
