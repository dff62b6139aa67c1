package controllers

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/staleness"
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
		actionFor: finalizeOr[*v1alpha1.NonAdminDownloadRequest](v1alpha1.ActionDownload),
		refs:      downloadRefs,
		// The DownloadRequest OADP NAC made for the request (downloadRefs).
		adopts:    true,
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
	b, err := nacController[*v1alpha1.NonAdminDownloadRequest](mgr, &r.Deps)
	if err != nil {
		return err
	}
	return b.
		Watches(&velerov1.DownloadRequest{}, toOrigin[*v1alpha1.NonAdminDownloadRequest](),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminDownloadRequest](r.OADPNamespace))).
		Watches(&velerov1.Backup{}, toWaiters[*v1alpha1.NonAdminDownloadRequest, *v1alpha1.NonAdminBackup](r.Client, downloadsFrom),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](r.OADPNamespace))).
		Watches(&velerov1.Restore{}, toWaiters[*v1alpha1.NonAdminDownloadRequest, *v1alpha1.NonAdminRestore](r.Client, downloadsFrom),
			builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](r.OADPNamespace))).
		Complete(r)
}

// downloadsFrom reports whether nadr, whose plan has not started or is
// running, asks for a file of the NAC object called target (of its own
// namespace).
func downloadsFrom(nadr *v1alpha1.NonAdminDownloadRequest, target string) bool {
	p := nadr.Status.Plan
	return nadr.Spec.Target.Name == target && (p == nil || p.State == v1alpha1.PlanRunning)
}
