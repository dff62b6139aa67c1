package cli

import (
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// veleroOperation is what a NonAdminBackup or a NonAdminRestore says of the
// Velero Backup or Restore it asked for, in the same terms for both kinds:
// get's Velero columns, describe's progress and result sections and the
// progress --wait shows all read it, so that each is written once.
type veleroOperation struct {
	// action is the plan action that runs the operation: backup, restore.
	action string
	// kind is Velero's kind: Backup, Restore.
	kind string
	// itemsDone says what happened to an item or a pod volume ("backed
	// up", "restored"); moverDone what the data mover did to a volume
	// ("uploaded", "downloaded").
	itemsDone, moverDone string
	plan                 *v1alpha1.PlanStatus
	queue                *v1alpha1.QueueInfo
	// velero is Velero's object, nil before the NAC object names one.
	velero *veleroObject
	// mover counts the data mover's volumes, podVolumes the file system
	// backup's (or restore's): the restore's counts are of the backup's
	// types.
	mover      *v1alpha1.DataMoverDataUploads
	podVolumes *v1alpha1.FileSystemPodVolumeBackups
	// uploader moved the pod volumes' data (kopia, restic; "" unknown).
	uploader string
}

// veleroObject is the Velero Backup or Restore a NAC object names (name
// may be empty before Velero's object is made).
type veleroObject struct {
	namespace, name string
	// status is nil until the controller mirrored one.
	status *veleroStatus
}

// veleroStatus is the part of a Velero Backup's or Restore's status the CLI
// shows; fields a kind does not have stay zero.
type veleroStatus struct {
	phase string
	// done and total count items (backed up or restored); total is 0
	// until Velero counted them.
	done, total                    int
	warnings, errors               int
	failureReason                  string
	validationErrors               []string
	start, completion, expiration  *metav1.Time
	asyncAttempted, asyncCompleted int
}

// backupOperation reads nab's Velero Backup.
func backupOperation(nab *v1alpha1.NonAdminBackup) veleroOperation {
	st := nab.Status
	op := veleroOperation{action: "backup", kind: "Backup", itemsDone: "backed up", moverDone: "uploaded",
		plan: st.Plan, queue: st.QueueInfo, mover: st.DataMoverDataUploads, podVolumes: st.FileSystemPodVolumeBackups, uploader: st.UploaderType}
	if vb := st.VeleroBackup; vb != nil {
		op.velero = &veleroObject{namespace: vb.Namespace, name: vb.Name, status: ifSet(vb.Status, backupStatus)}
	}
	return op
}

// restoreOperation reads nar's Velero Restore.
func restoreOperation(nar *v1alpha1.NonAdminRestore) veleroOperation {
	st := nar.Status
	op := veleroOperation{action: "restore", kind: "Restore", itemsDone: "restored", moverDone: "downloaded", plan: st.Plan, queue: st.QueueInfo,
		mover: (*v1alpha1.DataMoverDataUploads)(st.DataMoverDataDownloads), podVolumes: (*v1alpha1.FileSystemPodVolumeBackups)(st.FileSystemPodVolumeRestores)}
	if vr := st.VeleroRestore; vr != nil {
		op.velero = &veleroObject{namespace: vr.Namespace, name: vr.Name, status: ifSet(vr.Status, restoreStatus)}
	}
	return op
}

// ifSet returns read(s), nil for a nil s.
func ifSet[S any](s *S, read func(*S) veleroStatus) *veleroStatus {
	if s == nil {
		return nil
	}
	vs := read(s)
	return &vs
}

func backupStatus(s *velerov1.BackupStatus) veleroStatus {
	vs := veleroStatus{phase: string(s.Phase), warnings: s.Warnings, errors: s.Errors, failureReason: s.FailureReason,
		validationErrors: s.ValidationErrors, start: s.StartTimestamp, completion: s.CompletionTimestamp, expiration: s.Expiration,
		asyncAttempted: s.BackupItemOperationsAttempted, asyncCompleted: s.BackupItemOperationsCompleted}
	if p := s.Progress; p != nil {
		vs.done, vs.total = p.ItemsBackedUp, p.TotalItems
	}
	return vs
}

// restoreStatus leaves out the restore's async item operations: describe
// never listed them for restores.
func restoreStatus(s *velerov1.RestoreStatus) veleroStatus {
	vs := veleroStatus{phase: string(s.Phase), warnings: s.Warnings, errors: s.Errors, failureReason: s.FailureReason,
		validationErrors: s.ValidationErrors, start: s.StartTimestamp, completion: s.CompletionTimestamp}
	if p := s.Progress; p != nil {
		vs.done, vs.total = p.ItemsRestored, p.TotalItems
	}
	return vs
}

// status is Velero's status, nil before there is one.
func (op veleroOperation) status() *veleroStatus {
	if op.velero == nil {
		return nil
	}
	return op.velero.status
}

// phase is Velero's phase, "" before Velero reported one.
func (op veleroOperation) phase() string {
	if s := op.status(); s != nil {
		return s.phase
	}
	return ""
}

// items is "done/total" once Velero counted the items, else "".
func (op veleroOperation) items() string {
	if s := op.status(); s != nil && s.total > 0 {
		return fmt.Sprintf("%d/%d", s.done, s.total)
	}
	return ""
}

// progress is the Progress --wait shows: it succeeds when the plan of the
// operation's action completed and Velero's object is Completed.
func (op veleroOperation) progress() Progress {
	pr := planProgress(op.plan, op.action)
	if op.queue != nil {
		pr.Queue = op.queue.EstimatedQueuePosition
	}
	if s := op.status(); s != nil {
		pr.Done, pr.Total = s.done, s.total
		if pr.Ended && pr.Failure == "" {
			pr.Summary = fmt.Sprintf("Velero %s %s/%s %s: %d of %d items, %d warnings, %d errors", op.kind, op.velero.namespace, op.velero.name,
				or(s.phase, "<unknown>"), pr.Done, pr.Total, s.warnings, s.errors)
		}
	}
	if v := op.mover; v != nil && v.Total > 0 {
		pr.Volumes = fmt.Sprintf("%d of %d volumes %s", v.Completed, v.Total, op.moverDone) + bytesSummary(v.BytesDone, v.TotalBytes)
	} else if v := op.podVolumes; v != nil && v.Total > 0 {
		pr.Volumes = fmt.Sprintf("%d of %d pod volumes %s", v.Completed, v.Total, op.itemsDone) + bytesSummary(v.BytesDone, v.TotalBytes)
	}
	if pr.Ended && pr.Failure == "" && op.phase() != "Completed" {
		pr.Failure = fmt.Sprintf("the Velero %s ended %s", op.kind, or(op.phase(), "without a phase"))
	}
	return pr
}

// describeProgress writes describe's Progress line: queue position, items,
// async item operations and volumes, whichever are known.
func (d describer) describeProgress(op veleroOperation) {
	var parts []string
	if q := op.queue; q != nil && q.EstimatedQueuePosition > 0 {
		parts = append(parts, fmt.Sprintf("queue position %d", q.EstimatedQueuePosition))
	}
	if s := op.status(); s != nil && s.total > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d items %s", s.done, s.total, op.itemsDone))
	}
	if s := op.status(); s != nil && s.asyncAttempted > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d async item operations completed", s.asyncCompleted, s.asyncAttempted))
	}
	if v := op.mover; v != nil && v.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d volumes %s by the data mover", v.Completed, v.Total, op.moverDone))
	}
	if v := op.podVolumes; v != nil && v.Total > 0 {
		by := ""
		if op.uploader != "" {
			by = " by " + op.uploader
		}
		parts = append(parts, fmt.Sprintf("%d of %d pod volumes %s%s", v.Completed, v.Total, op.itemsDone, by))
	}
	if len(parts) > 0 {
		d.line(0, "Progress", strings.Join(parts, "; "))
	}
	if bars := op.volumeBars(d.now); len(bars) > 0 {
		d.line(0, "Volume Data", "")
		for _, b := range bars {
			d.line(1, b[0], b[1])
		}
	}
}

