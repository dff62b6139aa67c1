package controllers

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

func init() {
	registerReconciler[*v1alpha1.NonAdminDownloadRequest](func(d Deps, _ *Shared) Reconciler {
		return &NonAdminDownloadRequestReconciler{Deps: d}
	})
}

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadmindownloadrequests,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadmindownloadrequests/status;nonadmindownloadrequests/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=downloadrequests,verbs=get;list;watch;create;delete;deletecollection

// Reconcile moves one NonAdminDownloadRequest forward with the shared NAC
// loop: finalize once it is being deleted, download otherwise; a request
// whose URL has expired is deleted.
func (r *NonAdminDownloadRequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileNAC(ctx, &r.Deps, &r.reads, r, req)
}

// Action is download, finalize once the request is being deleted.
func (r *NonAdminDownloadRequestReconciler) Action(nadr *v1alpha1.NonAdminDownloadRequest) string {
	return finalizeOr(nadr, v1alpha1.ActionDownload)
}

// Refs are a NonAdminDownloadRequest's status references (downloadRefs).
func (r *NonAdminDownloadRequestReconciler) Refs(nadr *v1alpha1.NonAdminDownloadRequest) []statusRef {
	return downloadRefs(nadr)
}

// AfterRun does nothing: the download phase writes the status itself.
func (r *NonAdminDownloadRequestReconciler) AfterRun(context.Context, *v1alpha1.NonAdminDownloadRequest, string, bool) (time.Duration, error) {
	return 0, nil
}

// Policy: a NonAdminDownloadRequest adopts the DownloadRequest OADP NAC
// made for it (downloadRefs) and expires with its URL (downloadExpiry).
func (r *NonAdminDownloadRequestReconciler) Policy() kindPolicy[*v1alpha1.NonAdminDownloadRequest] {
	return kindPolicy[*v1alpha1.NonAdminDownloadRequest]{adopts: true, expiresAt: downloadExpiry}
}

// downloadRefs are a NonAdminDownloadRequest's: its Velero DownloadRequest
// (status.velero has no namespace: the OADP namespace). OADP NAC records
// no link in status: it names the DownloadRequest "nadr-<UID>" and labels
// it with the UID itself. While status links nothing, the reference is
// that name and NACUUID, held outside status: operationIdentity adopts the
// object only when it exists and names this very request (so a request
// OADP NAC began is taken over, never duplicated), and nothing of it is
// written back unless adopted.
func downloadRefs(n *v1alpha1.NonAdminDownloadRequest) []statusRef {
	v := &n.Status.VeleroDownloadRequest
	newObject := func() client.Object { return &velerov1.DownloadRequest{} }
	if v.NACUUID == "" && v.Name == "" && n.UID != "" {
		uuid, name := string(n.UID), "nadr-"+string(n.UID)
		return []statusRef{{"status.velero", "DownloadRequest", &uuid, &name, nil, newObject}}
	}
	return []statusRef{{"status.velero", "DownloadRequest", &v.NACUUID, &v.Name, nil, newObject}}
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
