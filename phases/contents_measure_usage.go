package phases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	"github.com/vmware-tanzu/velero/pkg/label"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// sizeTimeout bounds one size request of a backup's contents (and, where
// the store ignores ranges, the count of its bytes).
const sizeTimeout = 2 * time.Minute

// MeasureUsageArgs are the args of MeasureUsage.
type MeasureUsageArgs struct {
	// Name is the Velero Backup, usually {{ .Phases.createBackup.Output.name }}.
	Name string `json:"name" doc:"the Velero Backup, usually {{ .Phases.createBackup.Output.name }}"`
	ServeTimeoutArgs
}

// MeasureUsage records what a finished backup takes in object storage
// (status.usage; OADP NAC and Velero report no size): the size of its
// contents tarball — the backup's own bulk: its logs and lists are a few
// KiB — asked of the store through the URL Velero serves for a
// DownloadRequest BackupContents of its own, with a one-byte range request
// whose Content-Range names the whole size (a store that ignores ranges is
// read and counted, never held, within 2 minutes); and the volume data the
// node agent moved (its DataUploads' and PodVolumeBackups' progress
// totalBytes). One DownloadRequest a backup, read once: Velero's own
// backup volume information holds no size of the tarball. A backup that
// did not finish Completed or PartiallyFailed takes nothing worth counting
// and is not measured; a backup measured already is not measured again.
//
// Outputs: contentsBytes, volumeBytes, totalBytes. Errors: a Backup that is
// not the operation's own is terminal; API errors are retryable; a store
// that does not answer leaves status.usage unset (the phase completes).
type MeasureUsage struct {
	tools tools
}

// Run implements phaseFunc.
func (f *MeasureUsage) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *MeasureUsageArgs) (engine.Result, error) {
	if u := nab.Status.Usage; u != nil {
		return engine.Done("measured already", usageOutput(u)), nil
	}
	if a.Name == "" {
		return engine.Done("no Velero Backup to measure", nil), nil
	}
	b := &velerov1.Backup{}
	found, err := getOwned(ctx, op.Client, op, "measure", "Backup", a.Name, b, linkedUUIDs(op)...)
	if err != nil || !found {
		return engine.Done(fmt.Sprintf("Velero Backup %s not found: nothing to measure", a.Name), nil), err
	}
	if p := b.Status.Phase; p != velerov1.BackupPhaseCompleted && p != velerov1.BackupPhasePartiallyFailed {
		return engine.Done(fmt.Sprintf("Velero Backup %s is %s: only Completed and PartiallyFailed backups are measured", a.Name, phaseOr(string(p))), nil), nil
	}
	dr, err := backupFileRequest(ctx, op, f.tools.recent, "measure", v1alpha1.NACObjectName(nab.Namespace, nab.Name, op.UUID)+"u",
		velerov1.DownloadTargetKindBackupContents, b.Name)
	if err != nil {
		return engine.Result{}, err
	}
	timeout := a.serveTimeout()
	if wait, expired := awaitServed(dr, "the contents of Backup "+b.Name, timeout, f.tools.serving); expired {
		return engine.Done(fmt.Sprintf("not measured: Velero did not serve the contents of Backup %s within %s", b.Name, timeout), nil), nil
	} else if wait != nil {
		return *wait, nil
	}
	contents, err := objectSize(ctx, f.tools.store, dr.Status.DownloadURL)
	if err != nil {
		return engine.Done(fmt.Sprintf("not measured: the size of the contents of Backup %s: %v", b.Name, err), nil), nil
	}
	volumes, err := volumeBytes(ctx, op, b.Name)
	if err != nil {
		return engine.Result{}, err
	}
	location := ""
	if spec := nab.Spec.BackupSpec; spec != nil {
		location = spec.StorageLocation
	}
	u := &v1alpha1.BackupUsage{ContentsBytes: contents, VolumeBytes: volumes, TotalBytes: contents + volumes,
		StorageLocation: v1alpha1.LocationName(location), MeasuredAt: metav1.Now()}
	nab.Status.Usage = u
	return engine.Done(fmt.Sprintf("Velero Backup %s takes %d bytes: contents %d, volume data %d", b.Name, u.TotalBytes, contents, volumes), usageOutput(u)), nil
}

