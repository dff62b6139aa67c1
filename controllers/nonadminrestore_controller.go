package controllers

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/staleness"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// restoreAction picks the action of nar: finalize once it is being deleted,
// preview for spec.preview, restore otherwise.
func restoreAction(nar *v1alpha1.NonAdminRestore) string {
	if nar.Spec.Preview && nar.GetDeletionTimestamp().IsZero() {
		return v1alpha1.ActionPreview
	}
	return finalizeOr(nar, v1alpha1.ActionRestore)
}

// NonAdminRestoreReconciler runs the nonadminrestore blueprint for each
// NonAdminRestore (OADP NAC's restore workflow) and mirrors its Velero
// Restore.
type NonAdminRestoreReconciler struct {
	Deps

	// NoServerStatusRequests is set when the controller may not watch
	// Velero's ServerStatusRequests (OADP's RBAC for its non-admin
	// controller grants none; Capabilities.RestorePrecheck): the restore
	// pre-check, which waits on them, is off then, and a watch the API
	// server refuses would keep the manager from starting.
	NoServerStatusRequests bool

	// Turns shares Velero's restore queue between namespaces (shared with
	// the phase registry's WaitForTurn and the NonAdminBackup controller,
	// which registers its cache indexes; nil: no turns, and a blueprint
	// with WaitForTurn fails unless its limit is 0).
	Turns *veleroqueue.Turns

	reads staleness.Tracker
}

func init() {
	registerReconciler[*v1alpha1.NonAdminRestore](func(d Deps, s *Shared) Reconciler {
		return &NonAdminRestoreReconciler{Deps: d, NoServerStatusRequests: s.NoServerStatusRequests, Turns: s.Turns}
	})
}

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminrestores,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminrestores/status;nonadminrestores/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=restores,verbs=get;list;watch;create;delete;deletecollection
// A tenant's resource modifiers are copied into the OADP namespace (Velero
// reads them only there) and deleted with the restore; a restore into
// another namespace reads that Namespace.
// +kubebuilder:rbac:groups="",namespace=openshift-adp,resources=configmaps,verbs=get;create;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// The restore pre-check (CheckRestoreItems): Velero's plugin list, the
// tenant role and the roles a backup's RoleBindings bind, and whether a
// backup's PersistentVolume exists already.
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=serverstatusrequests,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles;roles,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get
// A restore preview (PreviewRestore) compares each backed-up item with the
// live object: get only, on the kinds a namespace's workload is made of (an
// item of another kind is previewed as unknown, naming the missing right),
// and the engine's guarded client confines those reads to the
// NonAdminRestore's own namespace.
// +kubebuilder:rbac:groups="",resources=configmaps;services;serviceaccounts;persistentvolumeclaims;pods;limitranges;resourcequotas;endpoints,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets;replicasets,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;networkpolicies,verbs=get
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get

// Reconcile moves one NonAdminRestore forward with the shared NAC loop:
// finalize once it is being deleted (the Velero Restore object goes), restore
// otherwise, mirroring the Velero Restore after each run.
func (r *NonAdminRestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileNAC(ctx, &r.Deps, &r.reads, r, req)
}

// Action picks a NonAdminRestore's action (restoreAction).
func (r *NonAdminRestoreReconciler) Action(nar *v1alpha1.NonAdminRestore) string {
	return restoreAction(nar)
}

// Refs are a NonAdminRestore's status references (restoreRefs).
func (r *NonAdminRestoreReconciler) Refs(nar *v1alpha1.NonAdminRestore) []statusRef {
	return restoreRefs(nar)
}

// AfterRun mirrors the Velero Restore after each run of restore.
func (r *NonAdminRestoreReconciler) AfterRun(ctx context.Context, nar *v1alpha1.NonAdminRestore, action string, _ bool) (time.Duration, error) {
	if action != v1alpha1.ActionRestore {
		return 0, nil
	}
	return 0, r.mirror(ctx, nar)
}

// Policy: NonAdminRestores adopt (OADP NAC's) and report later changes of
// spec.restoreSpec.
func (r *NonAdminRestoreReconciler) Policy() kindPolicy[*v1alpha1.NonAdminRestore] {
	return kindPolicy[*v1alpha1.NonAdminRestore]{adopts: true, decided: restoreSpecDecided}
}

