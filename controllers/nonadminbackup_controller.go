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
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
	"github.com/nacflow/nacflow/phases"
)

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

// backupKind is the NonAdminBackup kind's part of its reconciler: it runs
// the nonadminbackup blueprint for each NonAdminBackup, keeps the queue
// positions of the waiting ones and measures the finished ones.
type backupKind struct {
	Deps
	// queueRefreshWindow is how long waiting NABs' queue positions may lag
	// a completion; completions within it cost one refresh. 0 means
	// veleroqueue.DefaultRefreshWindow.
	queueRefreshWindow time.Duration
	// queue indexes the unfinished Velero Backups for queue positions
	// (shared with the phases, which set the first position); nil: no
	// positions beyond Velero's own and 0 once finished.
	queue *veleroqueue.BackupQueue
	// turns shares Velero's queue between namespaces (shared with
	// WaitForTurn, which asks it for turns); the reconciler wakes the
	// waiters whose turn a change may have brought. nil: no waiter is
	// woken but by its timed recheck.
	turns *veleroqueue.Turns
	// usage measures status.usage once a backup's plan has ended (nil: not
	// measured).
	usage *UsageMeter

	// refreshAt is when the scheduled queue refresh runs; until then further
	// completions need no new one.
	refreshMu sync.Mutex
	refreshAt time.Time
}

// NonAdminBackups adopt (backup sync, schedules, OADP NAC), have their
// Velero Backup mirrored after each run of backup or adopt, report later
// changes of spec.backupSpec, are deleted once their delete action
// completes or their forceDelete action ends — a plan that failed leaves the
// Velero objects to the finalize action —, and log at spec.logLevel.
func init() {
	registerReconciler[*v1alpha1.NonAdminBackup](func(d Deps, s *Shared) Reconciler {
		k := &backupKind{Deps: d, queueRefreshWindow: s.QueueRefreshWindow, queue: s.Queue, turns: s.Turns, usage: s.Usage}
		return newNACReconciler(d, kindHooks[*v1alpha1.NonAdminBackup]{action: actionFor, refs: backupRefs, afterRun: k.afterRun, watches: k.watches},
			kindPolicy[*v1alpha1.NonAdminBackup]{
				adopts: backupAdoption, decided: backupSpecDecided,
				mirror:             "Backup",
				mirrorAfter:        []string{v1alpha1.ActionBackup, v1alpha1.ActionAdopt},
				deleteWhenComplete: []string{v1alpha1.ActionDelete},
				deleteWhenEnded:    []string{v1alpha1.ActionForceDelete},
				logLevel:           func(nab *v1alpha1.NonAdminBackup) string { return nab.Spec.LogLevel },
			})
	})
}

// backupRefs are a NonAdminBackup's references: its Velero Backup and its
// DeleteBackupRequest.
func backupRefs(nab *v1alpha1.NonAdminBackup) []statusRef {
	var refs []statusRef
	if v := nab.Status.VeleroBackup; v != nil {
		refs = append(refs, refTo[velerov1.Backup]("status.veleroBackup", &v.NACUUID, &v.Name, &v.Namespace))
	}
	if v := nab.Status.VeleroDeleteBackupRequest; v != nil {
		refs = append(refs, refTo[velerov1.DeleteBackupRequest]("status.veleroDeleteBackupRequest", &v.NACUUID, &v.Name, &v.Namespace))
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

// backupAdoption: a NonAdminBackup adopts what OADP NAC began for it and,
// when it was made for an existing Velero Backup (backup sync's, a
// schedule's runs: older than the NAB), that Backup.
func backupAdoption(nab *v1alpha1.NonAdminBackup) adoption {
	if nab.Labels[v1alpha1.NabSyncedFromNACUUIDLabel] != "" || nab.Labels[v1alpha1.NonAdminScheduleLabel] != "" {
		return adoptOlder
	}
	return adoptYounger
}

// afterRun, after each run of backup or adopt, shows the queue position of
// a mirrored Velero Backup and, once the plan has ended, measures the
// backup's usage (when it asks to measure again later, the duration says
// when).
func (k *backupKind) afterRun(ctx context.Context, nab *v1alpha1.NonAdminBackup, run ran[*v1alpha1.NonAdminBackup]) (time.Duration, error) {
	if run.action != v1alpha1.ActionBackup && run.action != v1alpha1.ActionAdopt {
		return 0, nil
	}
	if err := k.showQueuePosition(ctx, nab, run); err != nil || !run.finished {
		return 0, err
	}
	return k.usage.Measure(ctx, nab, v1alpha1.NACUUIDOf(nab.UID))
}

// showQueuePosition writes nacflow's estimate of the queue position of a
// mirrored Velero Backup that has not finished and has no position from
// Velero (phases.ShowQueuePosition, its one writer): the figure is
// rewritten when it drifted, or for free when the mirror changed in this
// run, since the status is written anyway.
func (k *backupKind) showQueuePosition(ctx context.Context, nab *v1alpha1.NonAdminBackup, run ran[*v1alpha1.NonAdminBackup]) error {
	vb := nab.Status.VeleroBackup
	if k.queue == nil || !run.mirrored || vb.Status == nil || v1alpha1.BackupFinished(vb.Status.Phase) || vb.Status.QueuePosition != 0 {
		return nil
	}
	b := &velerov1.Backup{}
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.OADPNamespace, Name: vb.Name}, b); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading Velero Backup %s/%s: %w", k.OADPNamespace, vb.Name, err)
	} else if err != nil {
		return nil
	}
	k.queue.Observe(b)
	changed := !equality.Semantic.DeepEqual(run.before.Status.VeleroBackup, vb) ||
		!equality.Semantic.DeepEqual(run.before.Status.QueueInfo, nab.Status.QueueInfo)
	phases.ShowQueuePosition(k.queue, nab, b, changed)
	return nil
}

