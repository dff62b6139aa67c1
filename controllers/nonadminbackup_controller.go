// Package controllers holds nacflow's reconcilers: thin loops that fetch a NAC
// object, handle its finalizer, pick the blueprint action its state calls for
// and hand over to the engine.
package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/staleness"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
	"github.com/nacflow/nacflow/phases"
)

// NonAdminBackupReconciler runs the nonadminbackup blueprint for each
// NonAdminBackup and mirrors its Velero Backup.
type NonAdminBackupReconciler struct {
	Deps
	// QueueRefreshWindow is how long waiting NABs' queue positions may lag a
	// completion; completions within it cost one refresh. 0 means
	// veleroqueue.DefaultRefreshWindow.
	QueueRefreshWindow time.Duration
	// Queue indexes the unfinished Velero Backups for queue positions (shared
	// with the phases, which set the first position); nil: no positions
	// beyond Velero's own and 0 once finished.
	Queue *veleroqueue.BackupQueue
	// Turns shares Velero's queue between namespaces (shared with
	// WaitForTurn, which asks it for turns); the reconciler wakes the
	// waiters whose turn a change may have brought. nil: no waiter is
	// woken but by its timed recheck.
	Turns *veleroqueue.Turns

	// Usage measures status.usage once a backup's plan has ended (nil:
	// not measured).
	Usage *UsageMeter

	reads staleness.Tracker
	// refreshAt is when the scheduled queue refresh runs; until then further
	// completions need no new one.
	refreshMu sync.Mutex
	refreshAt time.Time
}

func init() {
	registerReconciler[*v1alpha1.NonAdminBackup](func(d Deps, s *Shared) Reconciler {
		return &NonAdminBackupReconciler{Deps: d, QueueRefreshWindow: s.QueueRefreshWindow, Queue: s.Queue, Turns: s.Turns, Usage: s.Usage}
	})
}

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups/status;nonadminbackups/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=backups;deletebackuprequests,verbs=get;list;watch;create;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,namespace=openshift-adp,resources=blueprints,verbs=get;list;watch
// Restore tests (TestRestore): the sandbox namespaces <ns>-rt-<hash> and
// their quota. Names are made per tenant, so the role cannot name them; the
// engine's safety rule holds phases to the operation's own sandbox, and to
// those carrying its label.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=create
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=restores,verbs=get;list;watch;create;delete

// Reconcile moves one NonAdminBackup forward with the shared NAC loop
// (reconcileNAC): finalize once it is being deleted, delete when
// spec.deleteBackup is true (then the NAB itself is deleted), backup
// otherwise; the Velero Backup is mirrored after each run of backup.
func (r *NonAdminBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileNAC(ctx, &r.Deps, &r.reads, r, req)
}

// Action picks a NonAdminBackup's action (actionFor).
func (r *NonAdminBackupReconciler) Action(nab *v1alpha1.NonAdminBackup) string { return actionFor(nab) }

// Refs are a NonAdminBackup's status references (backupRefs).
func (r *NonAdminBackupReconciler) Refs(nab *v1alpha1.NonAdminBackup) []statusRef {
	return backupRefs(nab)
}

// AfterRun mirrors the Velero Backup after each run of backup or adopt and,
// once the plan has ended, measures the backup's usage (when it asks to
// measure again later, the duration says when).
func (r *NonAdminBackupReconciler) AfterRun(ctx context.Context, nab *v1alpha1.NonAdminBackup, action string, finished bool) (time.Duration, error) {
	if action != v1alpha1.ActionBackup && action != v1alpha1.ActionAdopt {
		return 0, nil
	}
	if err := r.mirror(ctx, nab, finished); err != nil || !finished {
		return 0, err
	}
	return r.Usage.Measure(ctx, nab, v1alpha1.NACUUIDOf(nab.UID))
}

// Policy: NonAdminBackups adopt (backup sync, schedules, OADP NAC), report
// later changes of spec.backupSpec, are deleted once their delete action
// completes or their forceDelete action ends — a plan that failed leaves the
// Velero objects to the finalize action —, and log at spec.logLevel.
func (r *NonAdminBackupReconciler) Policy() kindPolicy[*v1alpha1.NonAdminBackup] {
	return kindPolicy[*v1alpha1.NonAdminBackup]{
		adopts: true, decided: backupSpecDecided,
		deleteWhenComplete: []string{v1alpha1.ActionDelete},
		deleteWhenEnded:    []string{v1alpha1.ActionForceDelete},
		logLevel:           func(nab *v1alpha1.NonAdminBackup) string { return nab.Spec.LogLevel },
	}
}

