package controllers_test

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/backupsync"
	"github.com/nacflow/nacflow/phases"
)

// setLabel sets (value != "") or removes a label of nab, as a tenant may.
func setLabel(c *C, nab *v1alpha1.NonAdminBackup, key, value string) {
	got := getNAB(c, nab)
	before := got.DeepCopy()
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	if value == "" {
		delete(got.Labels, key)
	} else {
		got.Labels[key] = value
	}
	c.Assert(testClient.Patch(context.Background(), got, client.MergeFrom(before)), IsNil)
}

// TestSyncLabelNeverPicksTheActionLater: how a NAB got its backup is decided
// when its first plan starts. Removing the sync label from an adopted NAB,
// or adding one to a NAB that made its own backup, never starts the other
// action: no second Velero Backup carrying another NAB's NACUUID, no adopted
// backup taken over.
func (s *ControllerSuite) TestSyncLabelNeverPicksTheActionLater(c *C) {
	ctx := context.Background()
	defaultBSL(c, s.oadp)
	ns := createNamespace(c, "tenant")
	const synced = "0b0b0b0b-1111-5222-8333-444455556666"
	veleroSyncedBackup(c, s.oadp, ns, "adopted", synced, velerov1.BackupPhaseCompleted)
	sync := &backupsync.BackupSync{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp, TenantSpec: phases.SyncedBackupSpec}
	_, err := sync.SyncOnce(ctx)
	c.Assert(err, IsNil)
	adopted := &v1alpha1.NonAdminBackup{}
	adopted.Namespace, adopted.Name = ns, "adopted"
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNAB(c, adopted)
		return g.Status.Plan != nil && g.Status.Plan.Action == "adopt" && g.Status.Plan.State == v1alpha1.PlanComplete, fmt.Sprintf("%+v", g.Status.Plan)
	})
	own, _ := s.backupOf(c, ns, "own")

	// The tenant flips the labels; label edits do not wake the controller,
	// so touch each NAB's Velero Backup (a watch maps it back to the NAB).
	setLabel(c, adopted, v1alpha1.NabSyncedFromNACUUIDLabel, "")
	setLabel(c, own, v1alpha1.NabSyncedFromNACUUIDLabel, synced)
	for _, n := range []*v1alpha1.NonAdminBackup{adopted, own} {
		b := &velerov1.Backup{}
		c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: getNAB(c, n).Status.VeleroBackup.Name}, b), IsNil)
		before := b.DeepCopy()
		b.Labels["nudge"] = "1"
		c.Assert(testClient.Patch(ctx, b, client.MergeFrom(before)), IsNil)
	}
	time.Sleep(3 * time.Second)
	c.Check(getNAB(c, adopted).Status.Plan.Action, Equals, "adopt")
	c.Check(getNAB(c, adopted).Status.Plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(getNAB(c, own).Status.Plan.Action, Equals, "backup")
	c.Check(veleroBackupsOf(c, s.oadp, synced), HasLen, 1, Commentf("one Velero Backup carries the synced NACUUID"))
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(getNAB(c, own).UID)), HasLen, 1)
	c.Check(getNAB(c, own).Status.VeleroBackup.NACUUID, Equals, v1alpha1.NACUUIDOf(getNAB(c, own).UID))
}

// TestSyncLabelHonouredOnlyOnSyncedNABs: a tenant who sets the sync label
// itself — naming a backup of its own namespace, which passes the origin
// check — is refused once the grace for backup sync's record has passed:
// only backup sync records the backup in status, which tenants cannot
// write. Nothing is created, the backup keeps one owner.
func (s *ControllerSuite) TestSyncLabelHonouredOnlyOnSyncedNABs(c *C) {
	ctx := context.Background()
	own, _ := s.backupOf(c, createNamespace(c, "tenant"), "original")
	uuid := getNAB(c, own).Status.VeleroBackup.NACUUID
	claim := newNAB(own.Namespace, "second-owner", velerov1.BackupSpec{})
	claim.Labels = map[string]string{v1alpha1.NabSyncedFromNACUUIDLabel: uuid}
	c.Assert(testClient.Create(ctx, claim), IsNil)
	eventually(c, 5*time.Second, func() (bool, string) {
		p := getNAB(c, claim).Status.Plan
		return p != nil && p.Current == "adoptBackup: waiting", fmt.Sprintf("%+v", p)
	})
	msg := refusedWithStatus(c, claim, "a sync label set by the tenant")
	c.Check(msg, Equals, "label openshift.io/oadp-nab-synced-from-nacuuid: honoured only on NonAdminBackups made by backup sync, "+
		"which records the Velero Backup in status.veleroBackup.nacuuid; this one was not: remove the label to make a new backup")
	c.Check(getNAB(c, claim).Status.VeleroBackup, IsNil)
	c.Check(veleroBackupsOf(c, s.oadp, uuid), HasLen, 1)
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(getNAB(c, claim).UID)), HasLen, 0)
}
