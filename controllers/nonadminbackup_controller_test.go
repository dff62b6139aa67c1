package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/controllers"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// ControllerSuite runs the NonAdminBackup controller in a manager against
// the real control plane, as cmd/nac does.
type ControllerSuite struct {
	oadp string
	stop func()
}

var _ = Suite(&ControllerSuite{})

// SetUpSuite starts the controller. Approval of tenants' storage locations
// is required in this suite; the automatic approval is covered by a unit test.
func (s *ControllerSuite) SetUpSuite(c *C) {
	s.oadp = createNamespace(c, "oadp")
	s.stop = startController(c, controllerOptions{oadp: s.oadp, requireApproval: true, restart: true})
}

func (s *ControllerSuite) TearDownSuite(c *C) {
	s.stop()
}

func newNAB(ns, name string, spec velerov1.BackupSpec) *v1alpha1.NonAdminBackup {
	return &v1alpha1.NonAdminBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.NonAdminBackupSpec{BackupSpec: &spec},
	}
}

func getNAB(c *C, nab *v1alpha1.NonAdminBackup) *v1alpha1.NonAdminBackup {
	got := &v1alpha1.NonAdminBackup{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(nab), got), IsNil)
	return got
}

// veleroBackupsOf lists the Velero Backups in oadp labelled with nacuuid.
func veleroBackupsOf(c *C, oadp, nacuuid string) []velerov1.Backup {
	list := &velerov1.BackupList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(oadp),
		client.MatchingLabels{v1alpha1.NabOriginNACUUIDLabel: nacuuid}), IsNil)
	return list.Items
}

// completeBackup sets a Velero Backup's status.phase as Velero would, and
// its spec.storageLocation to the admin's default location "default" (made
// in oadp when missing) when the Backup names none: Velero writes the
// location it resolved onto every Backup it runs.
func completeBackup(c *C, oadp, name string, phase velerov1.BackupPhase) {
	ctx := context.Background()
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: oadp, Name: name}, b), IsNil)
	before := b.DeepCopy()
	if b.Spec.StorageLocation == "" {
		err := testClient.Create(ctx, &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "default"},
			Spec: velerov1.BackupStorageLocationSpec{Provider: "aws", Default: true,
				StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "admin"}}}})
		c.Assert(client.IgnoreAlreadyExists(err), IsNil)
		// In the same write as the phase (Velero's CRDs have no status
		// subresource): one change for the NonAdminBackup to mirror.
		b.Spec.StorageLocation = "default"
	}
	b.Status.Phase = phase
	b.Status.Progress = &velerov1.BackupProgress{TotalItems: 12, ItemsBackedUp: 12}
	c.Assert(testClient.Patch(ctx, b, client.MergeFrom(before)), IsNil)
}

