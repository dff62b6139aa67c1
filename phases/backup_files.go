package phases

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/engine"
)

// defaultServeTimeout is how long Velero may take to serve a file of a
// backup through a DownloadRequest (a phase's args.timeout unset): about a
// second when the location is Available.
const defaultServeTimeout = 2 * time.Minute

// serveTimeout returns timeout (a phase's args.timeout) when it is set and
// positive, else defaultServeTimeout.
func serveTimeout(timeout *metav1.Duration) time.Duration {
	if timeout != nil && timeout.Duration > 0 {
		return timeout.Duration
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
		dr, _, err = createDownloadRequest(ctx, op, recent, name, kind, backup)
	}
	return dr, err
}

// awaitServed reports how far Velero got with dr, a request for file (e.g.
// "the contents of Backup b"): served (both results zero: its URL is in
// status.downloadURL), not yet (wait, the phase's Wait result, rechecked
// every second), or not within timeout of dr's creation (expired: the phase
// gives up on the file).
func awaitServed(dr *velerov1.DownloadRequest, file string, timeout time.Duration) (wait *engine.Result, expired bool) {
	if dr.Status.Phase == velerov1.DownloadRequestPhaseProcessed && dr.Status.DownloadURL != "" {
		return nil, false
	}
	if time.Since(dr.CreationTimestamp.Time) > timeout {
		return nil, true
	}
	w := engine.Wait(fmt.Sprintf("waiting for Velero to serve %s (DownloadRequest %s is %s)", file, dr.Name, phaseOr(string(dr.Status.Phase))), time.Second)
	return &w, false
}
