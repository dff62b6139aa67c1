package phases

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// ShowQueuePosition is the one writer of q's estimate into a NonAdminBackup's
// status.queueInfo.estimatedQueuePosition (OADP NAC's figure, an estimate
// by its design). While b, nab's Velero Backup, has not finished and Velero
// gives no position of its own, it writes q's position for b when the
// figure nab shows is stale (PositionStale: it moved by a third, or
// lies within the first engine.ExactPositions, or none is shown), or when
// nab's status is written anyway (statusWritten) and the figure differs; then
// it tells q which figure nab shows (QueueEstimator.Record), so that a later
// refresh wakes nab only once that figure is stale. Velero's own position
// and the 0 of a finished backup are v1alpha1.NonAdminBackup.MirrorBackup's
// to write. q nil: nothing.
func ShowQueuePosition(q QueueEstimator, nab *v1alpha1.NonAdminBackup, b *velerov1.Backup, statusWritten bool) {
	if q == nil || v1alpha1.BackupFinished(b.Status.Phase) || b.Status.QueuePosition != 0 {
		return
	}
	pos, shown := q.Position(b.Name, b.CreationTimestamp.Time), 0
	if qi := nab.Status.QueueInfo; qi != nil {
		shown = qi.EstimatedQueuePosition
	}
	if PositionStale(shown, pos) || statusWritten && shown != pos {
		nab.Status.QueueInfo = &v1alpha1.QueueInfo{EstimatedQueuePosition: pos}
		shown = pos
	}
	q.Record(b.Name, b.CreationTimestamp.Time, shown)
}