// watches: Velero Backups and DeleteBackupRequests in the OADP namespace
// carrying the NAC labels, mapped back to their NAB by the origin
// annotations, and what the NAB's phases wait on.
func (k *backupKind) watches(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	if k.turns != nil {
		if err := veleroqueue.IndexTurns(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return nil, err
		}
	}
	turns := turnWaker{turns: k.turns, kind: "NonAdminBackup"}
	made := builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](k.OADPNamespace))
	return b.
		// Status changes only where they change the turns: a waiter
		// coming, going or admitted wakes the next one.
		Watches(&v1alpha1.NonAdminBackup{}, turns.turnEvents()).
		// Every Backup of the OADP namespace: an admin's own backup finishing
		// moves tenants up the queue too.
		Watches(&velerov1.Backup{}, inFlight(k.backupEvents()), builder.WithPredicates(k.inOADP())).
		Watches(&velerov1.Backup{}, freed(backupFinished, veleroqueue.UnfinishedOrigin, turns.wake), builder.WithPredicates(k.inOADP())).
		Watches(&velerov1.DeleteBackupRequest{}, toOrigin[*v1alpha1.NonAdminBackup](), made).
		// A location approved, created or turned Available wakes the NABs
		// waiting to use it.
		Watches(&v1alpha1.NonAdminBackupStorageLocation{}, toUsers[*v1alpha1.NonAdminBackup](k.Client, usesLocation)).
		// The DownloadRequests VerifyBackupContents waits on: Velero serving
		// one wakes its NAB (no polling).
		Watches(&velerov1.DownloadRequest{}, toOrigin[*v1alpha1.NonAdminBackup](),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](k.OADPNamespace), veleroAnswered())).
		// The Velero Restores of restore tests (TestRestore) finishing wake
		// their NAB.
		Watches(&velerov1.Restore{}, toOrigin[*v1alpha1.NonAdminBackup](), made).
		// The node agent's volume work: the NAB's progress counters.
		Watches(&velerov2alpha1.DataUpload{}, k.volumeToNAB(), builder.WithPredicates(k.inOADP())).
		Watches(&velerov1.PodVolumeBackup{}, k.volumeToNAB(), builder.WithPredicates(k.inOADP())), nil
}

// volumeToNAB maps a DataUpload or PodVolumeBackup to the NonAdminBackup of
// the Velero Backup its velero.io/backup-name label names.
func (k *backupKind) volumeToNAB() handler.EventHandler {
	return volumeToOrigin[*v1alpha1.NonAdminBackup](k.Client, k.OADPNamespace, velerov1.BackupNameLabel,
		func() client.Object { return &velerov1.Backup{} })
}

// backupFinished reports whether Velero has finished b.
func backupFinished(b *velerov1.Backup) bool { return v1alpha1.BackupFinished(b.Status.Phase) }

// usesLocation reports whether nab, not ended, names the
// NonAdminBackupStorageLocation location in its backupSpec.
func usesLocation(nab *v1alpha1.NonAdminBackup, location string) bool {
	p := nab.Status.Plan
	return nab.Spec.BackupSpec != nil && nab.Spec.BackupSpec.StorageLocation == location &&
		(p == nil || p.State == v1alpha1.PlanRunning)
}
