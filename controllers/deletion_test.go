package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// createdBackup creates a NAB in a new tenant namespace and waits until its
// Velero Backup exists and Velero (played by the test) completed it. It
// returns the NAB and the Velero Backup.
func (s *ControllerSuite) createdBackup(c *C, name string) (*v1alpha1.NonAdminBackup, *velerov1.Backup) {
	ns := createNamespace(c, "tenant")
	nab := newNAB(ns, name, velerov1.BackupSpec{})
	c.Assert(testClient.Create(context.Background(), nab), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", got.Status)
	})
	completeBackup(c, s.oadp, got.Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan.State == v1alpha1.PlanComplete, string(got.Status.Plan.State)
	})
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKey{Namespace: s.oadp, Name: got.Status.VeleroBackup.Name}, b), IsNil)
	return got, b
}

// veleroDeletes plays Velero processing dbr — the request marked processed,
// then the Backup deleted (in that order: once the Backup is gone the delete
// action ends and removes the request itself) — and waits until nab is gone.
func veleroDeletes(c *C, dbr *velerov1.DeleteBackupRequest, backup *velerov1.Backup, nab *v1alpha1.NonAdminBackup) {
	ctx := context.Background()
	before := dbr.DeepCopy()
	dbr.Status.Phase = velerov1.DeleteBackupRequestPhaseProcessed
	c.Assert(testClient.Patch(ctx, dbr, client.MergeFrom(before)), IsNil)
	c.Assert(testClient.Delete(ctx, backup), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("NAB still there: %v", err)
	})
}

// veleroCannotDelete plays Velero failing the DeleteBackupRequest of
// backup: once nacflow made it, it is marked processed with the error
// "bucket unreachable" and the Backup stays.
func veleroCannotDelete(c *C, oadp string, backup *velerov1.Backup) {
	ctx := context.Background()
	dbr := &velerov1.DeleteBackupRequest{}
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKey{Namespace: oadp, Name: backup.Name}, dbr)
		return err == nil, fmt.Sprintf("%v", err)
	})
	before := dbr.DeepCopy()
	dbr.Status = velerov1.DeleteBackupRequestStatus{Phase: velerov1.DeleteBackupRequestPhaseProcessed, Errors: []string{"bucket unreachable"}}
	c.Assert(testClient.Patch(ctx, dbr, client.MergeFrom(before)), IsNil)
}

func setDeleteBackup(c *C, nab *v1alpha1.NonAdminBackup) {
	before := nab.DeepCopy()
	nab.Spec.DeleteBackup = true
	c.Assert(testClient.Patch(context.Background(), nab, client.MergeFrom(before)), IsNil)
}

func (s *ControllerSuite) TestDeleteBackupEndToEnd(c *C) {
	ctx := context.Background()
	nab, backup := s.createdBackup(c, "doomed")
	// A restore made from it, and one made from another NAB of the namespace.
	restore := newNAR(nab.Namespace, "from-doomed", velerov1.RestoreSpec{BackupName: "doomed"})
	c.Assert(testClient.Create(ctx, restore), IsNil)
	unrelated := newNAR(nab.Namespace, "from-other", velerov1.RestoreSpec{BackupName: "other"})
	c.Assert(testClient.Create(ctx, unrelated), IsNil)
	setDeleteBackup(c, nab)

	// nacflow asks Velero: one DeleteBackupRequest, labelled as Velero's CLI does.
	dbr := &velerov1.DeleteBackupRequest{}
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: backup.Name}, dbr)
		return err == nil, fmt.Sprintf("%v", err)
	})
	c.Check(dbr.Spec.BackupName, Equals, backup.Name)
	c.Check(dbr.Labels, DeepEquals, map[string]string{
		"velero.io/backup-name":                backup.Name,
		"velero.io/backup-uid":                 string(backup.UID),
		"openshift.io/oadp":                    "True",
		"app.kubernetes.io/managed-by":         "oadp-nac-controller",
		"openshift.io/oadp-nab-origin-nacuuid": v1alpha1.NACUUIDOf(nab.UID),
	})
	c.Check(dbr.Annotations["openshift.io/oadp-nab-origin-name"], Equals, "doomed")
	list := &velerov1.DeleteBackupRequestList{}
	c.Assert(testClient.List(ctx, list, client.InNamespace(s.oadp), client.MatchingLabels{"velero.io/backup-name": backup.Name}), IsNil)
	c.Check(list.Items, HasLen, 1)

	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		p := got.Status.Plan
		return p.Action == "delete" && p.Current == "waitForDeletion: waiting", p.Action + " " + p.Current
	})
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseDeleting)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDeleting)
	c.Assert(cond, NotNil)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonDeletionPending)
	c.Check(got.Status.VeleroDeleteBackupRequest.Name, Equals, backup.Name)
	eventually(c, 5*time.Second, func() (bool, string) {
		story := eventStory(c, nab.Namespace, "doomed")
		last := ""
		if len(story) > 0 {
			last = story[len(story)-1]
		}
		return containsInOrder(eventReasons(c, nab.Namespace, "doomed"), []string{"Normal EndedAction", "Normal PhaseWaiting"}) &&
				regexp.MustCompile(`^Normal PhaseWaiting: Started action delete of blueprint nonadminbackup; Ended phase [^;]*; Ended phase [^;]*; Phase waitForDeletion \(WaitFor\) is waiting`).MatchString(last),
			strings.Join(story, "\n")
	})

	veleroDeletes(c, dbr, backup, nab)
	eventually(c, 5*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(dbr), &velerov1.DeleteBackupRequest{})
		return apierrors.IsNotFound(err), "DeleteBackupRequest still there"
	})
	// The restore made from the deleted backup went with it; the other stays.
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(restore), &v1alpha1.NonAdminRestore{})
		return apierrors.IsNotFound(err), fmt.Sprintf("NonAdminRestore from-doomed: %v", err)
	})
	c.Check(testClient.Get(ctx, client.ObjectKeyFromObject(unrelated), &v1alpha1.NonAdminRestore{}), IsNil)
}

