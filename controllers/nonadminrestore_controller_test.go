package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
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
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/phases"
)

func newNAR(ns, name string, spec velerov1.RestoreSpec) *v1alpha1.NonAdminRestore {
	return &v1alpha1.NonAdminRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.NonAdminRestoreSpec{RestoreSpec: &spec},
	}
}

func getNAR(c *C, nar *v1alpha1.NonAdminRestore) *v1alpha1.NonAdminRestore {
	got := &v1alpha1.NonAdminRestore{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(nar), got), IsNil)
	return got
}

// veleroRestoresOf lists the Velero Restores in oadp labelled with nacuuid.
func veleroRestoresOf(c *C, oadp, nacuuid string) []velerov1.Restore {
	list := &velerov1.RestoreList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(oadp),
		client.MatchingLabels{v1alpha1.NarOriginNACUUIDLabel: nacuuid}), IsNil)
	return list.Items
}

// setRestorePhase plays Velero on a Restore.
func setRestorePhase(c *C, oadp, name string, phase velerov1.RestorePhase) {
	r := &velerov1.Restore{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKey{Namespace: oadp, Name: name}, r), IsNil)
	before := r.DeepCopy()
	r.Status.Phase = phase
	r.Status.Progress = &velerov1.RestoreProgress{TotalItems: 5, ItemsRestored: 5}
	c.Assert(testClient.Patch(context.Background(), r, client.MergeFrom(before)), IsNil)
}

// refusedNAR waits until nar's plan failed and returns the Accepted
// condition's message; no Velero Restore may exist for it.
func (s *ControllerSuite) refusedNAR(c *C, nar *v1alpha1.NonAdminRestore) (*v1alpha1.NonAdminRestore, string) {
	var got *v1alpha1.NonAdminRestore
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAR(c, nar)
		return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%+v", got.Status.Plan)
	})
	c.Check(veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 0)
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
	if cond == nil {
		return got, ""
	}
	c.Check(cond.Reason, Equals, v1alpha1.ReasonInvalidRestoreSpec)
	return got, cond.Message
}

func (s *ControllerSuite) TestRestoreHappyPath(c *C) {
	ctx := context.Background()
	nab, backup := s.createdBackup(c, "source")
	ns := nab.Namespace
	nar := newNAR(ns, "bring-back", velerov1.RestoreSpec{BackupName: "source"})
	c.Assert(testClient.Create(ctx, nar), IsNil)

	var got *v1alpha1.NonAdminRestore
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAR(c, nar)
		return got.Status.Plan != nil && got.Status.Plan.Current == "waitForRestore: waiting", fmt.Sprintf("%+v", got.Status.Plan)
	})
	restores := veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID))
	c.Assert(restores, HasLen, 1)
	r := restores[0]
	c.Check(r.Name, Equals, v1alpha1.NACObjectName(ns, "bring-back", v1alpha1.NACUUIDOf(got.UID)))
	c.Check(r.Spec.BackupName, Equals, backup.Name, Commentf("the Velero backup's name, not the NAB's"))
	c.Check(r.Spec.IncludedNamespaces, DeepEquals, []string{ns})
	c.Check(strings.Join(r.Spec.ExcludedResources, ","), Matches, ".*nonadminbackups.oadp.openshift.io.*volumesnapshotclasses.snapshot.storage.k8s.io.*")
	for _, k := range phases.ClusterExcludedResources {
		c.Check(slices.Contains(r.Spec.ExcludedResources, k), Equals, true, Commentf("%s not excluded from the restore", k))
	}
	c.Check(slices.Contains(r.Spec.ExcludedResources, "persistentvolumes"), Equals, false, Commentf("PVs stay restorable through their PVCs"))
	c.Check(r.Labels["openshift.io/oadp"], Equals, "True")
	c.Check(r.Annotations, DeepEquals, map[string]string{"openshift.io/oadp-nar-origin-name": "bring-back", "openshift.io/oadp-nar-origin-namespace": ns,
		v1alpha1.RestoreBackupUIDAnnotation: string(backup.UID)}, Commentf("pinned to the Backup the restore waited for"))
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionQueued).Reason, Equals, v1alpha1.ReasonRestoreScheduled)
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted).Reason, Equals, v1alpha1.ReasonRestoreAccepted)

	setRestorePhase(c, s.oadp, r.Name, velerov1.RestorePhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAR(c, nar)
		return got.Status.Plan.State == v1alpha1.PlanComplete, string(got.Status.Plan.State)
	})
	c.Check(got.Status.VeleroRestore.Status.Phase, Equals, velerov1.RestorePhaseCompleted)
	c.Check(got.Status.VeleroRestore.Status.Progress.ItemsRestored, Equals, 5)
	c.Check(got.Status.QueueInfo.EstimatedQueuePosition, Equals, 0)
	eventually(c, 5*time.Second, func() (bool, string) {
		story := strings.Join(eventStory(c, ns, "bring-back"), "\n")
		return regexp.MustCompile(`(?s)Normal PhaseWaiting: Started action restore of blueprint nonadminrestore; ` +
			`Ended phase validate \(ValidateRestoreSpec\)[^;]*; Ended phase waitForBackup \(WaitFor\)[^;]*; Ended phase checkItems \(CheckRestoreItems\)[^;]*; Ended phase waitForTurn \(WaitForTurn\)[^;]*; Ended phase createRestore \(CreateVeleroRestore\)[^;]*; ` +
			`Phase waitForRestore \(WaitFor\) is waiting[^\n]*\n` +
			`Normal EndedAction: Ended phase waitForRestore \(WaitFor\)[^;]*; Ended phase syncStatus \(SyncStatus\)[^;]*; .*Ended deferPhase [^;]*; Ended action restore`).MatchString(story), story
	})

	// Deleting the NAR removes the Velero Restore object.
	c.Assert(testClient.Delete(ctx, got), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nar), &v1alpha1.NonAdminRestore{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
	})
	c.Check(veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 0)
}

