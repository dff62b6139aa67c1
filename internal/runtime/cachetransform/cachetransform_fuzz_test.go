package cachetransform_test

import (
	"encoding/json"
	"reflect"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/cachetransform"
)

// FuzzCacheTransform: Velero Backups in the cache include those Velero
// synced from tenants' buckets, whatever their metadata, spec and status
// hold, and NonAdminBackups mirror them. The cache transform never panics
// (a panic in an informer stops the manager) and never changes what the
// API server holds: an object reads back equal to its copy, managedFields
// aside, however many objects shared its strings before.
func FuzzCacheTransform(f *testing.F) {
	f.Add(`{"metadata":{"name":"b","labels":{"a":"b"},"finalizers":["x"]},"spec":{"includedNamespaces":["team"]},"status":{"phase":"Completed"}}`,
		`{"metadata":{"name":"n"},"spec":{"backupSpec":{"includedNamespaces":["team"]}},"status":{"veleroBackup":{"spec":{},"status":{"phase":"New"}},"plan":{"phases":[{"name":"a"}]}}}`)
	f.Add(`{"metadata":{"managedFields":[{"manager":"m"}]},"status":{"startTimestamp":"2026-01-01T00:00:00Z","validationErrors":["e"]}}`,
		`{"status":{"conditions":[{"type":"A","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"R","message":"m"}],"plan":{"spec":{"phases":[]},"deferPhase":{}}}}`)
	f.Add(`null`, `null`)
	f.Fuzz(func(t *testing.T, backupJSON, nabJSON string) {
		transform := cachetransform.New()
		b, n := &velerov1.Backup{}, &v1alpha1.NonAdminBackup{}
		if json.Unmarshal([]byte(backupJSON), b) != nil || json.Unmarshal([]byte(nabJSON), n) != nil {
			return
		}
		for _, obj := range []interface {
			runtime.Object
			metav1.Object
		}{b, n, b.DeepCopy(), n.DeepCopy()} {
			obj.SetManagedFields(nil)
			want := obj.DeepCopyObject()
			got, err := transform(obj)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normal(t, got), normal(t, want)) {
				t.Fatalf("the transform changed %T:\n got %s\nwant %s", obj, normal(t, got), normal(t, want))
			}
		}
	})
}

// normal returns obj's JSON: equal JSON is what the cache must preserve
// (shared pointers and slice capacities may differ).
func normal(t *testing.T, obj any) string {
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
