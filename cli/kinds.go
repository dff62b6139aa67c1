package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// backups is `kubectl nac backup`: deleting marks a NonAdminBackup for
// deletion (spec.deleteBackup, as OADP's CLI does), so that Velero deletes
// the backup data before the object goes; --keep-data deletes it plainly.
func backups() *tenantKind[*v1alpha1.NonAdminBackup] {
	return &tenantKind[*v1alpha1.NonAdminBackup]{
		name: "backup", aliases: []string{"backups"},
		create: newBackupCreateCommand, progress: BackupProgress,
		columns: backupColumns, describeTo: DescribeBackup,
		files: &veleroFiles{log: velerov1.DownloadTargetKindBackupLog, resources: velerov1.DownloadTargetKindBackupResourceList,
			resourcesUsage: "Add Velero's resource list of the backup (through a NonAdminDownloadRequest)."},
		more: []func(*Options, *tenantKind[*v1alpha1.NonAdminBackup]) *cobra.Command{newBackupDownloadCommand},
		delete: &deleteVerb{deletedNote: "; its backup data stays in object storage", mark: &markForDeletion{
			patch:         `{"spec":{"deleteBackup":true}}`,
			keepDataUsage: "Delete only the NonAdminBackup (a plain delete); the backup data stays in object storage.",
			after:         "Velero deletes the backup data, then nacflow removes the NonAdminBackup: `kubectl nac backup get -n %s` shows progress.",
		}},
	}
}

// restores is `kubectl nac restore`: deleting a NonAdminRestore leaves
// what it restored in place.
func restores() *tenantKind[*v1alpha1.NonAdminRestore] {
	return &tenantKind[*v1alpha1.NonAdminRestore]{
		name: "restore", aliases: []string{"restores"}, delete: &deleteVerb{},
		more:   []func(*Options, *tenantKind[*v1alpha1.NonAdminRestore]) *cobra.Command{newRestorePreviewCommand},
		create: newRestoreCreateCommand, progress: RestoreProgress,
		columns: restoreColumns, describeTo: DescribeRestore,
		files: &veleroFiles{log: velerov1.DownloadTargetKindRestoreLog, resources: velerov1.DownloadTargetKindRestoreResourceList,
			resourcesUsage: "Add Velero's list of the resources restored (through a NonAdminDownloadRequest)."},
	}
}

// storageLocations is `kubectl nac bsl` without its request subgroup (the
// admin's): a location has no Velero files and no --wait; deleting it
// removes its Velero location and credential copy, not the backups in its
// bucket.
func storageLocations() *tenantKind[*v1alpha1.NonAdminBackupStorageLocation] {
	return &tenantKind[*v1alpha1.NonAdminBackupStorageLocation]{name: "bsl", create: newBSLCreateCommand, columns: bslColumns,
		delete: &deleteVerb{deletedNote: "; its Velero BackupStorageLocation and credential copy go, the backups in its bucket stay"},
		describeTo: func(w io.Writer, nabsl *v1alpha1.NonAdminBackupStorageLocation, _ *Details, now time.Time) {
			DescribeBSL(w, nabsl, now)
		}}
}