func (s *ControllerSuite) TestValidBackupLifecycle(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	nab := newNAB(ns, "nightly", velerov1.BackupSpec{IncludedNamespaces: []string{ns}, ExcludedResources: []string{"secrets"}})
	c.Assert(testClient.Create(ctx, nab), IsNil)

	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		p := got.Status.Plan
		if p == nil || p.Phase("waitForBackup") == nil || p.Phase("waitForBackup").State != v1alpha1.PhaseWaiting {
			return false, fmt.Sprintf("plan: %+v", p)
		}
		return true, ""
	})
	nacuuid := v1alpha1.NACUUIDOf(got.UID)
	wantName := v1alpha1.NACObjectName(ns, "nightly", nacuuid)
	c.Check(len(wantName) <= 63, Equals, true)
	c.Check(strings.HasPrefix(wantName, ns+"-nightly-"), Equals, true)

	backups := veleroBackupsOf(c, s.oadp, nacuuid)
	c.Assert(backups, HasLen, 1)
	b := backups[0]
	c.Check(b.Name, Equals, wantName)
	c.Check(b.Labels, DeepEquals, map[string]string{
		"openshift.io/oadp":                    "True",
		"app.kubernetes.io/managed-by":         "oadp-nac-controller",
		"openshift.io/oadp-nab-origin-nacuuid": nacuuid,
	})
	c.Check(b.Annotations, DeepEquals, map[string]string{
		"openshift.io/oadp-nab-origin-name":      "nightly",
		"openshift.io/oadp-nab-origin-namespace": ns,
	})
	c.Check(b.Spec.IncludedNamespaces, DeepEquals, []string{ns})
	c.Check(b.Spec.ExcludedResources, DeepEquals, slices.Concat([]string{"secrets"}, phases.NACResources, phases.ClusterExcludedResources),
		Commentf("the NAC kinds and OADP NAC's cluster-scoped kinds, old-style like the spec"))

	// Status while Velero works.
	c.Check(got.Finalizers, DeepEquals, []string{v1alpha1.NonAdminBackupFinalizer})
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	c.Check(got.Status.ObservedGeneration, Equals, got.Generation)
	c.Check(got.Status.VeleroBackup.Name, Equals, wantName)
	c.Check(got.Status.VeleroBackup.Namespace, Equals, s.oadp)
	c.Check(got.Status.VeleroBackup.NACUUID, Equals, nacuuid)
	c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionAccepted), Equals, true)
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionQueued).Reason, Equals, v1alpha1.ReasonBackupScheduled)
	c.Check(got.Status.Plan.State, Equals, v1alpha1.PlanRunning)
	c.Check(got.Status.Plan.Blueprint, Equals, "nonadminbackup")
	c.Check(got.Status.Plan.BlueprintGeneration, Equals, v1alpha1.BuiltInGeneration)
	c.Check(got.Status.Plan.Spec.Phases, HasLen, 8)
	c.Check(got.Status.Plan.Current, Equals, "waitForBackup: waiting")
	c.Check(got.Status.Plan.Phase("waitForBackup").Message, Equals, fmt.Sprintf("Velero Backup %s is not started", wantName))
	// The controller writes status as one unit and the API server records
	// it as one field (structType=atomic), not every field of the plan.
	var statusFields []string
	for _, m := range got.ManagedFields {
		if m.Subresource == "status" {
			statusFields = append(statusFields, string(m.FieldsV1.Raw))
		}
	}
	c.Check(statusFields, DeepEquals, []string{`{"f:status":{}}`})
	// One event for the reconcile that created the Velero Backup and started
	// waiting: it tells each transition, in order.
	var story []string
	eventually(c, 5*time.Second, func() (bool, string) {
		story = eventStory(c, ns, "nightly")
		return len(story) == 1, strings.Join(story, "\n")
	})
	c.Check(story[0], Matches, `Normal PhaseWaiting: Started action backup of blueprint nonadminbackup; `+
		`Ended phase validate \(ValidateBackupSpec\) in 0s: backupSpec accepted; `+
		`Ended phase checkQuota \(CheckQuota\) in 0s: no quota; `+
		`Ended phase waitForTurn \(WaitForTurn\) in 0s: [^;]*; `+
		`Ended phase createBackup \(CreateVeleroBackup\) in 0s: [^;]*; `+
		`Phase waitForBackup \(WaitFor\) is waiting: Velero Backup [^ ]+ is not started`)

	// Velero finishes: the NAB mirrors it and the plan completes.
	completeBackup(c, s.oadp, wantName, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan.State == v1alpha1.PlanComplete, fmt.Sprintf("plan state %s", got.Status.Plan.State)
	})
	c.Check(got.Status.VeleroBackup.Status.Phase, Equals, velerov1.BackupPhaseCompleted)
	c.Check(got.Status.VeleroBackup.Status.Progress.ItemsBackedUp, Equals, 12)
	// The ended plan is compacted: every phase, the deferPhase included,
	// completed at its first attempt with nothing to keep (what syncStatus
	// did is in status.veleroBackup), so only its summary stays.
	c.Check(got.Status.Plan.Compacted, Equals, true)
	c.Check(got.Status.Plan.Spec, IsNil)
	c.Check(got.Status.Plan.IsSummary(), Equals, true)
	c.Check(got.Status.Plan.Current, Equals, "finalStatus: complete")
	c.Check(got.Status.Plan.CompletionTime, NotNil)
	c.Check(got.Status.QueueInfo.EstimatedQueuePosition, Equals, 0)
	// Then one event for the completion: Velero serves the resource list
	// within the brief wait of the contents check (about 100 ms here), so
	// the wait ended, the check and the action are told at once.
	eventually(c, 5*time.Second, func() (bool, string) {
		story = eventStory(c, ns, "nightly")
		return len(story) == 2, strings.Join(story, "\n")
	})
	c.Check(story[1], Matches, `Normal EndedAction: Ended phase waitForBackup \(WaitFor\) in \d+s: Velero Backup [^ ]+ is Completed; `+
		`Ended phase syncStatus \(SyncStatus\) in 0s: Mirrored Velero Backup [^ ]+ \(Completed\); `+
		`Ended phase verify \(VerifyBackupContents\) in 0s: \d+ items of Velero Backup [^;]*; `+
		`Ended phase restoreTest \(TestRestore\) in 0s: restore tests are off \(args.every is 0\); `+
		`Ended deferPhase finalStatus \([A-Za-z]+\) in 0s[^;]*; Ended action backup.*`)

	// The plan ran once: no reconcile acted on a cache older than its own
	// status write; every phase is told once.
	all := strings.Join(story, "\n")
	c.Check(strings.Count(all, "Started action"), Equals, 1, Commentf(all))
	c.Check(strings.Count(all, "Ended phase "), Equals, 8, Commentf(all))

	// After the plan: the mirror stays current (Velero later marks it failed
	// in this made-up story).
	completeBackup(c, s.oadp, wantName, velerov1.BackupPhasePartiallyFailed)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup.Status.Phase == velerov1.BackupPhasePartiallyFailed, string(got.Status.VeleroBackup.Status.Phase)
	})

	// kubectl delete: the Velero Backup object goes, then the NAB.
	c.Assert(testClient.Delete(ctx, nab), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprintf("get: %v", err)
	})
	c.Check(veleroBackupsOf(c, s.oadp, nacuuid), HasLen, 0)
}

