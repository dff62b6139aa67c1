package cachetransform_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/json"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/cachetransform"
)

// BenchmarkCachedBytes reports the Go heap, in bytes, that one cached object
// holds once decoded as the informers decode it (sigs.k8s.io/json, case
// sensitive) and passed through New's transform: a NonAdminBackup whose plan
// has ended (testdata/nab-completed.json, compacted) and its Completed Velero
// Backup (testdata/backup-completed.json), each copy with names and UIDs of
// its own as in a real cache. The figure (bytes/object) is the heap's growth
// after a collection, over b.N copies held at once; it is what the cache
// costs per object at scale (docs/performance.md), informer indexes apart.
func BenchmarkCachedBytes(b *testing.B) {
	for _, tc := range []struct {
		file string
		new  func() any
	}{
		{"testdata/nab-completed.json", func() any { return &v1alpha1.NonAdminBackup{} }},
		{"testdata/backup-completed.json", func() any { return &velerov1.Backup{} }},
	} {
		raw, err := os.ReadFile(tc.file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.file, func(b *testing.B) {
			transform := cachetransform.New()
			// Each copy gets its own names and UIDs: the sample's UUIDs and
			// its NAB's name, replaced by ones of the same length.
			uids := [][]byte{[]byte("9577deb5-0a64-580d-a363-18416ab35a5e"), []byte("9b90313e-a2d0-4651-9697-762d0af561d3"),
				[]byte("343d084b-20f5-45a2-968b-4ac4bbcbb4d5")}
			docs := make([][]byte, b.N)
			for i := range docs {
				d := raw
				for j, u := range uids {
					d = bytes.ReplaceAll(d, u, fmt.Appendf(nil, "%08x-0000-4000-8000-%012x", j, i))
				}
				docs[i] = bytes.ReplaceAll(d, []byte(`"sample"`), fmt.Appendf(nil, `"s%05d"`, i%100000))
			}
			held := make([]any, b.N)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for i := range held {
				obj := tc.new()
				if err := json.UnmarshalCaseSensitivePreserveInts(docs[i], obj); err != nil {
					b.Fatal(err)
				}
				if held[i], err = transform(obj); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "bytes/object")
			runtime.KeepAlive(held)
			runtime.KeepAlive(docs)
		})
	}
}