func (s *ControllerSuite) TestDeleteBackupVeleroErrors(c *C) {
	ctx := context.Background()
	nab, backup := s.createdBackup(c, "stuck")
	setDeleteBackup(c, nab)
	veleroCannotDelete(c, s.oadp, backup)

	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan.State == v1alpha1.PlanFailed, string(got.Status.Plan.State)
	})
	c.Check(got.Status.Plan.Phase("waitForDeletion").Message, Equals, fmt.Sprintf("Velero could not delete Backup %s: bucket unreachable", backup.Name))
	c.Check(got.Status.VeleroDeleteBackupRequest.Status.Errors, DeepEquals, []string{"bucket unreachable"})
	c.Check(got.Status.Plan.DeferPhase.State, Equals, v1alpha1.PhaseComplete)
	// Nothing was deleted behind the user's back.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(backup), &velerov1.Backup{}), IsNil)
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{}), IsNil)
}

func (s *ControllerSuite) TestPlainDeleteKeepsNoVeleroObjects(c *C) {
	ctx := context.Background()
	nab, backup := s.createdBackup(c, "plain")
	// A DeleteBackupRequest left from an earlier attempt, with the NAB's label.
	stale := &velerov1.DeleteBackupRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: backup.Name + "-old", Labels: backup.Labels},
		Spec:       velerov1.DeleteBackupRequestSpec{BackupName: backup.Name},
	}
	c.Assert(testClient.Create(ctx, stale), IsNil)
	// Another tenant's object in the OADP namespace is never touched.
	other := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: "someone-else",
		Labels: map[string]string{"openshift.io/oadp": "True", "openshift.io/oadp-nab-origin-nacuuid": "another-uuid"}}}
	c.Assert(testClient.Create(ctx, other), IsNil)

	c.Assert(testClient.Delete(ctx, nab), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("NAB still there: %v", err)
	})
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(nab.UID)), HasLen, 0)
	dbrs := &velerov1.DeleteBackupRequestList{}
	c.Assert(testClient.List(ctx, dbrs, client.InNamespace(s.oadp), client.MatchingLabels{"openshift.io/oadp-nab-origin-nacuuid": v1alpha1.NACUUIDOf(nab.UID)}), IsNil)
	c.Check(dbrs.Items, HasLen, 0)
	c.Check(testClient.Get(ctx, client.ObjectKeyFromObject(other), &velerov1.Backup{}), IsNil)
}

func (s *ControllerSuite) TestVeleroBackupDeletedUnderneath(c *C) {
	ctx := context.Background()
	nab, backup := s.createdBackup(c, "orphaned")
	// The ended plan is compacted; the controller's cache holds only its
	// summary, and the status write below must leave the stored plan as it
	// is (a whole one: StatusPlansSuite).
	c.Assert(nab.Status.Plan.Compacted, Equals, true)
	plan := nab.Status.Plan.DeepCopy()
	c.Assert(testClient.Delete(ctx, backup), IsNil)
	// The Backup's deletion event wakes the controller through its watch.
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff, string(got.Status.Phase)
	})
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionQueued)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonVeleroBackupNotFound)
	c.Check(cond.Message, Equals, fmt.Sprintf("Velero Backup %s no longer exists in %s: it was deleted outside nacflow", backup.Name, s.oadp))
	c.Check(got.Status.Plan, DeepEquals, plan)
}

