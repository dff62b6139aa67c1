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
// namespace and a ConfigMap app-config in it (read with Reader); a
// restore's resource list is its backup's, the namespaced items mapped by
// the Restore's namespaceMapping and every one "(created)"; a log is one
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
		list, err := f.backupList(r, oadp, target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		body, _ = json.Marshal(list)
	case velerov1.DownloadTargetKindRestoreResourceList:
		rs := &velerov1.Restore{}
		if err := f.Reader.Get(r.Context(), client.ObjectKey{Namespace: oadp, Name: target}, rs); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		list, err := f.backupList(r, oadp, rs.Spec.BackupName)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		restored := map[string][]string{}
		for key, items := range list {
			for _, item := range items {
				if ns, name, ok := strings.Cut(item, "/"); ok {
					if to, mapped := rs.Spec.NamespaceMapping[ns]; mapped {
						item = to + "/" + name
					}
				}
				restored[key] = append(restored[key], item+"(created)")
			}
		}
		body, _ = json.Marshal(restored)
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

// backupList returns the resource list of Velero Backup name: List's answer
// when it has one, else the Backup's origin namespace and a ConfigMap
// app-config in it. Errors: reading the Backup.
func (f *Files) backupList(r *http.Request, oadp, name string) (map[string][]string, error) {
	if f.List != nil {
		if list, ok := f.List(name); ok {
			return list, nil
		}
	}
	b := &velerov1.Backup{}
	if err := f.Reader.Get(r.Context(), client.ObjectKey{Namespace: oadp, Name: name}, b); err != nil {
		return nil, err
	}
	ns := b.Annotations[v1alpha1.NabOriginNamespaceAnnotation]
	return map[string][]string{"v1/Namespace": {ns}, "v1/ConfigMap": {ns + "/app-config"}}, nil
}