// backupRefs are a NonAdminBackup's references: its Velero Backup and its
// DeleteBackupRequest.
func backupRefs(nab *v1alpha1.NonAdminBackup) []statusRef {
	var refs []statusRef
	if v := nab.Status.VeleroBackup; v != nil {
		refs = append(refs, statusRef{"status.veleroBackup", "Backup", &v.NACUUID, &v.Name, &v.Namespace,
			func() client.Object { return &velerov1.Backup{} }})
	}
	if v := nab.Status.VeleroDeleteBackupRequest; v != nil {
		refs = append(refs, statusRef{"status.veleroDeleteBackupRequest", "DeleteBackupRequest", &v.NACUUID, &v.Name, &v.Namespace,
			func() client.Object { return &velerov1.DeleteBackupRequest{} }})
	}
	return refs
}

// actionFor returns the blueprint action nab's state calls for. A NAB
// deleted (kubectl delete) while its delete action runs lets that action
// finish — Velero is deleting the data, and the DeleteBackupRequest must stay
// until it has — and one whose delete action completed needs nothing more
// than its finalizer removed: both are the delete action itself. A delete
// action that failed gives way to finalize.
func actionFor(nab *v1alpha1.NonAdminBackup) string {
	p := nab.Status.Plan
	deleteGoesOn := p != nil && (p.Action == v1alpha1.ActionDelete || p.Action == v1alpha1.ActionForceDelete) &&
		(p.State == v1alpha1.PlanComplete || p.State == v1alpha1.PlanRunning || p.State == v1alpha1.PlanPending)
	switch {
	case !nab.DeletionTimestamp.IsZero() && deleteGoesOn:
		return p.Action
	case !nab.DeletionTimestamp.IsZero():
		return v1alpha1.ActionFinalize
	case nab.Spec.ForceDeleteBackup:
		// OADP NAC checks forceDeleteBackup first too.
		return v1alpha1.ActionForceDelete
	case nab.Spec.DeleteBackup:
		return v1alpha1.ActionDelete
	case p != nil && (p.Action == v1alpha1.ActionBackup || p.Action == v1alpha1.ActionAdopt):
		// How a NAB came to have its backup is decided once, when its first
		// plan starts, and recorded there: labels a tenant edits later never
		// turn an adopted backup into a new one, or the reverse.
		return p.Action
	case nab.Labels[v1alpha1.NabSyncedFromNACUUIDLabel] != "":
		// AdoptVeleroBackup links only what backup sync recorded in status
		// (status.veleroBackup.nacuuid, which tenants cannot write).
		return v1alpha1.ActionAdopt
	default:
		return v1alpha1.ActionBackup
	}
}

// mirror copies the linked Velero Backup's spec and status into the NAB, so
// status.veleroBackup stays current while and after the plan runs. Once the
// plan has ended, a Velero Backup that is gone from the API server (deleted
// outside nacflow) turns the NAB BackingOff with a message saying so.
func (r *NonAdminBackupReconciler) mirror(ctx context.Context, nab *v1alpha1.NonAdminBackup, planEnded bool) error {
	vb := nab.Status.VeleroBackup
	if vb == nil || vb.Name == "" {
		return nil
	}
	key := client.ObjectKey{Namespace: r.OADPNamespace, Name: vb.Name}
	b := &velerov1.Backup{}
	err := r.Client.Get(ctx, key, b)
	if apierrors.IsNotFound(err) && planEnded {
		err = r.APIReader.Get(ctx, key, b) // the cache may lag; the API server decides
		if apierrors.IsNotFound(err) {
			nab.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
			meta.SetStatusCondition(&nab.Status.Conditions, metav1.Condition{
				Type: v1alpha1.ConditionQueued, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonVeleroBackupNotFound,
				Message:            fmt.Sprintf("Velero Backup %s no longer exists in %s: it was deleted outside nacflow", vb.Name, r.OADPNamespace),
				ObservedGeneration: nab.Generation,
			})
			return nil
		}
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Velero Backup %s: %w", key, err)
	}
	if !madeFor(b, nab, v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NabOriginNamespaceAnnotation, vb.NACUUID) {
		return nil // not this NAB's (runAction corrects such a status reference)
	}
	// Below (not finished, no position from Velero) MirrorBackup leaves
	// queueInfo alone: its answer is whether the mirror changed.
	mirrorChanged := nab.MirrorBackup(b)
	if r.Queue != nil && !v1alpha1.BackupFinished(b.Status.Phase) && b.Status.QueuePosition == 0 {
		r.Queue.Observe(b)
		// The figure is an estimate: rewritten when it drifted, or for free
		// when the status is written anyway.
		phases.ShowQueuePosition(r.Queue, nab, b, mirrorChanged)
	}
	return nil
}