func (s *ControllerSuite) TestRestoreRefusals(c *C) {
	ctx := context.Background()
	// Another tenant's completed backup.
	other, otherBackup := s.createdBackup(c, "theirs")
	ns := createNamespace(c, "tenant")
	own := newNAB(ns, "mine", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, own), IsNil)

	for _, tc := range []struct {
		name string
		spec velerov1.RestoreSpec
		msg  string
	}{
		// The other tenant's NAB name, and its Velero backup's name: neither
		// is a NonAdminBackup of this namespace.
		{"their-nab", velerov1.RestoreSpec{BackupName: other.Name}, fmt.Sprintf(`spec.restoreSpec.backupName: no NonAdminBackup named "theirs" in namespace %s`, ns)},
		{"their-velero-backup", velerov1.RestoreSpec{BackupName: otherBackup.Name}, fmt.Sprintf(`spec.restoreSpec.backupName: no NonAdminBackup named %q in namespace %s`, otherBackup.Name, ns)},
		{"mapping", velerov1.RestoreSpec{BackupName: "mine", NamespaceMapping: map[string]string{ns: "elsewhere"}}, "spec.restoreSpec.namespaceMapping: " + ns + " to elsewhere: a restore into another namespace is held to the rights there of whoever asked, and no one is known (condition RequesterVerified: WebhookNotInstalled)"},
		{"other-ns", velerov1.RestoreSpec{BackupName: "mine", IncludedNamespaces: []string{other.Namespace}}, fmt.Sprintf(`spec.restoreSpec.includedNamespaces can not contain namespaces other than: %s (found %q)`, ns, other.Namespace)},
		{"excluded", velerov1.RestoreSpec{BackupName: "mine", ExcludedNamespaces: []string{"x"}}, "spec.restoreSpec.excludedNamespaces is restricted: found x"},
		{"schedule", velerov1.RestoreSpec{BackupName: "mine", ScheduleName: "nightly"}, "spec.restoreSpec.scheduleName is restricted: restore from a NonAdminBackup with backupName"},
	} {
		nar := newNAR(ns, tc.name, tc.spec)
		c.Assert(testClient.Create(ctx, nar), IsNil)
		_, msg := s.refusedNAR(c, nar)
		c.Check(msg, Equals, tc.msg, Commentf(tc.name))
	}
}