// restoreRefs are a NonAdminRestore's: its Velero Restore.
func restoreRefs(nar *v1alpha1.NonAdminRestore) []statusRef {
	if v := nar.Status.VeleroRestore; v != nil {
		return []statusRef{{"status.veleroRestore", "Restore", &v.NACUUID, &v.Name, &v.Namespace,
			func() client.Object { return &velerov1.Restore{} }}}
	}
	return nil
}

// mirror copies the linked Velero Restore's status into the NAR.
func (r *NonAdminRestoreReconciler) mirror(ctx context.Context, nar *v1alpha1.NonAdminRestore) error {
	if nar.Status.VeleroRestore == nil {
		return nil
	}
	vr := nar.Status.VeleroRestore
	return mirrorVelero(ctx, &r.Deps, "Restore", vr.Name, &velerov1.Restore{}, nar, vr.NACUUID,
		func(v *velerov1.Restore) { nar.MirrorRestore(v) })
}

// SetupWithManager registers the reconciler: NonAdminRestores cluster-wide
// (spec changes only), Velero Restores in the OADP namespace carrying the
// NAC label, mapped back by their origin annotations, and Velero Backups of
// NonAdminBackups, mapped to the unfinished NonAdminRestores that wait for
// them.
func (r *NonAdminRestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b, err := nacController[*v1alpha1.NonAdminRestore](mgr, &r.Deps)
	if err != nil {
		return err
	}
	if r.Turns != nil {
		// Velero's restore queue is shared by turns (the indexes are
		// IndexTurns', registered by the NonAdminBackup controller with the
		// same Turns): a NAR starting or stopping to wait, or a tenant's
		// Restore finishing, may give the next waiter its turn.
		w := turnWaker{turns: r.Turns, kind: "NonAdminRestore"}
		b = b.Watches(&v1alpha1.NonAdminRestore{}, w.turnEvents()).
			Watches(&velerov1.Restore{}, w.restoreEvents(), builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](r.OADPNamespace)))
	}
	b = b.
		Watches(&velerov1.Restore{}, toOrigin[*v1alpha1.NonAdminRestore](), builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](r.OADPNamespace))).
		Watches(&velerov1.Backup{}, toWaiters[*v1alpha1.NonAdminRestore, *v1alpha1.NonAdminBackup](r.Client, restoresBackup),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](r.OADPNamespace)))
	if !r.NoServerStatusRequests {
		// The ServerStatusRequest CheckRestoreItems waits on: Velero
		// answering wakes the NAR (no polling).
		b = b.Watches(&velerov1.ServerStatusRequest{}, toOrigin[*v1alpha1.NonAdminRestore](),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](r.OADPNamespace), veleroAnswered()))
	}
	return b.
		// The DownloadRequest CheckRestoreItems waits on.
		Watches(&velerov1.DownloadRequest{}, toOrigin[*v1alpha1.NonAdminRestore](),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](r.OADPNamespace), veleroAnswered())).
		// The node agent's volume work: the NAR's progress counters.
		Watches(&velerov2alpha1.DataDownload{}, handler.EnqueueRequestsFromMapFunc(r.volumeToNAR), builder.WithPredicates(r.inOADP())).
		Watches(&velerov1.PodVolumeRestore{}, handler.EnqueueRequestsFromMapFunc(r.volumeToNAR), builder.WithPredicates(r.inOADP())).
		Complete(r)
}

// volumeToNAR maps a DataDownload or PodVolumeRestore to the
// NonAdminRestore of the Velero Restore its velero.io/restore-name label
// names (none for an admin's restore).
func (r *NonAdminRestoreReconciler) volumeToNAR(ctx context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[velerov1.RestoreNameLabel]
	if name == "" {
		return nil
	}
	restore := &velerov1.Restore{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.OADPNamespace, Name: name}, restore); err != nil ||
		restore.Labels[v1alpha1.NarOriginNACUUIDLabel] == "" {
		return nil
	}
	return originOf[*v1alpha1.NonAdminRestore](restore)
}

// restoresBackup reports whether nar, not finished yet, restores the
// NonAdminBackup called nab (of its own namespace).
func restoresBackup(nar *v1alpha1.NonAdminRestore, nab string) bool {
	p := nar.Status.Plan
	spec := nar.AcceptedRestoreSpec()
	return spec != nil && spec.BackupName == nab &&
		(p == nil || p.State != v1alpha1.PlanComplete && p.State != v1alpha1.PlanFailed)
}