func (s *ControllerSuite) TestInvalidBackupIsRefused(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	// What CEL cannot know (the namespace's own name, whether a storage
	// location is allowed) the controller refuses.
	for _, tc := range []struct {
		name string
		spec velerov1.BackupSpec
	}{
		{"other-ns", velerov1.BackupSpec{IncludedNamespaces: []string{"kube-system"}}},
		{"bsl", velerov1.BackupSpec{StorageLocation: "mine"}},
	} {
		c.Assert(testClient.Create(ctx, newNAB(ns, tc.name, tc.spec)), IsNil)
	}
	// A valid NAB created alongside is still served.
	valid := newNAB(ns, "valid", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, valid), IsNil)

	for tc, field := range map[string]string{"other-ns": "spec.backupSpec.includedNamespaces", "bsl": "spec.backupSpec.storageLocation"} {
		nab := newNAB(ns, tc, velerov1.BackupSpec{})
		var got *v1alpha1.NonAdminBackup
		eventually(c, 10*time.Second, func() (bool, string) {
			got = getNAB(c, nab)
			return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%s: %+v", tc, got.Status.Plan)
		})
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
		c.Assert(cond, NotNil)
		c.Check(cond.Status, Equals, metav1.ConditionFalse)
		c.Check(cond.Reason, Equals, v1alpha1.ReasonInvalidBackupSpec)
		c.Check(strings.HasPrefix(cond.Message, field), Equals, true, Commentf("%s: %s", tc, cond.Message))
		c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
		c.Check(got.Status.VeleroBackup, IsNil)
		c.Check(got.Status.Plan.Phase("validate").State, Equals, v1alpha1.PhaseFailed)
		c.Check(got.Status.Plan.Phase("createBackup").State, Equals, v1alpha1.PhaseSkipped)
		c.Check(got.Status.Plan.DeferPhase.State, Equals, v1alpha1.PhaseComplete)
		c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 0)
		eventually(c, 5*time.Second, func() (bool, string) {
			evs := eventReasons(c, ns, tc)
			return containsInOrder(evs, []string{"Warning PhaseFailed", "Warning ActionFailed"}), joined(evs)
		})
	}
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, valid)
		return got.Status.Phase == v1alpha1.NonAdminPhaseCreated, string(got.Status.Phase)
	})
}

// TestCELRefusesAtApply: what can never be valid is refused by the API
// server, before the controller sees it.
func (s *ControllerSuite) TestCELRefusesAtApply(c *C) {
	ns := createNamespace(c, "tenant")
	for _, tc := range []struct {
		spec velerov1.BackupSpec
		msg  string
	}{
		{velerov1.BackupSpec{IncludedNamespaces: []string{ns, "kube-system"}}, "spec.backupSpec.includedNamespaces may name only the NonAdminBackup's own namespace"},
		{velerov1.BackupSpec{ExcludedNamespaces: []string{"x"}}, "spec.backupSpec.excludedNamespaces is restricted"},
		{velerov1.BackupSpec{IncludeClusterResources: ptr(true)}, "spec.backupSpec.includeClusterResources can not be true"},
		{velerov1.BackupSpec{IncludedClusterScopedResources: []string{"nodes"}}, "spec.backupSpec.includedClusterScopedResources is restricted"},
		{velerov1.BackupSpec{VolumeSnapshotLocations: []string{"aws"}}, "spec.backupSpec.volumeSnapshotLocations is restricted"},
	} {
		err := testClient.Create(context.Background(), newNAB(ns, "refused", tc.spec))
		c.Check(err, ErrorMatches, ".*"+regexp.QuoteMeta(tc.msg)+".*")
	}
}

