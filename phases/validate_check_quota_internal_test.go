package phases

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

type QuotaSuite struct{}

var _ = Suite(&QuotaSuite{})

// held is a NonAdminBackup of namespace q holding a backup of bytes on
// location ("" the default).
func held(name, location string, bytes int64) *v1alpha1.NonAdminBackup {
	n := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "q", Name: name, UID: types.UID(name)},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{StorageLocation: location}}}
	n.Status.Usage = &v1alpha1.BackupUsage{TotalBytes: bytes, StorageLocation: v1alpha1.LocationName(location)}
	return n
}

// check runs CheckQuota for a new NAB on location with args, over objs.
func (s *QuotaSuite) check(c *C, args CheckQuotaArgs, location string, objs ...client.Object) (*v1alpha1.NonAdminBackup, error, []string) {
	sc := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(objs...).Build()
	rec := record.NewFakeRecorder(10)
	nab := held("new", location, 0)
	nab.Status.Usage = nil
	_, err := (&CheckQuota{tools: tools{recorder: rec}}).Run(context.Background(), &engine.Operation{Object: nab, Client: cl, OADPNamespace: "oadp", UUID: "u"}, nab, &args)
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	return nab, err, events
}

// TestMaxBackups: with maxBackups 2 a third backup is refused, naming the
// figure, the limit and what to delete; backups being deleted or whose
// Velero Backup failed do not count; the second is accepted with a
// warning (past 80 %).
func (s *QuotaSuite) TestMaxBackups(c *C) {
	deleting := held("deleting", "", 10)
	deleting.Spec.DeleteBackup = true
	failed := held("failed", "", 0)
	failed.Status.VeleroBackup = &v1alpha1.VeleroBackup{Name: "f", Status: &velerov1.BackupStatus{Phase: velerov1.BackupPhaseFailed}}
	q := CheckQuotaArgs{Quota: Quota{MaxBackups: 2}}
	nab, err, _ := s.check(c, q, "", held("a", "", 10), held("b", "", 10), deleting, failed)
	c.Check(engine.IsTerminal(err), Equals, true)
	c.Check(err, ErrorMatches, `.*quota exceeded: namespace q holds 2 backups, the most its quota allows \(maxBackups 2\): delete one \(spec.deleteBackup: true on a NonAdminBackup\) to make room`)
	cond := meta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonQuotaExceeded)

	_, err, events := s.check(c, q, "", held("a", "", 10), deleting, failed)
	c.Check(err, IsNil)
	c.Check(events, DeepEquals, []string{"Warning QuotaNearlyReached namespace q holds 2 of the 2 backups its quota allows (maxBackups) with this one"})
}

// TestMaxBytes: maxBytes counts status.usage.totalBytes, per namespace and
// per location.
func (s *QuotaSuite) TestMaxBytes(c *C) {
	gi := resource.MustParse("1Gi")
	_, err, _ := s.check(c, CheckQuotaArgs{Quota: Quota{MaxBytes: &gi}}, "", held("a", "", 600<<20), held("b", "mine", 500<<20))
	c.Check(err, ErrorMatches, `.*quota exceeded: namespace q's backups take 1100Mi, the most its quota allows \(maxBytes 1Gi\).*`)
	per := CheckQuotaArgs{Locations: map[string]Quota{"mine": {MaxBytes: &gi}}}
	_, err, events := s.check(c, per, "default", held("a", "", 600<<20), held("b", "mine", 900<<20))
	c.Check(err, IsNil, Commentf("the default location has no quota"))
	c.Check(events, HasLen, 0)
	_, err, _ = s.check(c, per, "mine", held("a", "", 600<<20), held("b", "mine", 1<<30))
	c.Check(err, ErrorMatches, `.*quota exceeded: location mine of namespace q's backups take 1Gi.*`)
	_, err, events = s.check(c, CheckQuotaArgs{}, "", held("a", "", 1<<40))
	c.Check(err, IsNil, Commentf("no quota"))
	c.Check(events, HasLen, 0)
}

// TestObjectSize: the size comes from a one-byte range request's
// Content-Range, from Content-Length where the store ignores ranges, and is
// counted where it sends neither.
func (s *QuotaSuite) TestObjectSize(c *C) {
	body := strings.Repeat("x", 12345)
	ranged := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "b.tar.gz", time.Time{}, strings.NewReader(body))
	}))
	defer ranged.Close()
	n, err := objectSize(context.Background(), loopbackStore, ranged.URL)
	c.Check(err, IsNil)
	c.Check(n, Equals, int64(12345))
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 5 {
			_, _ = w.Write([]byte(body))
			w.(http.Flusher).Flush()
		}
	}))
	defer chunked.Close()
	n, err = objectSize(context.Background(), loopbackStore, chunked.URL)
	c.Check(err, IsNil)
	c.Check(n, Equals, int64(5*12345))
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	_, err = objectSize(context.Background(), loopbackStore, missing.URL)
	c.Check(err, ErrorMatches, `the object store answered 404 Not Found`)
	for _, h := range []string{"bytes 0-0/*", "bytes 0-0", "bytes 0-0/-3", "bytes 0-0/x"} {
		_, err := contentRangeSize(h)
		c.Check(err, NotNil, Commentf(h))
	}
}
