package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	"github.com/vmware-tanzu/velero/pkg/label"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// volume is one node-agent object's phase and progress (bytes), and the
// uploader moving its data (a PodVolumeBackup's spec.uploaderType: kopia or
// restic; "" for the other kinds).
type volume struct {
	phase       string
	done, total int64
	uploader    string
}

// tally counts vols by phase ("" counts as "New", as Velero writes no phase
// on a new object) and sums their bytes done and total.
func tally(vols []volume) (counts map[string]int, done, total int64) {
	counts = map[string]int{}
	for _, v := range vols {
		done += v.done
		total += v.total
		phase := v.phase
		if phase == "" {
			phase = "New"
		}
		counts[phase]++
	}
	return counts, done, total
}

// byPhase counts volumes into OADP NAC's DataUpload/DataDownload counters,
// their bytes summed; nil without volumes.
func byPhase(vols []volume) *v1alpha1.DataMoverDataUploads {
	if len(vols) == 0 {
		return nil
	}
	n, done, total := tally(vols)
	return &v1alpha1.DataMoverDataUploads{
		Total:      len(vols),
		New:        n["New"],
		Accepted:   n["Accepted"],
		Prepared:   n["Prepared"],
		InProgress: n["InProgress"],
		Canceling:  n["Canceling"],
		Canceled:   n["Canceled"],
		Failed:     n["Failed"],
		Completed:  n["Completed"],
		BytesDone:  done,
		TotalBytes: total,
	}
}

// fsByPhase counts phases into OADP NAC's PodVolumeBackup/Restore
// counters; phases OADP does not list (Accepted, Prepared, Canceling,
// Canceled of newer Velero) count in total only. nil without volumes.
func fsByPhase(vols []volume) *v1alpha1.FileSystemPodVolumeBackups {
	if len(vols) == 0 {
		return nil
	}
	n, done, total := tally(vols)
	return &v1alpha1.FileSystemPodVolumeBackups{
		Total:      len(vols),
		New:        n["New"],
		InProgress: n["InProgress"],
		Failed:     n["Failed"],
		Completed:  n["Completed"],
		BytesDone:  done,
		TotalBytes: total,
	}
}

// progressSummary returns "<done> of <total> volumes <verb>" over both
// counters, "" when there are no volumes.
func progressSummary(dm *v1alpha1.DataMoverDataUploads, fs *v1alpha1.FileSystemPodVolumeBackups, verb string) string {
	total, done := 0, 0
	if dm != nil {
		total, done = total+dm.Total, done+dm.Completed
	}
	if fs != nil {
		total, done = total+fs.Total, done+fs.Completed
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d volumes %s", done, total, verb)
}

// volumesOf lists the objects of list (a DataUpload, DataDownload,
// PodVolumeBackup or PodVolumeRestore list) in the OADP namespace labelled
// key=<Velero object name> (velero.io/backup-name or restore-name, as
// Velero's node agent labels them) and returns their phases and progress.
func volumesOf(ctx context.Context, op *engine.Operation, list client.ObjectList, key, name string) ([]volume, error) {
	if err := listLabelled(ctx, op.Client, op, list, key, label.GetValidName(name)); err != nil {
		return nil, fmt.Errorf("listing %T of %s: %w", list, name, err)
	}
	var out []volume
	switch l := list.(type) {
	case *velerov2alpha1.DataUploadList:
		for _, o := range l.Items {
			out = append(out, volume{string(o.Status.Phase), o.Status.Progress.BytesDone, o.Status.Progress.TotalBytes, ""})
		}
	case *velerov2alpha1.DataDownloadList:
		for _, o := range l.Items {
			out = append(out, volume{string(o.Status.Phase), o.Status.Progress.BytesDone, o.Status.Progress.TotalBytes, ""})
		}
	case *velerov1.PodVolumeBackupList:
		for _, o := range l.Items {
			out = append(out, volume{string(o.Status.Phase), o.Status.Progress.BytesDone, o.Status.Progress.TotalBytes, o.Spec.UploaderType})
		}
	case *velerov1.PodVolumeRestoreList:
		for _, o := range l.Items {
			out = append(out, volume{string(o.Status.Phase), o.Status.Progress.BytesDone, o.Status.Progress.TotalBytes, ""})
		}
	}
	return out, nil
}

// volumeProgress records in the status of op's object, when its kind's
// Velero operation moves volume data (v1alpha1.VolumeOperation:
// NonAdminBackup, NonAdminRestore), the counts by phase of the node agent's
// objects of its Velero Backup (Restore) name — DataUploads and
// PodVolumeBackups (DataDownloads and PodVolumeRestores) — with OADP NAC's
// field names, and the bytes they moved of their total; for a kind that
// records it (v1alpha1.UploaderRecorder: NonAdminBackup), the uploader of its
// file-system backups (OADP NAC's status.uploaderType). It returns the summary for a wait message ("3 of 5 volumes
// uploaded"; "" without volumes or for another kind). Errors: the cache's
// (retryable).
func volumeProgress(ctx context.Context, op *engine.Operation, name string) (string, error) {
	obj, ok := op.Object.(v1alpha1.VolumeOperation)
	if !ok {
		return "", nil
	}
	w := obj.VolumeWork()
	dataMover, err := volumesOf(ctx, op, w.DataMover, w.NameLabel, name)
	if err != nil {
		return "", err
	}
	fileSystem, err := volumesOf(ctx, op, w.FileSystem, w.NameLabel, name)
	if err != nil {
		return "", err
	}
	dm, fs := byPhase(dataMover), fsByPhase(fileSystem)
	obj.SetVolumeProgress(dm, fs)
	if u, ok := obj.(v1alpha1.UploaderRecorder); ok {
		for _, v := range fileSystem {
			if v.uploader != "" {
				u.SetUploaderType(v.uploader)
				break
			}
		}
	}
	return progressSummary(dm, fs, w.Done), nil
}

// withProgress appends summary to msg ("msg; 3 of 5 volumes uploaded").
func withProgress(msg, summary string) string {
	if summary == "" {
		return msg
	}
	return msg + "; " + summary
}
