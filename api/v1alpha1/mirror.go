package v1alpha1

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// veleroFinished reports whether phase, a Velero Backup's or Restore's, is
// terminal: both kinds end in the same four phases, Completed,
// PartiallyFailed, Failed and FailedValidation (velerov1's BackupPhase and
// RestorePhase constants), and Velero will not change such an object again
// except to delete it.
func veleroFinished[P velerov1.BackupPhase | velerov1.RestorePhase](phase P) bool {
	switch string(phase) {
	case string(velerov1.BackupPhaseCompleted), string(velerov1.BackupPhasePartiallyFailed),
		string(velerov1.BackupPhaseFailed), string(velerov1.BackupPhaseFailedValidation):
		return true
	}
	return false
}

// BackupFinished reports whether a Velero Backup phase is terminal: Completed,
// PartiallyFailed, Failed or FailedValidation. Velero will not change such a
// backup again except to delete it.
func BackupFinished(phase velerov1.BackupPhase) bool { return veleroFinished(phase) }

// MirrorBackup copies the Velero Backup's effective spec and status into
// status.veleroBackup, and its queue position into status.queueInfo:
// Velero's own status.queuePosition (Velero >= 1.18) while queued, 0 once the
// backup finished. It reports whether anything changed.
//
// Only the mirror is compared and copied, and a part of it only when it
// differs: the rest of the status (the plan above all) is the larger part,
// and copying and comparing the whole status on every reconcile costs CPU in
// proportion to the number of NABs.
func (n *NonAdminBackup) MirrorBackup(b *velerov1.Backup) bool {
	changed := false
	if n.Status.VeleroBackup == nil {
		n.Status.VeleroBackup = &VeleroBackup{}
		changed = true
	}
	vb := n.Status.VeleroBackup
	if vb.Name != b.Name || vb.Namespace != b.Namespace {
		vb.Name, vb.Namespace = b.Name, b.Namespace
		changed = true
	}
	if id := b.Labels[NabOriginNACUUIDLabel]; id != "" && vb.NACUUID != id {
		vb.NACUUID = id
		changed = true
	}
	if vb.Spec == nil || !equality.Semantic.DeepEqual(vb.Spec, &b.Spec) {
		vb.Spec = b.Spec.DeepCopy()
		changed = true
	}
	if vb.Status == nil || !equality.Semantic.DeepEqual(vb.Status, &b.Status) {
		vb.Status = b.Status.DeepCopy()
		changed = true
	}
	var queue *QueueInfo
	switch {
	case BackupFinished(b.Status.Phase):
		queue = &QueueInfo{EstimatedQueuePosition: 0}
	case b.Status.QueuePosition > 0:
		queue = &QueueInfo{EstimatedQueuePosition: b.Status.QueuePosition}
	}
	if queue != nil && !equality.Semantic.DeepEqual(n.Status.QueueInfo, queue) {
		n.Status.QueueInfo = queue
		changed = true
	}
	return changed
}

// RestoreFinished reports whether a Velero Restore phase is terminal:
// Completed, PartiallyFailed, Failed or FailedValidation.
func RestoreFinished(phase velerov1.RestorePhase) bool { return veleroFinished(phase) }

// MirrorRestore copies the Velero Restore's status into
// status.veleroRestore, and queue position 0 into status.queueInfo once it
// finished (Velero 1.18 reports no queue position for restores). It reports
// whether anything changed.
func (n *NonAdminRestore) MirrorRestore(r *velerov1.Restore) bool {
	before := n.Status.DeepCopy()
	vr := allocated(&n.Status.VeleroRestore)
	mirrorRef(r, NarOriginNACUUIDLabel, &vr.Name, &vr.Namespace, &vr.NACUUID)
	vr.Status = r.Status.DeepCopy()
	if RestoreFinished(r.Status.Phase) {
		n.Status.QueueInfo = &QueueInfo{EstimatedQueuePosition: 0}
	}
	return !equality.Semantic.DeepEqual(before, &n.Status)
}

// MirrorBSL copies the Velero BSL's status into
// status.veleroBackupStorageLocation. It reports whether anything changed.
func (n *NonAdminBackupStorageLocation) MirrorBSL(b *velerov1.BackupStorageLocation) bool {
	before := n.Status.DeepCopy()
	v := allocated(&n.Status.VeleroBackupStorageLocation)
	mirrorRef(b, NabslOriginNACUUIDLabel, &v.Name, &v.Namespace, &v.NACUUID)
	v.Status = b.Status.DeepCopy()
	return !equality.Semantic.DeepEqual(before, &n.Status)
}

// MirrorDownloadRequest copies the Velero DownloadRequest's name and status
// into status.velero and, once Velero processed it with a URL, sets
// condition Processed=True/Success and phase Created (OADP NAC). It reports
// whether anything changed.
func (n *NonAdminDownloadRequest) MirrorDownloadRequest(dr *velerov1.DownloadRequest) bool {
	before := n.Status.DeepCopy()
	v := &n.Status.VeleroDownloadRequest
	v.Name = dr.Name
	if id := dr.Labels[NadrOriginNACUUIDLabel]; id != "" {
		v.NACUUID = id
	}
	v.Status = dr.Status.DeepCopy()
	if dr.Status.Phase == velerov1.DownloadRequestPhaseProcessed && dr.Status.DownloadURL != "" {
		n.Status.Phase = NonAdminPhaseCreated
		expires := "when Velero's URL expiry passes"
		if dr.Status.Expiration != nil {
			expires = "at " + dr.Status.Expiration.UTC().Format(time.RFC3339)
		}
		meta.SetStatusCondition(&n.Status.Conditions, metav1.Condition{
			Type: ConditionProcessed, Status: metav1.ConditionTrue, Reason: ReasonProcessed,
			Message:            "the download URL is in status.velero.status.downloadURL; it and this request expire " + expires,
			ObservedGeneration: n.Generation,
		})
	}
	return !equality.Semantic.DeepEqual(before, &n.Status)
}

// mirrorRef copies the Velero object o's name and namespace into a mirror's
// name and namespace, and its NACUUID label (label) into nacuuid when set: a
// Velero object made before the label keeps the NACUUID already recorded.
func mirrorRef(o metav1.Object, label string, name, namespace, nacuuid *string) {
	*name, *namespace = o.GetName(), o.GetNamespace()
	if id := o.GetLabels()[label]; id != "" {
		*nacuuid = id
	}
}

// allocated returns *mirror, first set to a new zero T when nil.
func allocated[T any](mirror **T) *T {
	if *mirror == nil {
		*mirror = new(T)
	}
	return *mirror
}
