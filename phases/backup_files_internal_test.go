package phases

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

type BackupFilesInternalSuite struct{}

var _ = Suite(&BackupFilesInternalSuite{})

// args.timeout counts when set and positive; otherwise the default.
func (s *BackupFilesInternalSuite) TestServeTimeout(c *C) {
	for _, tc := range []struct {
		timeout *metav1.Duration
		want    time.Duration
	}{
		{nil, defaultServeTimeout},
		{&metav1.Duration{}, defaultServeTimeout},
		{&metav1.Duration{Duration: -time.Second}, defaultServeTimeout},
		{&metav1.Duration{Duration: 30 * time.Second}, 30 * time.Second},
	} {
		c.Check(ServeTimeoutArgs{Timeout: tc.timeout}.serveTimeout(), Equals, tc.want, Commentf("%v", tc.timeout))
	}
}

// A request is served once processed with a URL, waited for until it is
// older than the timeout, then given up. The wait is a watched one (Velero's
// answer wakes the phase), unrecorded while the request is new.
func (s *BackupFilesInternalSuite) TestAwaitServed(c *C) {
	request := func(phase velerov1.DownloadRequestPhase, url string, age time.Duration) *velerov1.DownloadRequest {
		dr := &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Name: "dr", CreationTimestamp: metav1.NewTime(time.Now().Add(-age))}}
		dr.Status.Phase, dr.Status.DownloadURL = phase, url
		return dr
	}
	wait, expired := awaitServed(request(velerov1.DownloadRequestPhaseProcessed, "https://x", time.Hour), "the file", time.Minute)
	c.Check(wait, IsNil)
	c.Check(expired, Equals, false)

	wait, expired = awaitServed(request("", "", time.Second), "the contents of Backup b", time.Minute)
	c.Assert(wait, NotNil)
	c.Check(expired, Equals, false)
	c.Check(wait.Message, Equals, "waiting for Velero to serve the contents of Backup b (DownloadRequest dr is not started)")
	c.Check(wait.Wait, Equals, true)
	c.Check(wait.Watched, Equals, true)
	c.Check(wait.Brief, Equals, true, Commentf("a request a second old: Velero serves it in about 100 ms"))
	c.Check(wait.RecheckAfter > 3900*time.Millisecond && wait.RecheckAfter <= 4*time.Second, Equals, true, Commentf("%s: until it is 5 s old", wait.RecheckAfter))

	wait, _ = awaitServed(request("", "", 10*time.Second), "the contents of Backup b", time.Minute)
	c.Assert(wait, NotNil)
	c.Check(wait.Watched, Equals, true)
	c.Check(wait.Brief, Equals, false, Commentf("a wait that goes on is recorded"))
	c.Check(wait.RecheckAfter > 50*time.Second && wait.RecheckAfter <= 51*time.Second, Equals, true, Commentf("%s: by the timeout at the latest", wait.RecheckAfter))

	wait, expired = awaitServed(request(velerov1.DownloadRequestPhaseProcessed, "", 2*time.Minute), "the file", time.Minute)
	c.Check(wait, IsNil)
	c.Check(expired, Equals, true)
}

// A NAC object in the OADP namespace is refused, named by its kind.
func (s *BackupFilesInternalSuite) TestOutsideOADPNamespace(c *C) {
	op := &engine.Operation{OADPNamespace: "oadp"}
	op.Object = &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant"}}
	c.Check(outsideOADPNamespace(op), IsNil)
	op.Object = &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp"}}
	c.Check(outsideOADPNamespace(op), ErrorMatches, "metadata.namespace: NonAdminRestores are not served in the OADP namespace oadp")
}