// deleteBackup, once true, cannot be set back to false (a CEL rule on the
// CRD). The test holds the NAB with a finalizer of its own so that it still
// exists when the patch comes, whatever the controller has done by then:
// the patch must be refused for the rule, never pass as NotFound.
func (s *ControllerSuite) TestDeleteBackupCannotBeUnset(c *C) {
	ctx := context.Background()
	const hold = "test.nacflow.io/hold"
	ns := createNamespace(c, "tenant")
	nab := newNAB(ns, "once", velerov1.BackupSpec{})
	nab.Spec.DeleteBackup = true
	nab.Finalizers = []string{hold}
	// Created with deleteBackup already true: nothing to delete, the NAB goes.
	c.Assert(testClient.Create(ctx, nab), IsNil)
	before := nab.DeepCopy()
	nab.Spec.DeleteBackup = false
	err := testClient.Patch(ctx, nab, client.MergeFrom(before))
	c.Assert(err, NotNil, Commentf("setting deleteBackup back to false was accepted"))
	c.Check(apierrors.IsInvalid(err), Equals, true, Commentf("%v", err))
	c.Check(err, ErrorMatches, `NonAdminBackup.oadp.openshift.io "once" is invalid: spec: Invalid value: "object": deleteBackup can not be set back to false once true`)
	c.Check(getNAB(c, nab).Spec.DeleteBackup, Equals, true)

	// The controller deletes it; once the test lets go, it is gone.
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		return got.DeletionTimestamp != nil && !slices.Contains(got.Finalizers, v1alpha1.NonAdminBackupFinalizer),
			fmt.Sprintf("deletionTimestamp %v, finalizers %v", got.DeletionTimestamp, got.Finalizers)
	})
	got := getNAB(c, nab)
	held := got.DeepCopy()
	got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == hold })
	c.Assert(testClient.Patch(ctx, got, client.MergeFromWithOptions(held, client.MergeFromWithOptimisticLock{})), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
	})
}

// A backupSpec changed after nacflow validated it is reported and never
// acted on; Velero's zero values written by another client (OADP NAC's
// updates) are no change. The CRD itself no longer refuses the change, so
// OADP NAC can run on nacflow's CRDs.
func (s *ControllerSuite) TestBackupSpecChangeIsNotActedOn(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	nab := newNAB(ns, "fixed", velerov1.BackupSpec{ExcludedResources: []string{"secrets"}})
	// As kubectl writes it: only the fields given (Velero's Go types would
	// write every zero value).
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
		"metadata": map[string]any{"namespace": ns, "name": "fixed"},
		"spec":     map[string]any{"backupSpec": map[string]any{"excludedResources": []any{"secrets"}}},
	}}
	c.Assert(testClient.Create(ctx, u), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", got.Status)
	})
	c.Check(got.Status.SpecHash, Equals, v1alpha1.SpecHash(nab.Spec.BackupSpec))
	veleroName := got.Status.VeleroBackup.Name

	// OADP NAC's update: Velero's Go types write zero values.
	raw := []byte(`{"spec":{"backupSpec":{"metadata":{},"hooks":{},"ttl":"0s","csiSnapshotTimeout":"0s","itemOperationTimeout":"0s"}}}`)
	c.Assert(testClient.Patch(ctx, got, client.RawPatch(types.MergePatchType, raw)), IsNil)
	generation := got.Generation
	c.Assert(generation > 1, Equals, true, Commentf("the patch changed nothing the API server stores: %+v", got.Spec.BackupSpec))
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.ObservedGeneration == generation, fmt.Sprintf("observed %d of %d", got.Status.ObservedGeneration, generation)
	})
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSpecChanged), IsNil)

	// A tenant's change: reported, not acted on.
	before := got.DeepCopy()
	got.Spec.BackupSpec.IncludedNamespaces = []string{"kube-system"}
	got.Spec.BackupSpec.ExcludedResources = nil
	c.Assert(testClient.Patch(ctx, got, client.MergeFrom(before)), IsNil)
	want := "spec.backupSpec changed after it was validated and is not acted on: spec.backupSpec is immutable: create a new NonAdminBackup instead"
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSpecChanged)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == v1alpha1.ReasonSpecImmutable && cond.Message == want,
			fmt.Sprintf("%+v", got.Status.Conditions)
	})
	eventually(c, 10*time.Second, func() (bool, string) {
		events := eventMessages(c, ns, "fixed")
		return slices.Contains(events, want), joined(events)
	})
	backups := veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID))
	c.Assert(backups, HasLen, 1)
	c.Check(backups[0].Name, Equals, veleroName)
	c.Check(backups[0].Spec.IncludedNamespaces, DeepEquals, []string{ns})
	c.Check(slices.Contains(backups[0].Spec.ExcludedResources, "secrets"), Equals, true)
	c.Check(got.Status.VeleroBackup.Spec.IncludedNamespaces, DeepEquals, []string{ns})

	// The location alone stays refused by the CRD: quotas and a deleted
	// location's backups are counted by it.
	before = got.DeepCopy()
	moved := got.DeepCopy()
	moved.Spec.BackupSpec.StorageLocation = "elsewhere"
	err := testClient.Patch(ctx, moved, client.MergeFrom(before))
	c.Assert(err, ErrorMatches, `.*spec.backupSpec.storageLocation is immutable: create a new NonAdminBackup instead.*`)

	// Back to the spec validated: the condition goes.
	before = got.DeepCopy()
	got.Spec.BackupSpec.IncludedNamespaces = nil
	got.Spec.BackupSpec.ExcludedResources = []string{"secrets"}
	c.Assert(testClient.Patch(ctx, got, client.MergeFrom(before)), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSpecChanged) == nil, fmt.Sprintf("%+v", got.Status.Conditions)
	})
}

