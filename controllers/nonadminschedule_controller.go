package controllers

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// DefaultRunCheckPeriod bounds how long a NonAdminSchedule goes without a
// look when nothing wakes it: the RPO and next run are re-evaluated at
// least this often.
const DefaultRunCheckPeriod = 5 * time.Minute

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminschedules,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminschedules/status;nonadminschedules/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=schedules,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups/status,verbs=get;update;patch

// scheduleKind is the NonAdminSchedule kind's part of its reconciler (OADP
// NAC's NonAdminSchedule): the create action makes or updates the Velero
// Schedule, re-run on every spec change (the plan's revision is the
// generation); finalize removes it. After each run of create it runs the
// plan's SyncScheduleRuns phase again (engine.Runner.Follow), whose guarded
// clients turn every Backup the Velero Schedule took into a NonAdminBackup
// of the namespace, and which mirrors the schedule's status, lists the
// newest runs, computes the next run and judges the recovery-point
// objective; it then looks again when that phase says (the next run or the
// RPO deadline) or after DefaultRunCheckPeriod.
type scheduleKind struct {
	Deps
}

func init() {
	registerReconciler[*v1alpha1.NonAdminSchedule](func(d Deps, _ *Shared) Reconciler {
		k := &scheduleKind{Deps: d}
		return newNACReconciler(d, kindHooks[*v1alpha1.NonAdminSchedule]{
			action: func(n *v1alpha1.NonAdminSchedule) string { return finalizeOr(n, v1alpha1.ActionCreate) },
			refs:   scheduleRefs, afterRun: k.afterRun, watches: k.watches,
		}, kindPolicy[*v1alpha1.NonAdminSchedule]{revision: scheduleRevision, recheck: DefaultRunCheckPeriod,
			followsPlan: true})
	})
}

// scheduleRevision: each spec change (generation) is a new run of create;
// finalize never re-runs.
func scheduleRevision(_ context.Context, n *v1alpha1.NonAdminSchedule) (string, error) {
	if !n.DeletionTimestamp.IsZero() {
		return "", nil
	}
	return fmt.Sprintf("generation %d", n.Generation), nil
}

// scheduleRefs are a NonAdminSchedule's: its Velero Schedule.
func scheduleRefs(n *v1alpha1.NonAdminSchedule) []statusRef {
	if v := n.Status.VeleroSchedule; v != nil {
		return []statusRef{refTo[velerov1.Schedule]("status.veleroSchedule", &v.NACUUID, &v.Name, &v.Namespace)}
	}
	return nil
}

// scheduleRunsFunc is the phase function of the create action that the
// reconciler runs again after every run of the plan (SyncScheduleRuns).
const scheduleRunsFunc = "SyncScheduleRuns"

// afterRun, after each run of create, resets spec.skipImmediately once Velero has the skip, then
// runs the plan's SyncScheduleRuns phase again: the Velero Schedule's runs
// become NonAdminBackups, the status lists them, and the next run and the
// RPO are computed. It returns how long until the phase wants to look again
// (0 for no such moment, and when the blueprint left the phase out).
func (k *scheduleKind) afterRun(ctx context.Context, nas *v1alpha1.NonAdminSchedule, run ran[*v1alpha1.NonAdminSchedule]) (time.Duration, error) {
	vs := nas.Status.VeleroSchedule
	if run.action != v1alpha1.ActionCreate || vs == nil || vs.Name == "" {
		return 0, nil
	}
	if run.finished && nas.Spec.SkipImmediately && nas.Status.Plan != nil && nas.Status.Plan.State == v1alpha1.PlanComplete {
		// Velero has the skip: the edge trigger is reset (OADP NAC's
		// behaviour). A copy is patched so that the status being written
		// stays as it is.
		cp := nas.DeepCopy()
		if err := k.Client.Patch(ctx, cp, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"skipImmediately":false}}`))); err != nil {
			return 0, fmt.Errorf("resetting spec.skipImmediately: %w", err)
		}
	}
	ns := &corev1.Namespace{}
	if err := k.Client.Get(ctx, client.ObjectKey{Name: nas.Namespace}, ns); client.IgnoreNotFound(err) != nil {
		return 0, fmt.Errorf("reading namespace %s: %w", nas.Namespace, err)
	}
	res, ok, err := k.Runner.Follow(ctx, engine.Request{Object: nas, UUID: v1alpha1.NACUUIDOf(nas.UID), OADPNamespace: k.OADPNamespace,
		NamespaceLabels: ns.Labels}, scheduleRunsFunc)
	if err != nil {
		return 0, fmt.Errorf("following the runs of Velero Schedule %s: %w", vs.Name, err)
	}
	if !ok {
		return 0, nil
	}
	return res.RecheckAfter, nil
}

// watches: the schedules' Velero Schedules and the Backups those take,
// Backups freeing a place of the namespace's share, and locations.
func (k *scheduleKind) watches(_ ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	// A Backup the Velero Schedule took carries the schedule's origin keys,
	// which Velero copies.
	made := builder.WithPredicates(madeForKind[*v1alpha1.NonAdminSchedule](k.OADPNamespace))
	return b.
		Watches(&velerov1.Schedule{}, toOrigin[*v1alpha1.NonAdminSchedule](), made).
		Watches(&velerov1.Backup{}, toOrigin[*v1alpha1.NonAdminSchedule](), made).
		// A tenant's Backup that finishes or goes frees a place of its
		// namespace's share: its schedules whose due run waits look again.
		Watches(&velerov1.Backup{}, freed(backupFinished, veleroqueue.UnfinishedOrigin, k.wakeWithinShare)).
		// A location approved, created or turned Available wakes the
		// schedules waiting to use it.
		Watches(&v1alpha1.NonAdminBackupStorageLocation{}, toUsers[*v1alpha1.NonAdminSchedule](k.Client, scheduleUsesLocation)), nil
}

// scheduleUsesLocation reports whether nas, running, names the
// NonAdminBackupStorageLocation location in its template.
func scheduleUsesLocation(nas *v1alpha1.NonAdminSchedule, location string) bool {
	t, p := nas.Spec.Template.BackupSpec, nas.Status.Plan
	return t != nil && t.StorageLocation == location && (p == nil || p.State == v1alpha1.PlanRunning)
}

// wakeWithinShare wakes the NonAdminSchedules of namespace ns whose due run
// waits for its turn in Velero's queue (condition WithinShare False).
func (k *scheduleKind) wakeWithinShare(ctx context.Context, q requests, ns string) {
	list := &v1alpha1.NonAdminScheduleList{}
	if err := k.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		// The waiting schedules' timed recheck is the safety net.
		log.FromContext(ctx).Error(err, "finding the schedules whose run waits for a turn", "namespace", ns)
		return
	}
	for i := range list.Items {
		if meta.IsStatusConditionFalse(list.Items[i].Status.Conditions, v1alpha1.ConditionWithinShare) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
}