// usageOutput is the phase output of u.
func usageOutput(u *v1alpha1.BackupUsage) map[string]string {
	return map[string]string{"contentsBytes": fmt.Sprint(u.ContentsBytes), "volumeBytes": fmt.Sprint(u.VolumeBytes), "totalBytes": fmt.Sprint(u.TotalBytes)}
}

// objectSize returns the size in bytes of the object at url (a pre-signed
// GET URL): it asks for its first byte and reads the size from the
// Content-Range of a 206 answer; a store that answers 200 gives its
// Content-Length, or, without one, its body is counted (never held) within
// sizeTimeout. Errors: the HTTP client's, an answer other than 200 or 206,
// a Content-Range without a size.
func objectSize(ctx context.Context, hc *storeClient, url string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, sizeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, errors.New("the download URL Velero served does not parse")
	}
	req.Header.Set("Range", "bytes=0-0")
	resp, err := hc.do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		return contentRangeSize(resp.Header.Get("Content-Range"))
	case http.StatusOK:
		if resp.ContentLength >= 0 {
			return resp.ContentLength, nil
		}
		return io.Copy(io.Discard, resp.Body)
	case http.StatusRequestedRangeNotSatisfiable: // an empty object
		return contentRangeSize(resp.Header.Get("Content-Range"))
	}
	return 0, fmt.Errorf("the object store answered %s", resp.Status)
}

// contentRangeSize parses the complete length of a Content-Range header
// ("bytes 0-0/1234", "bytes */0"). Errors: no length, or not a number.
func contentRangeSize(h string) (int64, error) {
	_, size, ok := strings.Cut(h, "/")
	if !ok || size == "*" {
		return 0, fmt.Errorf("no size in Content-Range %q", h)
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("no size in Content-Range %q", h)
	}
	return n, nil
}

// volumeBytes sums the total bytes of Velero Backup backup's DataUploads
// and PodVolumeBackups in the OADP namespace (cached). Errors: the list's.
func volumeBytes(ctx context.Context, op *engine.Operation, backup string) (int64, error) {
	var total int64
	dus := &velerov2alpha1.DataUploadList{}
	if err := listLabelled(ctx, op.Client, op, dus, velerov1.BackupNameLabel, label.GetValidName(backup)); err != nil {
		return 0, fmt.Errorf("listing the DataUploads of %s: %w", backup, err)
	}
	for _, du := range dus.Items {
		total += du.Status.Progress.TotalBytes
	}
	pvbs := &velerov1.PodVolumeBackupList{}
	if err := listLabelled(ctx, op.Client, op, pvbs, velerov1.BackupNameLabel, label.GetValidName(backup)); err != nil {
		return 0, fmt.Errorf("listing the PodVolumeBackups of %s: %w", backup, err)
	}
	for _, pvb := range pvbs.Items {
		total += pvb.Status.Progress.TotalBytes
	}
	return total, nil
}

// Doc implements engine.Documented.
func (*MeasureUsage) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "After a Completed or PartiallyFailed backup, records status.usage: the size of its contents tarball in object storage (a DownloadRequest BackupContents of its own, then a one-byte range request whose Content-Range gives the size; counted as it streams where the store ignores ranges) and the volume data its DataUploads and PodVolumeBackups moved. Once per backup; a store that does not answer leaves usage unset. nac runs it for every finished NonAdminBackup after its plan, at --usage-measure-rate (older backups after a start): a blueprint need not name it.",
		Outputs: []string{"contentsBytes, volumeBytes, totalBytes: bytes"},
		Errors:  "a Backup that is not the operation's own is terminal; " + apiRetried,
		Waits:   true,
	}
}