func ptr[T any](v T) *T { return &v }

func count(list []string, s string) int {
	n := 0
	for _, e := range list {
		if e == s {
			n++
		}
	}
	return n
}

// CrashSuite runs the reconciler by hand, without a manager, to stop it at an
// exact instant.
type CrashSuite struct{}

var _ = Suite(&CrashSuite{})

// reconciler returns the NonAdminBackup reconciler over cl that records
// events in a fake recorder.
func reconciler(c *C, cl client.Client, oadp string) controllers.Reconciler {
	registry, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, phases.Options{})
	c.Assert(err, IsNil)
	rec := record.NewFakeRecorder(1000)
	rs, err := controllers.NewReconcilers(&controllers.Shared{Deps: func(string) controllers.Deps {
		return controllers.Deps{
			Client: cl, APIReader: cl, Runner: &engine.Runner{Registry: registry, Recorder: rec}, Recorder: rec, OADPNamespace: oadp,
			Blueprints: &blueprints.Resolver{Reader: cl, Namespace: oadp},
		}
	}})
	c.Assert(err, IsNil)
	return rs["NonAdminBackup"]
}

// TestCrashAfterCreateBeforeStatusWrite kills the controller between
// creating the Velero Backup and the next status write (the status patch of
// that reconcile never reaches the API server), then restarts it: exactly one
// Velero Backup exists and the plan completes.
func (s *CrashSuite) TestCrashAfterCreateBeforeStatusWrite(c *C) {
	ctx := context.Background()
	oadp, ns := createNamespace(c, "oadp"), createNamespace(c, "tenant")
	nab := newNAB(ns, "crashy", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(nab)}

	killed := errors.New("controller killed")
	crashing := interceptor.NewClient(testClient, interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return killed
		},
	})
	_, err := reconciler(c, crashing, oadp).Reconcile(ctx, req)
	c.Assert(errors.Is(err, killed), Equals, true, Commentf("%v", err))

	got := getNAB(c, nab)
	c.Check(got.Status.Plan, IsNil, Commentf("no status was written"))
	nacuuid := v1alpha1.NACUUIDOf(got.UID)
	c.Assert(veleroBackupsOf(c, oadp, nacuuid), HasLen, 1, Commentf("the Velero Backup was created before the crash"))

	// Restart: a new reconciler with a working client.
	r := reconciler(c, testClient, oadp)
	res, err := r.Reconcile(ctx, req)
	c.Assert(err, IsNil)
	c.Check(res.RequeueAfter > 0, Equals, true)
	got = getNAB(c, nab)
	c.Check(got.Status.Plan.Phase("createBackup").Message, Matches, "Adopted Velero Backup .*")
	c.Check(got.Status.Plan.Current, Equals, "waitForBackup: waiting")
	backups := veleroBackupsOf(c, oadp, nacuuid)
	c.Assert(backups, HasLen, 1)

	completeBackup(c, oadp, backups[0].Name, velerov1.BackupPhaseCompleted)
	// The verify phase waits for the resource list (veleroDownloads serves
	// it within about 100ms).
	eventually(c, 10*time.Second, func() (bool, string) {
		_, err = r.Reconcile(ctx, req)
		c.Assert(err, IsNil)
		got = getNAB(c, nab)
		return got.Status.Plan.State != v1alpha1.PlanRunning, got.Status.Plan.Current
	})
	c.Check(got.Status.Plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(got.Status.Plan.DeferPhase.State, Equals, v1alpha1.PhaseComplete)
	c.Check(got.Status.VeleroBackup.Status.Phase, Equals, velerov1.BackupPhaseCompleted)
	c.Check(veleroBackupsOf(c, oadp, nacuuid), HasLen, 1)
}

