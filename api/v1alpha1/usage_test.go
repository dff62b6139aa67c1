package v1alpha1

import (
	"reflect"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What counts, by location: measured and unmeasured backups that hold or
// will hold one; not those being deleted, refused before a Velero Backup
// existed, or whose Velero Backup failed.
func TestUsageByLocation(t *testing.T) {
	now := metav1.Now()
	measured := func(location string, bytes int64) NonAdminBackup {
		return NonAdminBackup{Spec: NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{StorageLocation: location}},
			Status: NonAdminBackupStatus{Usage: &BackupUsage{TotalBytes: bytes, StorageLocation: LocationName(location)}}}
	}
	running := NonAdminBackup{Spec: NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{StorageLocation: "mine"}}}
	deleting := measured("", 1000)
	deleting.Spec.DeleteBackup = true
	gone := measured("", 1000)
	gone.DeletionTimestamp = &now
	refused := NonAdminBackup{Status: NonAdminBackupStatus{Plan: &PlanStatus{State: PlanFailed}}}
	failed := NonAdminBackup{Status: NonAdminBackupStatus{VeleroBackup: &VeleroBackup{Name: "b", Status: &velerov1.BackupStatus{Phase: velerov1.BackupPhaseFailed}}}}
	// The location measured wins over an edited spec.
	moved := measured("mine", 5)
	moved.Spec.BackupSpec.StorageLocation = "elsewhere"

	got := UsageByLocation([]NonAdminBackup{measured("", 100), measured("", 20), running, deleting, gone, refused, failed, moved})
	want := map[string]*StorageUsage{
		"default": {Backups: 2, TotalBytes: 120},
		"mine":    {Backups: 2, TotalBytes: 5, NotMeasured: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UsageByLocation = %v, want %v", got, want)
	}
	var u StorageUsage
	if u.Add(&deleting) || u != (StorageUsage{}) {
		t.Errorf("Add of a backup being deleted counted it: %+v", u)
	}
}