// SetupWithManager registers the reconciler: NonAdminBackups cluster-wide
// (spec changes only, so status patches do not retrigger it), and Velero
// Backups and DeleteBackupRequests in the OADP namespace carrying the NAC
// labels, mapped back to their NAB by the origin annotations.
func (r *NonAdminBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Turns != nil {
		if err := veleroqueue.IndexTurns(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
	}
	b, err := nacController[*v1alpha1.NonAdminBackup](mgr, &r.Deps)
	if err != nil {
		return err
	}
	return b.
		// Status changes only where they change the turns: a waiter
		// coming, going or admitted wakes the next one.
		Watches(&v1alpha1.NonAdminBackup{}, turnWaker{turns: r.Turns, kind: "NonAdminBackup"}.turnEvents()).
		// Every Backup of the OADP namespace: an admin's own backup finishing
		// moves tenants up the queue too.
		Watches(&velerov1.Backup{}, r.backupEvents(),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.inOADPNamespace))).
		Watches(&velerov1.DeleteBackupRequest{}, handler.EnqueueRequestsFromMapFunc(r.backupToNAB),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.isNACObject))).
		// A location approved, created or turned Available wakes the NABs
		// waiting to use it.
		Watches(&v1alpha1.NonAdminBackupStorageLocation{}, toUsers[*v1alpha1.NonAdminBackup](r.Client, usesLocation)).
		// The DownloadRequests VerifyBackupContents waits on: Velero serving
		// one wakes its NAB (no polling).
		Watches(&velerov1.DownloadRequest{}, toOrigin[*v1alpha1.NonAdminBackup](),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](r.OADPNamespace), veleroAnswered())).
		// The Velero Restores of restore tests (TestRestore) finishing wake
		// their NAB.
		Watches(&velerov1.Restore{}, toOrigin[*v1alpha1.NonAdminBackup](),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](r.OADPNamespace))).
		// The node agent's volume work: the NAB's progress counters.
		Watches(&velerov2alpha1.DataUpload{}, handler.EnqueueRequestsFromMapFunc(r.volumeToNAB),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.inOADPNamespace))).
		Watches(&velerov1.PodVolumeBackup{}, handler.EnqueueRequestsFromMapFunc(r.volumeToNAB),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.inOADPNamespace))).
		Complete(r)
}

// volumeToNAB maps a DataUpload or PodVolumeBackup to the NonAdminBackup of
// the Velero Backup its velero.io/backup-name label names (none for an
// admin's backup).
func (r *NonAdminBackupReconciler) volumeToNAB(ctx context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[velerov1.BackupNameLabel]
	if name == "" {
		return nil
	}
	b := &velerov1.Backup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.OADPNamespace, Name: name}, b); err != nil || !r.isNACObject(b) {
		return nil
	}
	return r.backupToNAB(ctx, b)
}

// inOADPNamespace reports whether obj lives in the OADP namespace.
func (r *NonAdminBackupReconciler) inOADPNamespace(obj client.Object) bool {
	return obj.GetNamespace() == r.OADPNamespace
}

// isNACObject reports whether obj lives in the OADP namespace and carries the
// NAC labels.
func (r *NonAdminBackupReconciler) isNACObject(obj client.Object) bool {
	return obj.GetNamespace() == r.OADPNamespace &&
		obj.GetLabels()[v1alpha1.OADPLabel] == v1alpha1.OADPLabelValue &&
		obj.GetLabels()[v1alpha1.NabOriginNACUUIDLabel] != ""
}

// backupToNAB maps a Velero Backup to the NonAdminBackup named by its origin
// annotations.
func (r *NonAdminBackupReconciler) backupToNAB(_ context.Context, obj client.Object) []reconcile.Request {
	return originOf[*v1alpha1.NonAdminBackup](obj)
}

// usesLocation reports whether nab, not ended, names the
// NonAdminBackupStorageLocation location in its backupSpec.
func usesLocation(nab *v1alpha1.NonAdminBackup, location string) bool {
	p := nab.Status.Plan
	return nab.Spec.BackupSpec != nil && nab.Spec.BackupSpec.StorageLocation == location &&
		(p == nil || p.State == v1alpha1.PlanRunning)
}