// TestForeignObjectIsNeverAdopted: an object already holding the Velero
// Backup's name without this operation's label fails the phase and is left
// untouched.
func (s *CrashSuite) TestForeignObjectIsNeverAdopted(c *C) {
	ctx := context.Background()
	oadp, ns := createNamespace(c, "oadp"), createNamespace(c, "tenant")
	nab := newNAB(ns, "squatted", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	got := getNAB(c, nab)
	name := v1alpha1.NACObjectName(ns, "squatted", v1alpha1.NACUUIDOf(got.UID))
	foreign := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: name, Labels: map[string]string{"owner": "someone-else"}}}
	c.Assert(testClient.Create(ctx, foreign), IsNil)

	_, err := reconciler(c, testClient, oadp).Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(nab)})
	c.Assert(err, IsNil)
	got = getNAB(c, nab)
	c.Check(got.Status.Plan.State, Equals, v1alpha1.PlanFailed)
	c.Check(got.Status.Plan.Phase("createBackup").Message, Matches, ".*exists but does not belong to this operation.*")
	after := &velerov1.Backup{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(foreign), after), IsNil)
	c.Check(after.Labels, DeepEquals, map[string]string{"owner": "someone-else"})
	c.Check(after.Spec.IncludedNamespaces, HasLen, 0)
}

// finishAllBackups plays Velero finishing every unfinished Backup in oadp.
func finishAllBackups(c *C, oadp string) {
	list := &velerov1.BackupList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(oadp)), IsNil)
	var finished []velerov1.Backup
	for _, b := range list.Items {
		if !v1alpha1.BackupFinished(b.Status.Phase) {
			completeBackup(c, oadp, b.Name, velerov1.BackupPhaseCompleted)
			finished = append(finished, b)
		}
	}
	if len(finished) == 0 {
		return
	}
	// Their NABs verify the backups and end their plans; the rechecks their
	// brief waits asked for (5 s after each DownloadRequest) then come and
	// go, so that a test counting reconciles next counts its own.
	eventually(c, 15*time.Second, func() (bool, string) {
		for _, b := range finished {
			nab := &v1alpha1.NonAdminBackup{}
			key := client.ObjectKey{Namespace: b.Annotations[v1alpha1.NabOriginNamespaceAnnotation], Name: b.Annotations[v1alpha1.NabOriginNameAnnotation]}
			if err := testClient.Get(context.Background(), key, nab); err != nil {
				continue // not a NAB's, or gone
			}
			if p := nab.Status.Plan; p != nil && p.State == v1alpha1.PlanRunning && p.Action == "backup" {
				return false, fmt.Sprintf("NonAdminBackup %s: %s", key, p.Current)
			}
		}
		return true, ""
	})
	time.Sleep(6 * time.Second)
}

func queuePos(c *C, nab *v1alpha1.NonAdminBackup) int {
	got := getNAB(c, nab)
	if got.Status.QueueInfo == nil {
		return -1
	}
	return got.Status.QueueInfo.EstimatedQueuePosition
}

// finishOthers completes, as Velero would, every unfinished Velero Backup of
// the OADP namespace made for a namespace other than ns.
func finishOthers(c *C, oadp, ns string) {
	list := &velerov1.BackupList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(oadp)), IsNil)
	for _, b := range list.Items {
		if !v1alpha1.BackupFinished(b.Status.Phase) && b.Annotations[v1alpha1.NabOriginNamespaceAnnotation] != ns {
			completeBackup(c, oadp, b.Name, velerov1.BackupPhaseCompleted)
		}
	}
}

