package v1alpha1

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// VolumeWork names the objects Velero's node agent makes for the volumes of
// one Velero Backup or Restore, and how to tell them apart.
//
// +kubebuilder:object:generate=false
type VolumeWork struct {
	// DataMover and FileSystem are empty lists of the node agent's objects:
	// DataUploads and PodVolumeBackups of a backup, DataDownloads and
	// PodVolumeRestores of a restore.
	DataMover, FileSystem client.ObjectList
	// NameLabel is the label naming the Velero Backup or Restore on them
	// (velero.io/backup-name or velero.io/restore-name, as Velero's node
	// agent sets it).
	NameLabel string
	// Done is what a finished volume was, for progress messages: uploaded,
	// restored.
	Done string
}

// VolumeOperation is a NAC kind whose Velero operation moves volume data
// through Velero's node agent: NonAdminBackup and NonAdminRestore, whose
// status counts those objects by phase (OADP NAC's dataMoverDataUploads,
// fileSystemPodVolumeBackups, dataMoverDataDownloads and
// fileSystemPodVolumeRestores).
//
// +kubebuilder:object:generate=false
type VolumeOperation interface {
	Object
	// VolumeWork returns what to count, with new lists each call.
	VolumeWork() VolumeWork
	// SetVolumeProgress records the counts by phase (nil: no such objects)
	// in the kind's status fields.
	SetVolumeProgress(dataMover *DataMoverDataUploads, fileSystem *FileSystemPodVolumeBackups)
}

// UploaderRecorder is a VolumeOperation whose status names the uploader
// that moved its pod volumes' data (OADP NAC's NonAdminBackup
// status.uploaderType).
//
// +kubebuilder:object:generate=false
type UploaderRecorder interface {
	// SetUploaderType records uploader as Velero's node agent names it in
	// a PodVolumeBackup's spec.uploaderType: kopia or restic.
	SetUploaderType(uploader string)
}

var (
	_ UploaderRecorder = &NonAdminBackup{}
	_ VolumeOperation  = &NonAdminBackup{}
	_ VolumeOperation  = &NonAdminRestore{}
)

// VolumeWork implements VolumeOperation: DataUploads and PodVolumeBackups.
func (*NonAdminBackup) VolumeWork() VolumeWork {
	return VolumeWork{&velerov2alpha1.DataUploadList{}, &velerov1.PodVolumeBackupList{}, velerov1.BackupNameLabel, "uploaded"}
}

// SetVolumeProgress implements VolumeOperation.
func (n *NonAdminBackup) SetVolumeProgress(dm *DataMoverDataUploads, fs *FileSystemPodVolumeBackups) {
	n.Status.DataMoverDataUploads, n.Status.FileSystemPodVolumeBackups = dm, fs
}

// SetUploaderType implements UploaderRecorder.
func (n *NonAdminBackup) SetUploaderType(uploader string) { n.Status.UploaderType = uploader }

// VolumeWork implements VolumeOperation: DataDownloads and
// PodVolumeRestores.
func (*NonAdminRestore) VolumeWork() VolumeWork {
	return VolumeWork{&velerov2alpha1.DataDownloadList{}, &velerov1.PodVolumeRestoreList{}, velerov1.RestoreNameLabel, "restored"}
}

// SetVolumeProgress implements VolumeOperation: the restore's counters have
// the backup's shape under their own names.
func (n *NonAdminRestore) SetVolumeProgress(dm *DataMoverDataUploads, fs *FileSystemPodVolumeBackups) {
	n.Status.DataMoverDataDownloads = (*DataMoverDataDownloads)(dm)
	n.Status.FileSystemPodVolumeRestores = (*FileSystemPodVolumeRestores)(fs)
}
