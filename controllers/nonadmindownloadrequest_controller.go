package controllers

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadmindownloadrequests,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadmindownloadrequests/status;nonadmindownloadrequests/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=downloadrequests,verbs=get;list;watch;create;delete;deletecollection

// NonAdminDownloadRequests (OADP NAC's download workflow) run the
// nonadmindownloadrequest blueprint: a Velero DownloadRequest in the OADP
// namespace for a file of the tenant's own NonAdminBackup or
// NonAdminRestore, its URL copied into status by the download phase. A
// request adopts the DownloadRequest OADP NAC made for it (downloadRefs)
// and is deleted once its URL expires (downloadExpiry, OADP NAC's
// behaviour); its finalize action removes the Velero DownloadRequest.
func init() {
	registerReconciler[*v1alpha1.NonAdminDownloadRequest](func(d Deps, _ *Shared) Reconciler {
		return newNACReconciler(d, kindHooks[*v1alpha1.NonAdminDownloadRequest]{
			action: func(n *v1alpha1.NonAdminDownloadRequest) string { return finalizeOr(n, v1alpha1.ActionDownload) },
			refs:   downloadRefs, watches: downloadWatches(d.Client, d.OADPNamespace),
		}, kindPolicy[*v1alpha1.NonAdminDownloadRequest]{adopts: adoptsYounger[*v1alpha1.NonAdminDownloadRequest], expiresAt: downloadExpiry})
	})
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
	if v.NACUUID == "" && v.Name == "" && n.UID != "" {
		uuid, name := string(n.UID), "nadr-"+string(n.UID)
		return []statusRef{refTo[velerov1.DownloadRequest]("status.velero", &uuid, &name, nil)}
	}
	return []statusRef{refTo[velerov1.DownloadRequest]("status.velero", &v.NACUUID, &v.Name, nil)}
}

// downloadExpiry returns when a NonAdminDownloadRequest's URL expires (zero
// before Velero signed one).
func downloadExpiry(nadr *v1alpha1.NonAdminDownloadRequest) time.Time {
	if s := nadr.Status.VeleroDownloadRequest.Status; s != nil && s.Expiration != nil && s.DownloadURL != "" {
		return s.Expiration.Time
	}
	return time.Time{}
}

// downloadWatches: Velero DownloadRequests in the OADP namespace carrying
// the NADR label, mapped back by their origin annotations, and the Velero
// Backups and Restores of NAC objects, mapped to the unfinished requests of
// their namespace that name them.
func downloadWatches(c client.Reader, oadpNamespace string) func(ctrl.Manager, *builder.Builder) (*builder.Builder, error) {
	return func(_ ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
		return b.
			Watches(&velerov1.DownloadRequest{}, toOrigin[*v1alpha1.NonAdminDownloadRequest](),
				builder.WithPredicates(madeForKind[*v1alpha1.NonAdminDownloadRequest](oadpNamespace))).
			Watches(&velerov1.Backup{}, toWaiters[*v1alpha1.NonAdminDownloadRequest, *v1alpha1.NonAdminBackup](c, downloadsFrom),
				builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackup](oadpNamespace))).
			Watches(&velerov1.Restore{}, toWaiters[*v1alpha1.NonAdminDownloadRequest, *v1alpha1.NonAdminRestore](c, downloadsFrom),
				builder.WithPredicates(madeForKind[*v1alpha1.NonAdminRestore](oadpNamespace))), nil
	}
}

// downloadsFrom reports whether nadr, whose plan has not started or is
// running, asks for a file of the NAC object called target (of its own
// namespace).
func downloadsFrom(nadr *v1alpha1.NonAdminDownloadRequest, target string) bool {
	p := nadr.Status.Plan
	return nadr.Spec.Target.Name == target && (p == nil || p.State == v1alpha1.PlanRunning)
}