func (s *ControllerSuite) TestRestoreWaitsForRunningBackupAndRefusesFailed(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	nab := newNAB(ns, "slow", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	var gotNAB *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		gotNAB = getNAB(c, nab)
		return gotNAB.Status.VeleroBackup != nil && gotNAB.Status.VeleroBackup.Name != "", "no Velero Backup yet"
	})
	completeBackup(c, s.oadp, gotNAB.Status.VeleroBackup.Name, velerov1.BackupPhaseInProgress)

	nar := newNAR(ns, "patient", velerov1.RestoreSpec{BackupName: "slow"})
	c.Assert(testClient.Create(ctx, nar), IsNil)
	var got *v1alpha1.NonAdminRestore
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAR(c, nar)
		return got.Status.Plan != nil && got.Status.Plan.Current == "waitForBackup: waiting", fmt.Sprintf("%+v", got.Status.Plan)
	})
	c.Check(got.Status.Plan.Phase("waitForBackup").Message, Matches, "Velero Backup .* of NonAdminBackup slow is InProgress")
	c.Check(veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 0)

	// The backup completes: the restore starts.
	completeBackup(c, s.oadp, gotNAB.Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAR(c, nar)
		return got.Status.Plan.Current == "waitForRestore: waiting", got.Status.Plan.Current
	})
	c.Check(veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 1)

	// A failed backup is refused.
	failed, failedBackup := s.createdBackup(c, "broken")
	completeBackup(c, s.oadp, failedBackup.Name, velerov1.BackupPhaseFailed)
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNAB(c, failed)
		return g.Status.VeleroBackup.Status.Phase == velerov1.BackupPhaseFailed, string(g.Status.VeleroBackup.Status.Phase)
	})
	bad := newNAR(failed.Namespace, "hopeless", velerov1.RestoreSpec{BackupName: "broken"})
	c.Assert(testClient.Create(ctx, bad), IsNil)
	_, msg := s.refusedNAR(c, bad)
	c.Check(msg, Equals, `spec.restoreSpec.backupName: the backup of NonAdminBackup "broken" is Failed: only Completed or PartiallyFailed backups can be restored`)

	// A backup that fails while a restore waits for it refuses the restore
	// the way validation does: Accepted=False, BackingOff.
	flaky, flakyBackup := s.createdBackup(c, "flaky")
	completeBackup(c, s.oadp, flakyBackup.Name, velerov1.BackupPhaseInProgress)
	waiting := newNAR(flaky.Namespace, "too-early", velerov1.RestoreSpec{BackupName: "flaky"})
	c.Assert(testClient.Create(ctx, waiting), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNAR(c, waiting)
		return g.Status.Plan != nil && g.Status.Plan.Current == "waitForBackup: waiting", fmt.Sprintf("%+v", g.Status.Plan)
	})
	completeBackup(c, s.oadp, flakyBackup.Name, velerov1.BackupPhaseFailed)
	msg = refusedWithStatus(c, waiting, "a backup failing under a waiting restore")
	c.Check(msg, Equals, fmt.Sprintf("spec.restoreSpec.backupName: the Velero Backup %s of NonAdminBackup flaky is Failed: only Completed or PartiallyFailed backups can be restored", flakyBackup.Name))
	c.Check(veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(getNAR(c, waiting).UID)), HasLen, 0)
}

func (s *ControllerSuite) TestRestoreEnforcement(c *C) {
	ctx := context.Background()
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminRestore"))
	c.Assert(err, IsNil)
	bp.Namespace = s.oadp
	a := bp.Spec.Actions["restore"]
	c.Assert(a.Phases[0].Func, Equals, "ValidateRestoreSpec")
	a.Phases[0].Args = map[string]apiextensionsv1.JSON{"enforce": {Raw: []byte(`{"existingResourcePolicy": "update", "restorePVs": false}`)}}
	bp.Spec.Actions["restore"] = a
	c.Assert(testClient.Create(ctx, bp), IsNil)
	defer func() { c.Check(testClient.Delete(ctx, bp), IsNil) }()
	nab, _ := s.createdBackup(c, "enforced-source")

	// Fill-in: the Velero Restore carries the enforced values.
	var got *v1alpha1.NonAdminRestore
	eventually(c, 10*time.Second, func() (bool, string) {
		nar := newNAR(nab.Namespace, fmt.Sprintf("filled-%d", time.Now().UnixNano()), velerov1.RestoreSpec{BackupName: nab.Name})
		c.Assert(testClient.Create(ctx, nar), IsNil)
		eventually(c, 10*time.Second, func() (bool, string) {
			got = getNAR(c, nar)
			return got.Status.VeleroRestore != nil && got.Status.VeleroRestore.Name != "", fmt.Sprintf("%+v", got.Status.Plan)
		})
		return got.Status.Plan.BlueprintGeneration == "1", got.Status.Plan.BlueprintGeneration
	})
	restores := veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID))
	c.Assert(restores, HasLen, 1)
	c.Check(restores[0].Spec.ExistingResourcePolicy, Equals, velerov1.PolicyTypeUpdate)
	c.Assert(restores[0].Spec.RestorePVs, NotNil)
	c.Check(*restores[0].Spec.RestorePVs, Equals, false)

	// Refusal, verbatim.
	refused := newNAR(nab.Namespace, "policy-none", velerov1.RestoreSpec{BackupName: nab.Name, ExistingResourcePolicy: velerov1.PolicyTypeNone})
	c.Assert(testClient.Create(ctx, refused), IsNil)
	_, msg := s.refusedNAR(c, refused)
	c.Check(msg, Equals, "spec.restoreSpec.existingResourcePolicy field value is enforced by admin user, can not override it")
}
