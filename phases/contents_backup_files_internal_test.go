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
	wait, expired := awaitServed(request(velerov1.DownloadRequestPhaseProcessed, "https://x", time.Hour), "the file", time.Minute, nil)
	c.Check(wait, IsNil)
	c.Check(expired, Equals, false)

	wait, expired = awaitServed(request("", "", time.Second), "the contents of Backup b", time.Minute, nil)
	c.Assert(wait, NotNil)
	c.Check(expired, Equals, false)
	c.Check(wait.Message, Equals, "waiting for Velero to serve the contents of Backup b (DownloadRequest dr is not started)")
	c.Check(wait.Wait, Equals, true)
	c.Check(wait.Watched, Equals, true)
	c.Check(wait.Brief, Equals, true, Commentf("a request a second old: Velero serves it in about 100 ms"))
	c.Check(wait.RecheckAfter > 3900*time.Millisecond && wait.RecheckAfter <= 4*time.Second, Equals, true, Commentf("%s: until it is 5 s old", wait.RecheckAfter))

	wait, _ = awaitServed(request("", "", 10*time.Second), "the contents of Backup b", time.Minute, nil)
	c.Assert(wait, NotNil)
	c.Check(wait.Watched, Equals, true)
	c.Check(wait.Brief, Equals, false, Commentf("a wait that goes on is recorded"))
	c.Check(wait.RecheckAfter > 50*time.Second && wait.RecheckAfter <= 51*time.Second, Equals, true, Commentf("%s: by the timeout at the latest", wait.RecheckAfter))

	wait, expired = awaitServed(request(velerov1.DownloadRequestPhaseProcessed, "", 2*time.Minute), "the file", time.Minute, nil)
	c.Check(wait, IsNil)
	c.Check(expired, Equals, true)
}

// While Velero is seen answering other requests (a backlog served one at a
// time), a request's wait stays unrecorded up to maxBriefServe; once Velero
// has answered nothing for briefServe, or past maxBriefServe, it is recorded.
func (s *BackupFilesInternalSuite) TestAwaitServedWhileVeleroServesOthers(c *C) {
	now := time.Now()
	sv := &serving{now: func() time.Time { return now }}
	request := func(phase velerov1.DownloadRequestPhase, url string, age time.Duration) *velerov1.DownloadRequest {
		dr := &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Name: "dr", CreationTimestamp: metav1.NewTime(time.Now().Add(-age))}}
		dr.Status.Phase, dr.Status.DownloadURL = phase, url
		return dr
	}
	wait, _ := awaitServed(request("", "", 10*time.Second), "the file", time.Minute, sv)
	c.Assert(wait, NotNil)
	c.Check(wait.Brief, Equals, false, Commentf("nothing served yet: Velero may be absent"))

	wait, _ = awaitServed(request(velerov1.DownloadRequestPhaseProcessed, "https://x", time.Second), "the file", time.Minute, sv)
	c.Check(wait, IsNil)
	c.Check(sv.busy(briefServe), Equals, true, Commentf("an answer seen"))

	now = now.Add(2 * time.Second)
	wait, _ = awaitServed(request("", "", 10*time.Second), "the file", time.Minute, sv)
	c.Assert(wait, NotNil)
	c.Check(wait.Brief, Equals, true, Commentf("Velero answered another request 2 s ago"))
	c.Check(wait.Watched, Equals, true)
	c.Check(wait.RecheckAfter, Equals, briefServe)

	wait, _ = awaitServed(request("", "", 28*time.Second), "the file", time.Minute, sv)
	c.Assert(wait, NotNil)
	c.Check(wait.Brief, Equals, true)
	c.Check(wait.RecheckAfter > time.Second && wait.RecheckAfter <= 2*time.Second, Equals, true, Commentf("%s: held no longer than maxBriefServe", wait.RecheckAfter))

	wait, _ = awaitServed(request("", "", 31*time.Second), "the file", time.Minute, sv)
	c.Assert(wait, NotNil)
	c.Check(wait.Brief, Equals, false, Commentf("past maxBriefServe the wait is recorded"))

	wait, _ = awaitServed(request("", "", 20*time.Second), "the file", 15*time.Second, sv)
	c.Check(wait, IsNil, Commentf("the timeout still ends it"))

	now = now.Add(briefServe)
	wait, _ = awaitServed(request("", "", 10*time.Second), "the file", time.Minute, sv)
	c.Assert(wait, NotNil)
	c.Check(wait.Brief, Equals, false, Commentf("Velero has answered nothing for briefServe"))
}

// A NAC object in the OADP namespace is refused, named by its kind.
func (s *BackupFilesInternalSuite) TestOutsideOADPNamespace(c *C) {
	op := &engine.Operation{OADPNamespace: "oadp"}
	op.Object = &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant"}}
	c.Check(outsideOADPNamespace(op), IsNil)
	op.Object = &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp"}}
	c.Check(outsideOADPNamespace(op), ErrorMatches, "metadata.namespace: NonAdminRestores are not served in the OADP namespace oadp")
}
