package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// TestDeleteDuringDeleteBackup: kubectl delete while Velero deletes the
// backup (spec.deleteBackup: true) lets that deletion finish — the
// DeleteBackupRequest stays until Velero processed it, finalize does not cut
// in — then the NAB goes, leaving no Velero object.
func (s *ControllerSuite) TestDeleteDuringDeleteBackup(c *C) {
	ctx := context.Background()
	nab, backup := s.createdBackup(c, "twice-deleted")
	setDeleteBackup(c, nab)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		p := got.Status.Plan
		return p.Action == "delete" && p.Current == "waitForDeletion: waiting", p.Action + " " + p.Current
	})
	c.Assert(testClient.Delete(ctx, got), IsNil)
	// The delete action keeps running; nothing is removed behind Velero's back.
	dbrKey := client.ObjectKey{Namespace: s.oadp, Name: backup.Name}
	for range 6 {
		time.Sleep(250 * time.Millisecond)
		got = getNAB(c, nab)
		c.Assert(got.Status.Plan.Action, Equals, "delete")
		c.Assert(testClient.Get(ctx, dbrKey, &velerov1.DeleteBackupRequest{}), IsNil, Commentf("the DeleteBackupRequest must stay until processed"))
	}
	c.Check(got.Status.Plan.State, Equals, v1alpha1.PlanRunning)
	c.Check(got.DeletionTimestamp.IsZero(), Equals, false)

	// Velero finishes: the request is processed, the Backup and its data go.
	dbr := &velerov1.DeleteBackupRequest{}
	c.Assert(testClient.Get(ctx, dbrKey, dbr), IsNil)
	veleroDeletes(c, dbr, backup, nab)
	c.Check(apierrors.IsNotFound(testClient.Get(ctx, dbrKey, &velerov1.DeleteBackupRequest{})), Equals, true)
	c.Check(apierrors.IsNotFound(testClient.Get(ctx, client.ObjectKeyFromObject(backup), &velerov1.Backup{})), Equals, true)
}

// TestSupersededBackupEndsProperly: spec.deleteBackup set while the backup
// still runs supersedes the backup plan: its deferPhase runs and the story
// ends (EndedAction) before the delete action starts; the new plan records
// the superseded one.
func (s *ControllerSuite) TestSupersededBackupEndsProperly(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	nab := newNAB(ns, "changed-mind", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan != nil && got.Status.Plan.Current == "waitForBackup: waiting", fmt.Sprintf("%+v", got.Status.Plan)
	})
	setDeleteBackup(c, got)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		p := got.Status.Plan
		return p.Action == "delete" && p.Superseded != nil, fmt.Sprintf("%s %+v", p.Action, p.Superseded)
	})
	sup := got.Status.Plan.Superseded
	c.Check(sup.Action, Equals, "backup")
	c.Check(sup.Reason, Equals, "superseded by action delete")
	c.Check(sup.Current, Equals, "finalStatus: complete")
	c.Check(sup.DeferPhaseState, Equals, v1alpha1.PhaseComplete)
	eventually(c, 5*time.Second, func() (bool, string) {
		story := strings.Join(eventStory(c, ns, "changed-mind"), "\n")
		return regexp.MustCompile(`(?s)Normal PhaseWaiting: Started action backup .*` +
			`Ended deferPhase [^;]*; Ended action backup.*Started action delete`).MatchString(story), story
	})
}