// barWidth is the number of cells of a progress bar.
const barWidth = 20

// volumeBars returns, for the data mover's and the file system's volumes
// that report bytes, a label and a bar with bytes, percent and transfer
// speed: "[#########-----------]  45%  450Mi of 1000Mi  15Mi/s". The speed
// is the bytes moved over the time since Velero started the operation, up
// to its completion or now.
func (op veleroOperation) volumeBars(now time.Time) [][2]string {
	var start, end time.Time
	if op.velero != nil && op.velero.status != nil {
		if s := op.velero.status.start; s != nil {
			start = s.Time
		}
		if c := op.velero.status.completion; c != nil {
			end = c.Time
		}
	}
	if end.IsZero() {
		end = now
	}
	var out [][2]string
	add := func(label string, done, total int64) {
		if total <= 0 {
			return
		}
		out = append(out, [2]string{label, progressBar(done, total, end.Sub(start), !start.IsZero())})
	}
	if m := op.mover; m != nil {
		add("Data Mover", m.BytesDone, m.TotalBytes)
	}
	if f := op.podVolumes; f != nil {
		add("File System", f.BytesDone, f.TotalBytes)
	}
	return out
}

// progressBar draws done of total bytes as a bar, the percent, the figures
// and, when timed, the speed over elapsed.
func progressBar(done, total int64, elapsed time.Duration, timed bool) string {
	done = min(max(done, 0), total)
	filled := int(done * barWidth / total)
	bar := "[" + strings.Repeat("#", filled) + strings.Repeat("-", barWidth-filled) + "]"
	s := fmt.Sprintf("%s %3d%%  %s of %s", bar, done*100/total, humanBytes(done), humanBytes(total))
	if timed && elapsed > time.Second {
		s += fmt.Sprintf("  %s/s", humanBytes(int64(float64(done)/elapsed.Seconds())))
	}
	return s
}

// humanBytes writes n bytes in the largest binary unit that keeps a digit
// before the point, with one decimal: "512 B", "1.5 KiB", "450.0 MiB".
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n), ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		v, unit = v/1024, u
		if v < 1024 {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// describeResult writes describe's section on Velero's object: its name,
// phase, warnings, errors, failure, times and expiration, or "<none yet>".
func (d describer) describeResult(op veleroOperation) {
	title := "Velero " + op.kind
	if op.velero == nil || op.velero.name == "" {
		d.line(0, title, "<none yet>")
		return
	}
	d.line(0, title, op.velero.namespace+"/"+op.velero.name)
	s := op.velero.status
	if s == nil {
		return
	}
	d.line(1, "Phase", or(s.phase, "<unknown>"))
	d.line(1, "Warnings", s.warnings)
	d.line(1, "Errors", s.errors)
	if s.failureReason != "" {
		d.line(1, "Failure Reason", s.failureReason)
	}
	for _, e := range s.validationErrors {
		d.line(1, "Validation Error", e)
	}
	d.times(1, s.start, s.completion)
	if s.expiration != nil {
		d.line(1, "Expiration", stamp(s.expiration))
	}
}

// bytesSummary is " (45%, 450.0 MiB of 1000.0 MiB)", or "" without a total.
func bytesSummary(done, total int64) string {
	if total <= 0 {
		return ""
	}
	done = min(max(done, 0), total)
	return fmt.Sprintf(" (%d%%, %s of %s)", done*100/total, humanBytes(done), humanBytes(total))
}