func (s *ControllerSuite) TestQueuePositionsAndCoalescedRefresh(c *C) {
	ctx := context.Background()
	finishAllBackups(c, s.oadp)
	ns := createNamespace(c, "tenant")
	var nabs []*v1alpha1.NonAdminBackup
	for i := range 4 {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // creation timestamps have 1s resolution
		}
		nab := newNAB(ns, fmt.Sprintf("q%d", i+1), velerov1.BackupSpec{})
		c.Assert(testClient.Create(ctx, nab), IsNil)
		eventually(c, 10*time.Second, func() (bool, string) {
			got := getNAB(c, nab)
			return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", "no Velero Backup yet"
		})
		nabs = append(nabs, getNAB(c, nab))
	}
	eventually(c, 10*time.Second, func() (bool, string) {
		// An earlier test's NAB waiting for its fair share may make its
		// Backup once finishAllBackups freed the share: Velero would run it
		// first. Played Velero finishes it.
		finishOthers(c, s.oadp, ns)
		got := []int{queuePos(c, nabs[0]), queuePos(c, nabs[1]), queuePos(c, nabs[2]), queuePos(c, nabs[3])}
		return fmt.Sprint(got) == "[1 2 3 4]", fmt.Sprint(got)
	})

	// Count every write to the last NAB while Velero finishes the first three
	// at once.
	last := getNAB(c, nabs[3])
	w, err := testClient.Watch(ctx, &v1alpha1.NonAdminBackupList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": last.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: last.ResourceVersion}})
	c.Assert(err, IsNil)
	defer w.Stop()
	for _, nab := range nabs[:3] {
		completeBackup(c, s.oadp, nab.Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
	}
	eventually(c, 10*time.Second, func() (bool, string) {
		got := []int{queuePos(c, nabs[0]), queuePos(c, nabs[1]), queuePos(c, nabs[2]), queuePos(c, nabs[3])}
		return fmt.Sprint(got) == "[0 0 0 1]", fmt.Sprint(got)
	})
	// The last NAB's own completion is the sentinel: the watch delivers its
	// writes in order, so every write the three completions caused — a
	// late refresh included — comes before the one that mirrors it, however
	// slow the controller. No sleep, no window to guess.
	completeBackup(c, s.oadp, nabs[3].Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
	writes := 0
	timeout := time.After(30 * time.Second)
	for sentinel := false; !sentinel; {
		select {
		case ev, open := <-w.ResultChan():
			c.Assert(open, Equals, true, Commentf("the watch closed after %d writes", writes))
			got, ok := ev.Object.(*v1alpha1.NonAdminBackup)
			c.Assert(ok, Equals, true, Commentf("%s %v", ev.Type, ev.Object))
			if vb := got.Status.VeleroBackup; vb != nil && vb.Status != nil && v1alpha1.BackupFinished(vb.Status.Phase) {
				sentinel = true
			} else {
				writes++
			}
		case <-timeout:
			c.Fatalf("no write mirrored the last Backup's completion within 30s (%d writes before)", writes)
		}
	}
	c.Check(writes, Equals, 1, Commentf("three completions in one window cost one status write to the waiting NAB"))
}

// One completion wakes only the NABs whose shown queue position went stale
// (the first QueueExactPositions), not every waiting NAB: the position the
// creating reconcile wrote counts as shown. Before, every NAB of a wave
// showed as unknown to the queue index, and the first completion cost a
// reconcile per waiting NAB that wrote nothing.
func (s *ControllerSuite) TestOneCompletionWakesOnlyStalePositions(c *C) {
	ctx := context.Background()
	finishAllBackups(c, s.oadp)
	ns := createNamespace(c, "tenant")
	const n = 30
	var nabs []*v1alpha1.NonAdminBackup
	// One at a time: every recorded position is exact (OADP's rule counts
	// the Backups created strictly before, so one created later in the same
	// second moves no earlier figure).
	for i := range n {
		nab := newNAB(ns, fmt.Sprintf("w%02d", i), velerov1.BackupSpec{})
		c.Assert(testClient.Create(ctx, nab), IsNil)
		eventually(c, 10*time.Second, func() (bool, string) {
			got := getNAB(c, nab)
			return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "" && got.Status.QueueInfo != nil, "no Velero Backup or position yet"
		})
		nabs = append(nabs, getNAB(c, nab))
	}
	truth := pendingPositions(c, s.oadp)
	for _, nab := range nabs {
		c.Assert(queuePos(c, nab), Equals, truth[nab.Status.VeleroBackup.Name], Commentf("%s", nab.Name))
	}
	last := queuePos(c, nabs[n-1])
	objs := make([]client.Object, len(nabs))
	for i, nab := range nabs {
		objs[i] = nab
	}
	// These 30 NABs' own reconciles: the suite's controller also has every
	// earlier test's NABs, reconciled whenever they wake.
	reconciles := func() int { return reconciled.of("NonAdminBackup", objs...) }
	before := reconciles()
	completeBackup(c, s.oadp, nabs[0].Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
	eventually(c, 15*time.Second, func() (bool, string) {
		vb := getNAB(c, nabs[0]).Status.VeleroBackup
		return vb.Status != nil && vb.Status.Phase == velerov1.BackupPhaseCompleted, "the completion is not mirrored yet"
	})
	eventually(c, 15*time.Second, func() (bool, string) {
		truth := pendingPositions(c, s.oadp)
		for _, nab := range nabs[1:] {
			if shown, want := queuePos(c, nab), truth[nab.Status.VeleroBackup.Name]; phases.PositionStale(shown, want) {
				return false, fmt.Sprintf("%s shows %d, truth %d", nab.Name, shown, want)
			}
		}
		return true, ""
	})
	// The refresh adds its NABs to the workqueue at once; let the last of
	// them finish.
	time.Sleep(time.Second)
	woken := reconciles() - before
	c.Logf("%d NonAdminBackup reconciles for one completion with %d waiting", woken, n-1)
	// The completed NAB itself (its mirror, maybe twice) and at most the
	// five that moved into the exact positions, each of which may find its
	// cache behind its own write once or twice on a loaded machine (the
	// staleness recheck, 100 ms then 200 ms: 10 seen with both cores busy);
	// before, all 29 waiting too.
	c.Check(woken >= 1 && woken <= 15, Equals, true, Commentf("%d NonAdminBackup reconciles for one completion with %d waiting", woken, n-1))
	c.Check(queuePos(c, nabs[n-1]), Equals, last, Commentf("a figure within a third of the truth is not rewritten"))
}

// pendingPositions returns the queue position of every unfinished Velero
// Backup of oadp by name, as OADP NAC counts it: 1 + the unfinished Backups
// created strictly before.
func pendingPositions(c *C, oadp string) map[string]int {
	list := &velerov1.BackupList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(oadp)), IsNil)
	out := map[string]int{}
	for _, b := range list.Items {
		if v1alpha1.BackupFinished(b.Status.Phase) {
			continue
		}
		pos := 1
		for _, o := range list.Items {
			if !v1alpha1.BackupFinished(o.Status.Phase) && o.CreationTimestamp.Before(&b.CreationTimestamp) {
				pos++
			}
		}
		out[b.Name] = pos
	}
	return out
}

// spec.logLevel takes OADP NAC's values only; a NAB at debug runs as any.
func (s *ControllerSuite) TestLogLevelField(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	loud := newNAB(ns, "loud", velerov1.BackupSpec{})
	loud.Spec.LogLevel = "loud"
	c.Check(testClient.Create(ctx, loud), ErrorMatches, `.*spec.logLevel: Unsupported value: "loud": supported values: "trace", "debug", "info", "warning", "error", "fatal", "panic".*`)
	debug := newNAB(ns, "debug", velerov1.BackupSpec{})
	debug.Spec.LogLevel = "debug"
	c.Assert(testClient.Create(ctx, debug), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, debug)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", got.Status.Plan)
	})
}

