package cli

import (
	"fmt"
	"strings"

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
		plan: st.Plan, queue: st.QueueInfo, mover: st.DataMoverDataUploads, podVolumes: st.FileSystemPodVolumeBackups}
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
		pr.Volumes = fmt.Sprintf("%d of %d volumes %s", v.Completed, v.Total, op.moverDone)
	} else if v := op.podVolumes; v != nil && v.Total > 0 {
		pr.Volumes = fmt.Sprintf("%d of %d pod volumes %s", v.Completed, v.Total, op.itemsDone)
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
		parts = append(parts, fmt.Sprintf("%d of %d pod volumes %s", v.Completed, v.Total, op.itemsDone))
	}
	if len(parts) > 0 {
		d.line(0, "Progress", strings.Join(parts, "; "))
	}
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
