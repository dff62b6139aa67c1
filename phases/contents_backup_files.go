package phases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/engine"
)

// Limits of reading a backup's files: they come from a bucket the tenant
// may write, so every wait, download and size is bounded and nothing is held
// whole.
const (
	// defaultServeTimeout is how long Velero may take to serve a file of a
	// backup through a DownloadRequest (a phase's args.timeout unset): about
	// a second when the location is Available.
	defaultServeTimeout = 2 * time.Minute
	// resourceListDownloadTimeout bounds one download of a resource list.
	resourceListDownloadTimeout = 30 * time.Second
	// maxResourceList bounds the resource list read, uncompressed (bytes):
	// about 800,000 items, read as a stream (readResourceList) in about a
	// second of CPU; a real namespace of 100,000 items lists in 4 MiB.
	maxResourceList = 32 << 20
	// contentsDownloadTimeout bounds one download of a contents tarball.
	contentsDownloadTimeout = 5 * time.Minute
	// maxContents bounds the contents tarball read (compressed bytes).
	maxContents = 256 << 20
	// maxItemBytes bounds one item's JSON in the tarball; a larger one is
	// reported, not read.
	maxItemBytes = 1 << 20
	// maxCheckedItems bounds the items read from the tarball; past it the
	// check stops and says so.
	maxCheckedItems = 100000
	// maxDeferredBindings bounds the RoleBindings to Roles of the backup
	// held until every Role of the tarball is read.
	maxDeferredBindings = 10000
)

// ServeTimeoutArgs is the argument of the functions that read a file of a
// backup through a Velero DownloadRequest of their own.
type ServeTimeoutArgs struct {
	// Timeout is how long Velero may take to serve the backup's file (and,
	// for CheckRestoreItems, to list its plugins) before the function gives
	// up (default 2m, defaultServeTimeout): on the file, its condition
	// Unknown; on the plugins, a refusal.
	Timeout *metav1.Duration `json:"timeout,omitempty" doc:"how long Velero may take to serve the backup's file (and, for CheckRestoreItems, to list its plugins) before the function gives up (default 2m)"`
}

// serveTimeout returns args.timeout when it is set and positive, else
// defaultServeTimeout.
func (a ServeTimeoutArgs) serveTimeout() time.Duration {
	if a.Timeout != nil && a.Timeout.Duration > 0 {
		return a.Timeout.Duration
	}
	return defaultServeTimeout
}

// backupFileRequest returns op's own Velero DownloadRequest name in the
// OADP namespace for the file kind of Velero Backup backup: read through
// the cache (while Velero has not served it, a recheck costs no API call),
// or created when there is none. verb names what the phase does with it, in
// the safety rule's refusal of a request that is not op's own. Errors: the
// API server's (retryable) and a foreign request (terminal).
func backupFileRequest(ctx context.Context, op *engine.Operation, recent *recentCreates, verb, name string,
	kind velerov1.DownloadTargetKind, backup string) (*velerov1.DownloadRequest, error) {
	dr := &velerov1.DownloadRequest{}
	found, err := getOwned(ctx, op.Client, op, verb, "DownloadRequest", name, dr)
	if err != nil {
		return nil, err
	}
	if !found {
		dr, _, err = createDownloadRequest(ctx, op, recent, name, kind, backup, nil)
	}
	return dr, err
}

// briefServe is how long a new DownloadRequest's wait goes unrecorded
// (engine.WaitBriefly): a running Velero serves one in about 100 ms, and
// serves a burst one at a time (its DownloadRequest controller has one
// worker), a thousand in a few seconds. It is the lag a NonAdminBackup's
// status may show behind its Velero Backup's completion, as long as queue
// positions may lag a completion (DefaultRefreshWindow).
const briefServe = 5 * time.Second

// maxBriefServe bounds how long a DownloadRequest's wait may go unrecorded
// while Velero is seen serving others (serving.busy): a backlog of requests
// served one at a time ends within it, and a NonAdminBackup's status lags its
// Velero Backup by no more. Past it, or as soon as Velero has answered no
// request for briefServe (absent, busy elsewhere, or its location
// Unavailable), the wait is recorded and told as an event.
const maxBriefServe = 30 * time.Second

// serving remembers when this process last saw Velero's download service
// answer one of its DownloadRequests: whether Velero is working through a
// backlog (a wait soon answered) or not answering at all (a wait worth
// recording). Only an observation: a restart forgets it, and then waits are
// held for briefServe, as for a first request. Safe for concurrent use; the
// zero value is ready, with the clock time.Now.
type serving struct {
	mu   sync.Mutex
	now  func() time.Time
	last time.Time
}

func (s *serving) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// served records that a DownloadRequest was found served now.
func (s *serving) served() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = s.clock()
}

// busy reports whether a request was found served within the last within.
func (s *serving) busy(within time.Duration) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.last.IsZero() && s.clock().Sub(s.last) < within
}

// awaitServed reports how far Velero got with dr, a request for file (e.g.
// "the contents of Backup b"): served (both results zero: its URL is in
// status.downloadURL, and sv learns Velero is answering), not yet (wait, the
// phase's Wait result: the controller watches DownloadRequests, so Velero's
// answer wakes the phase, and the runner rechecks only as a safety net and
// when timeout runs out), or not within timeout of dr's creation (expired:
// the phase gives up on the file). The wait is not even recorded
// (engine.WaitBriefly) for the request's first briefServe, and then for as
// long as Velero is seen answering other requests (sv.busy), up to
// maxBriefServe of the request's age.
func awaitServed(dr *velerov1.DownloadRequest, file string, timeout time.Duration, sv *serving) (wait *engine.Result, expired bool) {
	if dr.Status.Phase == velerov1.DownloadRequestPhaseProcessed && dr.Status.DownloadURL != "" {
		sv.served()
		return nil, false
	}
	age := time.Since(dr.CreationTimestamp.Time)
	if age > timeout {
		return nil, true
	}
	msg := fmt.Sprintf("waiting for Velero to serve %s (DownloadRequest %s is %s)", file, dr.Name, phaseOr(string(dr.Status.Phase)))
	switch {
	case age < briefServe:
		w := engine.WaitBriefly(msg, briefServe-age)
		return &w, false
	case age < min(maxBriefServe, timeout) && sv.busy(briefServe):
		w := engine.WaitBriefly(msg, min(briefServe, maxBriefServe-age))
		return &w, false
	}
	w := engine.WaitWatched(msg, timeout-age+time.Second)
	return &w, false
}

// getBackupFile GETs a backup's file from url, the pre-signed URL Velero
// served in a DownloadRequest's status.downloadURL, through hc, with ctx
// (which bounds the download). The caller reads and closes the body.
// Errors: hc's (a refused address or redirect included, the URL's
// signature left out), and the status when not 200.
func getBackupFile(ctx context.Context, hc *storeClient, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, errors.New("the download URL Velero served does not parse")
	}
	resp, err := hc.do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("the object store answered %s", resp.Status)
	}
	return resp.Body, nil
}
