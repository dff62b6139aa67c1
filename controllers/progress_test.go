package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	. "gopkg.in/check.v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// nodeAgentObject creates obj in oadp labelled key=owner, as Velero's node
// agent does, and sets its status.phase.
func nodeAgentObject(c *C, obj client.Object, oadp, name, key, owner string, setPhase func()) {
	ctx := context.Background()
	obj.SetNamespace(oadp)
	obj.SetName(name)
	obj.SetLabels(map[string]string{key: owner})
	c.Assert(testClient.Create(ctx, obj), IsNil)
	setPhase()
	if err := testClient.Status().Update(ctx, obj); err != nil {
		c.Assert(testClient.Update(ctx, obj), IsNil) // a CRD without the status subresource
	}
}

func dataUpload(c *C, oadp, name, backup string, phase velerov2alpha1.DataUploadPhase) {
	du := &velerov2alpha1.DataUpload{}
	nodeAgentObject(c, du, oadp, name, velerov1.BackupNameLabel, backup, func() { du.Status.Phase = phase })
}

func podVolumeBackup(c *C, oadp, name, backup string, phase velerov1.PodVolumeBackupPhase) {
	pvb := &velerov1.PodVolumeBackup{}
	nodeAgentObject(c, pvb, oadp, name, velerov1.BackupNameLabel, backup, func() { pvb.Status.Phase = phase })
}

// NAB and NAR status count their Velero object's volume work by phase, with
// OADP NAC's field names, and the wait message says how far it is.
func (s *ControllerSuite) TestVolumeProgress(c *C) {
	ctx := context.Background()
	nab, backup := s.backupOf(c, createNamespace(c, "tenant"), "volumes")
	dataUpload(c, s.oadp, backup.Name+"-du1", backup.Name, velerov2alpha1.DataUploadPhaseCompleted)
	dataUpload(c, s.oadp, backup.Name+"-du2", backup.Name, velerov2alpha1.DataUploadPhaseInProgress)
	dataUpload(c, s.oadp, backup.Name+"-du3", backup.Name, velerov2alpha1.DataUploadPhaseNew)
	podVolumeBackup(c, s.oadp, backup.Name+"-pvb1", backup.Name, velerov1.PodVolumeBackupPhaseCompleted)
	podVolumeBackup(c, s.oadp, backup.Name+"-pvb2", backup.Name, velerov1.PodVolumeBackupPhaseFailed)
	// Another backup's volume work is not counted.
	dataUpload(c, s.oadp, backup.Name+"-other", "someone-else", velerov2alpha1.DataUploadPhaseCompleted)

	var got *v1alpha1.NonAdminBackup
	wantDU := v1alpha1.DataMoverDataUploads{Total: 3, New: 1, InProgress: 1, Completed: 1}
	wantFS := v1alpha1.FileSystemPodVolumeBackups{Total: 2, Completed: 1, Failed: 1}
	eventually(c, 10*time.Second, func() (bool, string) {
		// Each object is created, then its status set: wait for the last.
		got = getNAB(c, nab)
		du, fs := got.Status.DataMoverDataUploads, got.Status.FileSystemPodVolumeBackups
		return du != nil && fs != nil && *du == wantDU && *fs == wantFS, fmt.Sprintf("%+v %+v", du, fs)
	})
	c.Check(got.Status.Plan.Phase("waitForBackup").Message, Equals,
		fmt.Sprintf("Velero Backup %s is not started; 2 of 5 volumes uploaded", backup.Name))

	// The last upload finishes, then the backup: the final count stays.
	du := &velerov2alpha1.DataUpload{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: backup.Name + "-du2"}, du), IsNil)
	du.Status.Phase = velerov2alpha1.DataUploadPhaseCompleted
	if err := testClient.Status().Update(ctx, du); err != nil {
		c.Assert(testClient.Update(ctx, du), IsNil)
	}
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.DataMoverDataUploads.Completed == 2, fmt.Sprintf("%+v", got.Status.DataMoverDataUploads)
	})
	completeBackup(c, s.oadp, backup.Name, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan.State == v1alpha1.PlanComplete, string(got.Status.Plan.State)
	})
	c.Check(got.Status.DataMoverDataUploads.Total, Equals, 3)

	// A restore of it: its PodVolumeRestores are counted.
	nar := newNAR(nab.Namespace, "volumes-back", velerov1.RestoreSpec{BackupName: "volumes"})
	c.Assert(testClient.Create(ctx, nar), IsNil)
	var restoreName string
	eventually(c, 10*time.Second, func() (bool, string) {
		g := &v1alpha1.NonAdminRestore{}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(nar), g), IsNil)
		if g.Status.VeleroRestore != nil {
			restoreName = g.Status.VeleroRestore.Name
		}
		return restoreName != "", fmt.Sprintf("%+v", g.Status.Plan)
	})
	pvr := &velerov1.PodVolumeRestore{}
	nodeAgentObject(c, pvr, s.oadp, restoreName+"-pvr", velerov1.RestoreNameLabel, restoreName, func() { pvr.Status.Phase = velerov1.PodVolumeRestorePhaseInProgress })
	eventually(c, 10*time.Second, func() (bool, string) {
		g := &v1alpha1.NonAdminRestore{}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(nar), g), IsNil)
		fs := g.Status.FileSystemPodVolumeRestores
		msg := ""
		if g.Status.Plan != nil {
			msg = g.Status.Plan.Phase("waitForRestore").Message
		}
		return fs != nil && *fs == v1alpha1.FileSystemPodVolumeRestores{Total: 1, InProgress: 1} && strings.Contains(msg, "0 of 1 volumes restored"),
			fmt.Sprintf("%+v %s", fs, msg)
	})
}

// A NonAdminBackup names the uploader its pod volumes moved with, as its
// PodVolumeBackups name it (OADP NAC's status.uploaderType); a backup
// without pod volumes names none.
func (s *ControllerSuite) TestUploaderType(c *C) {
	ns := createNamespace(c, "tenant")
	nab, backup := s.backupOf(c, ns, "kopia-volumes")
	pvb := &velerov1.PodVolumeBackup{Spec: velerov1.PodVolumeBackupSpec{UploaderType: "kopia"}}
	nodeAgentObject(c, pvb, s.oadp, backup.Name+"-pvb1", velerov1.BackupNameLabel, backup.Name, func() { pvb.Status.Phase = velerov1.PodVolumeBackupPhaseInProgress })
	none, noneBackup := s.backupOf(c, ns, "no-volumes")
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		return got.Status.UploaderType == "kopia", fmt.Sprintf("uploaderType %q, %+v", got.Status.UploaderType, got.Status.FileSystemPodVolumeBackups)
	})
	completeBackup(c, s.oadp, noneBackup.Name, velerov1.BackupPhaseCompleted)
	planComplete(c, none)
	c.Check(getNAB(c, none).Status.UploaderType, Equals, "")
}