// TestVerifyWaitIsWokenByVelero: a NAB whose contents check waits for
// Velero to serve its resource list is not reconciled while nothing
// changes (the runner looks again only at the serve timeout, 2 min, not
// every second as it polled), and Velero serving the list wakes it at once,
// long before that.
func (s *ControllerSuite) TestVerifyWaitIsWokenByVelero(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "woken")
	nab := newNAB(ns, "busy-velero", velerov1.BackupSpec{IncludedNamespaces: []string{ns}})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", "no Velero Backup yet"
	})
	backup := got.Status.VeleroBackup.Name
	release := holdDownloads(backup)
	defer release()
	completeBackup(c, s.oadp, backup, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		p := got.Status.Plan.Phase("verify")
		return p != nil && p.State == v1alpha1.PhaseWaiting, fmt.Sprintf("plan: %s", got.Status.Plan.Current)
	})
	// This NAB's own reconciles, not the controller's: other tests' NABs
	// wake when they will.
	before, waitStart := reconciled.of("NonAdminBackup", nab), got.Status.Plan.Phase("verify").StartTime.Time
	// Quiet for 11 s of waiting.
	time.Sleep(time.Until(waitStart.Add(11 * time.Second)))
	quiet := reconciled.of("NonAdminBackup", nab) - before
	c.Check(quiet <= 2, Equals, true, Commentf("%d NonAdminBackup reconciles in 11 s of waiting on a DownloadRequest (a 1 s poll makes 11)", quiet))
	c.Check(getNAB(c, nab).Status.Plan.Phase("verify").State, Equals, v1alpha1.PhaseWaiting)

	release()
	served := time.Now()
	eventually(c, 5*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan.State == v1alpha1.PlanComplete, fmt.Sprintf("plan: %s", got.Status.Plan.Current)
	})
	// The serve timeout's recheck is about 100 s away.
	c.Check(time.Since(served) < 4*time.Second, Equals, true, Commentf("woken %s after Velero served the list", time.Since(served)))
	c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionVerified), Equals, true)
}
