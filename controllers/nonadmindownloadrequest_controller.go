package controllers

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/internal/staleness"
)

// Actions of the nonadmindownloadrequest blueprint.
const (
	// ActionDownload gets the pre-signed URL of a new
	// NonAdminDownloadRequest.
	ActionDownload = "download"
)

// NonAdminDownloadRequestReconciler runs the nonadmindownloadrequest
// blueprint for each NonAdminDownloadRequest (OADP NAC's download
// workflow): a Velero DownloadRequest in the OADP namespace for a file of
// the tenant's own NonAdminBackup or NonAdminRestore, its URL copied into
// status; the request is deleted once the URL expires (OADP NAC's
// behaviour), and its finalize action removes the Velero DownloadRequest.
type NonAdminDownloadRequestReconciler struct {
	Deps

	reads staleness.Tracker
}

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadmindownloadrequests,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadmindownloadrequests/status;nonadmindownloadrequests/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=downloadrequests,verbs=get;list;watch;create;delete;deletecollection

// Reconcile moves one NonAdminDownloadRequest forward with the shared NAC
// loop: finalize once it is being deleted, download otherwise; a request
// whose URL has expired is deleted.
func (r *NonAdminDownloadRequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileNAC(ctx, &r.Deps, &r.reads, nacKind[*v1alpha1.NonAdminDownloadRequest]{
		newObject: func() *v1alpha1.NonAdminDownloadRequest { return &v1alpha1.NonAdminDownloadRequest{} },
		finalizer: v1alpha1.NonAdminDownloadRequestFinalizer,
		blueprint: blueprints.NonAdminDownloadRequest, kind: "NonAdminDownloadRequest",
		actionFor: func(nadr *v1alpha1.NonAdminDownloadRequest) string {
			if !nadr.DeletionTimestamp.IsZero() {
				return ActionFinalize
			}
			return ActionDownload
		},
		refs: downloadRefs,
		begin: func(nadr *v1alpha1.NonAdminDownloadRequest) {
			if nadr.Status.Phase == "" {
				nadr.Status.Phase = v1alpha1.NonAdminPhaseNew
			}
		},
		observed:  func(nadr *v1alpha1.NonAdminDownloadRequest, g int64) { nadr.Status.ObservedGeneration = g },
		afterRun:  func(context.Context, *v1alpha1.NonAdminDownloadRequest, string, bool) error { return nil },
		expiresAt: downloadExpiry,
	}, req)
}

// downloadExpiry returns when a NonAdminDownloadRequest's URL expires (zero
// before Velero signed one).
func downloadExpiry(nadr *v1alpha1.NonAdminDownloadRequest) time.Time {
	if s := nadr.Status.VeleroDownloadRequest.Status; s != nil && s.Expiration != nil && s.DownloadURL != "" {
		return s.Expiration.Time
	}
	return time.Time{}
}

// SetupWithManager registers the reconciler: NonAdminDownloadRequests
// cluster-wide (spec changes only), Velero DownloadRequests in the OADP
// namespace carrying the NADR label, mapped back by their origin
// annotations, and the Velero Backups and Restores of NAC objects, mapped to
// the unfinished requests of their namespace that name them.
func (r *NonAdminDownloadRequestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	labelled := func(label string) predicate.Predicate {
		return predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == r.OADPNamespace && o.GetLabels()[label] != ""
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nonadmindownloadrequest").
		WithOptions(r.controllerOptions()).
		For(&v1alpha1.NonAdminDownloadRequest{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&velerov1.DownloadRequest{}, handler.EnqueueRequestsFromMapFunc(downloadToNADR),
			builder.WithPredicates(labelled(v1alpha1.NadrOriginNACUUIDLabel))).
		Watches(&velerov1.Backup{}, handler.EnqueueRequestsFromMapFunc(r.targetToWaitingNADRs(v1alpha1.NabOriginNamespaceAnnotation, v1alpha1.NabOriginNameAnnotation)),
			builder.WithPredicates(labelled(v1alpha1.NabOriginNACUUIDLabel))).
		Watches(&velerov1.Restore{}, handler.EnqueueRequestsFromMapFunc(r.targetToWaitingNADRs(v1alpha1.NarOriginNamespaceAnnotation, v1alpha1.NarOriginNameAnnotation)),
			builder.WithPredicates(labelled(v1alpha1.NarOriginNACUUIDLabel))).
		Complete(r)
}

// targetToWaitingNADRs returns a map function from a Velero Backup or
// Restore to the unfinished NonAdminDownloadRequests of its origin
// namespace (annotation nsKey) that name its NAC object (annotation
// nameKey).
func (r *NonAdminDownloadRequestReconciler) targetToWaitingNADRs(nsKey, nameKey string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		ns, name := obj.GetAnnotations()[nsKey], obj.GetAnnotations()[nameKey]
		if ns == "" || name == "" {
			return nil
		}
		list := &v1alpha1.NonAdminDownloadRequestList{}
		if err := r.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, nadr := range list.Items {
			p := nadr.Status.Plan
			if nadr.Spec.Target.Name != name || (p != nil && p.State != v1alpha1.PlanRunning) {
				continue
			}
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: nadr.Namespace, Name: nadr.Name}})
		}
		return reqs
	}
}

// downloadToNADR maps a Velero DownloadRequest to the
// NonAdminDownloadRequest named by its origin annotations.
func downloadToNADR(_ context.Context, obj client.Object) []reconcile.Request {
	ns, name := obj.GetAnnotations()[v1alpha1.NadrOriginNamespaceAnnotation], obj.GetAnnotations()[v1alpha1.NadrOriginNameAnnotation]
	if ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
