package controllers

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
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

// NonAdminRestores (OADP NAC's restore workflow) run the nonadminrestore
// blueprint, adopt (OADP NAC's), have their Velero Restore mirrored after
// each run of restore and report later changes of spec.restoreSpec. The
// restore pre-check, which waits on Velero ServerStatusRequests, is off
// when the controller may not watch them (OADP's RBAC for its non-admin
// controller grants none; Capabilities.RestorePrecheck: a watch the API
// server refuses would keep the manager from starting). Turns share
// Velero's restore queue between namespaces (with the phase registry's
// WaitForTurn and the NonAdminBackup controller, which registers its cache
// indexes; nil: no turns, and a blueprint with WaitForTurn fails unless its
// limit is 0).
func init() {
	registerReconciler[*v1alpha1.NonAdminRestore](func(d Deps, s *Shared) Reconciler {
		k := &restoreKind{Deps: d, noServerStatusRequests: s.NoServerStatusRequests, turns: s.Turns}
		return newNACReconciler(d, kindHooks[*v1alpha1.NonAdminRestore]{action: restoreAction, refs: restoreRefs, watches: k.watches},
			kindPolicy[*v1alpha1.NonAdminRestore]{adopts: adoptsYounger[*v1alpha1.NonAdminRestore], decided: restoreSpecDecided,
				mirror: "Restore", mirrorAfter: []string{v1alpha1.ActionRestore}})
	})
}

// restoreKind is the NonAdminRestore kind's part of its reconciler: what it
// watches.
type restoreKind struct {
	Deps
	noServerStatusRequests bool
	turns                  *veleroqueue.Turns
}

// restoreRefs are a NonAdminRestore's: its Velero Restore.
func restoreRefs(nar *v1alpha1.NonAdminRestore) []statusRef {
	if v := nar.Status.VeleroRestore; v != nil {
		return []statusRef{refTo[velerov1.Restore]("status.veleroRestore", &v.NACUUID, &v.Name, &v.Namespace)}
	}
	return nil
}

// watches: Velero Restores in the OADP namespace carrying the NAC label,
// mapped back by their origin annotations, Velero Backups of
// NonAdminBackups, mapped to the unfinished NonAdminRestores that wait for
// them, and what the restore's phases wait on.
func (k *restoreKind) watches(_ ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	made := builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](k.OADPNamespace))
	if k.turns != nil {
		// Velero's restore queue is shared by turns (the indexes are
		// IndexTurns', registered by the NonAdminBackup controller with the
		// same Turns): a NAR starting or stopping to wait, or a tenant's
		// Restore finishing, may give the next waiter its turn.
		w := turnWaker{turns: k.turns, kind: "NonAdminRestore"}
		b = b.Watches(&v1alpha1.NonAdminRestore{}, w.turnEvents()).
			Watches(&velerov1.Restore{}, freed(restoreFinished, veleroqueue.UnfinishedRestoreOrigin, w.wake), made)
	}
	b = b.
		Watches(&velerov1.Restore{}, toOrigin[*v1alpha1.NonAdminRestore](), made).
		Watches(&velerov1.Backup{}, toWaiters[*v1alpha1.NonAdminRestore, *v1alpha1.NonAdminBackup](k.Client, restoresBackup),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](k.OADPNamespace)))
	answered := builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](k.OADPNamespace), veleroAnswered())
	if !k.noServerStatusRequests {
		// The ServerStatusRequest CheckRestoreItems waits on: Velero
		// answering wakes the NAR (no polling).
		b = b.Watches(&velerov1.ServerStatusRequest{}, toOrigin[*v1alpha1.NonAdminRestore](), answered)
	}
	volumeToNAR := volumeToOrigin[*v1alpha1.NonAdminRestore](k.Client, k.OADPNamespace, velerov1.RestoreNameLabel,
		func() client.Object { return &velerov1.Restore{} })
	return b.
		// The DownloadRequest CheckRestoreItems waits on.
		Watches(&velerov1.DownloadRequest{}, toOrigin[*v1alpha1.NonAdminRestore](), answered).
		// The node agent's volume work: the NAR's progress counters.
		Watches(&velerov2alpha1.DataDownload{}, volumeToNAR, builder.WithPredicates(k.inOADP())).
		Watches(&velerov1.PodVolumeRestore{}, volumeToNAR, builder.WithPredicates(k.inOADP())), nil
}

// restoreFinished reports whether Velero has finished r.
func restoreFinished(r *velerov1.Restore) bool { return v1alpha1.RestoreFinished(r.Status.Phase) }

// restoresBackup reports whether nar, not finished yet, restores the
// NonAdminBackup called nab (of its own namespace).
func restoresBackup(nar *v1alpha1.NonAdminRestore, nab string) bool {
	p := nar.Status.Plan
	spec := nar.AcceptedRestoreSpec()
	return spec != nil && spec.BackupName == nab &&
		(p == nil || p.State != v1alpha1.PlanComplete && p.State != v1alpha1.PlanFailed)
}