// forceDeleteBackup (OADP NAC): the NAB and its Velero objects go even when
// Velero's DeleteBackupRequest fails; set on a NAB whose plain delete
// already failed that way, it takes over from it.
func (s *ControllerSuite) TestForceDeleteBackup(c *C) {
	ctx := context.Background()
	nab, backup := s.createdBackup(c, "forced")
	restore := newNAR(nab.Namespace, "from-forced", velerov1.RestoreSpec{BackupName: "forced"})
	c.Assert(testClient.Create(ctx, restore), IsNil)
	setDeleteBackup(c, nab)
	veleroCannotDelete(c, s.oadp, backup)
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		return got.Status.Plan.Action == v1alpha1.ActionDelete && got.Status.Plan.State == v1alpha1.PlanFailed, string(got.Status.Plan.State)
	})

	// The tenant forces it: the Velero Backup, the request, the restores
	// made from it and the NAB go, whatever Velero said.
	nab = getNAB(c, nab)
	patched := nab.DeepCopy()
	patched.Spec.ForceDeleteBackup = true
	c.Assert(testClient.Patch(ctx, patched, client.MergeFrom(nab)), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("NAB still there: %v", err)
	})
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(nab.UID)), HasLen, 0)
	dbrs := &velerov1.DeleteBackupRequestList{}
	c.Assert(testClient.List(ctx, dbrs, client.InNamespace(s.oadp), client.MatchingLabels{v1alpha1.NabOriginNACUUIDLabel: v1alpha1.NACUUIDOf(nab.UID)}), IsNil)
	c.Check(dbrs.Items, HasLen, 0)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(restore), &v1alpha1.NonAdminRestore{})
		return apierrors.IsNotFound(err), fmt.Sprintf("restore still there: %v", err)
	})
	var events string
	eventually(c, 10*time.Second, func() (bool, string) {
		// Events are sent after the status write that records them.
		events = strings.Join(eventMessages(c, nab.Namespace, nab.Name), "\n")
		return strings.Contains(events, "Ended action forceDelete"), events
	})
	c.Check(events, Matches, fmt.Sprintf(`(?s).*Started action forceDelete.*`+
		`Ended phase waitForDeletion \(WaitFor\) in [0-9]+s: Velero could not delete Backup %s \(going on: forced deletion\): bucket unreachable.*`+
		`Ended action forceDelete.*`, backup.Name))

	// Once true, it stays true (the NAB waits for Velero meanwhile: the
	// test plays no Velero for it).
	other, _ := s.createdBackup(c, "forced-twice")
	forced := other.DeepCopy()
	forced.Spec.ForceDeleteBackup = true
	c.Assert(testClient.Patch(ctx, forced, client.MergeFrom(other)), IsNil)
	again := getNAB(c, forced)
	back := again.DeepCopy()
	back.Spec.ForceDeleteBackup = false
	c.Check(testClient.Patch(ctx, back, client.MergeFrom(again)), ErrorMatches, `.*forceDeleteBackup can not be set back to false once true.*`)
}

// A forceDelete plan that fails in nacflow itself (here: a per-tenant
// blueprint whose phase cannot run) still lets the NAB go: its finalize
// action then removes the Velero objects.
func (s *ControllerSuite) TestForceDeleteWhenItsPlanFails(c *C) {
	ctx := context.Background()
	broken := &v1alpha1.Blueprint{
		ObjectMeta: metav1.ObjectMeta{Name: "nonadminbackup-broken-force"},
		Spec: v1alpha1.BlueprintSpec{Kind: "NonAdminBackup",
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"force": "broken"}},
			Actions: map[string]v1alpha1.BlueprintAction{"forceDelete": {Phases: []v1alpha1.BlueprintPhase{{
				Name: "wait", Func: "WaitFor",
				Args: map[string]apiextensionsv1.JSON{"kind": {Raw: []byte(`"Nothing"`)}, "name": {Raw: []byte(`"x"`)}},
			}}}}},
	}
	defer applyBlueprints(c, s.oadp, broken)()
	ns := labelledNamespace(c, map[string]string{"force": "broken"})
	nab, backup := s.backupOf(c, ns, "forced")
	completeBackup(c, s.oadp, backup.Name, velerov1.BackupPhaseCompleted)
	patched := getNAB(c, nab)
	forced := patched.DeepCopy()
	forced.Spec.ForceDeleteBackup = true
	c.Assert(testClient.Patch(ctx, forced, client.MergeFrom(patched)), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("NAB still there: %v", err)
	})
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(nab.UID)), HasLen, 0, Commentf("finalize removed the Velero Backup"))
	events := strings.Join(eventMessages(c, ns, "forced"), "\n")
	c.Check(events, Matches, `(?s).*Action forceDelete failed.*Started action finalize.*`)
}
