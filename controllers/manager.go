package controllers

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/cachetransform"
	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
)

// RBAC the manager needs besides its reconcilers': leader election,
// reading OADP's DataProtectionApplication for its non-admin settings
// (package dpa; the OADP namespace only), and asking the API server who a
// metrics scraper is and whether it may read /metrics (TokenReview,
// SubjectAccessReview: controller-runtime's metrics filter, cmd/nac
// --metrics-secure; reviews are answered, never stored), and the right the
// ValidatingAdmissionPolicy nacflow-status-writers (config/admission) asks
// of whoever writes a NAC kind's status: write on statuses.nacflow.io; the
// TenantLocations object of the OADP namespace, the tenant
// namespace of each location, which the policy nacflow-pod-volume-backups
// reads (internal/velero/tenantlocations); the requester webhook
// (internal/runtime/webhooks): its signing key and certificate Secrets in
// the OADP namespace (cert-controller watches them), the CA it injects into
// its MutatingWebhookConfiguration, and SubjectAccessReviews as a restore's
// requester.
// +kubebuilder:rbac:groups="",namespace=openshift-adp,resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=nacflow-requester,verbs=update
// +kubebuilder:rbac:groups=nacflow.io,resources=statuses,verbs=write
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=openshift-adp,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=oadp.openshift.io,namespace=openshift-adp,resources=dataprotectionapplications,verbs=get;list
// +kubebuilder:rbac:groups=oadp.openshift.io,namespace=openshift-adp,resources=tenantlocations,verbs=get;create;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=datauploads;datadownloads;podvolumebackups;podvolumerestores,verbs=get;list;watch

// RBAC of backup sync (internal/velero/backupsync), which cmd/nac runs in
// this manager: creating the NonAdminBackups it brings back, reading their
// origin Namespaces. Its markers are here because controller-gen reads
// controllers/ only (make manifests).
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups,verbs=create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// CacheOptions returns the manager's cache options: Velero objects are
// watched only in oadpNamespace (DeleteBackupRequests only when they carry
// the OADP label), never cluster-wide (docs/architecture.md, Controllers: a tenant's objects
// in the OADP namespace are the only ones nacflow reads there); Blueprints
// only in oadpNamespace. NAC kinds are watched cluster-wide. With
// listPageSize above 0, every full list (a start, a relist) is read from
// the API server in pages of that many objects, each page transformed as
// it arrives (package pagedlist): the controller's memory at a start stays
// near its settled size, at the cost of lists served by etcd rather than
// the watch cache. 0: client-go's own list, the watch cache's whole answer
// decoded at once.
func CacheOptions(oadpNamespace string, listPageSize int64) cache.Options {
	nacSelector := labels.SelectorFromSet(labels.Set{v1alpha1.OADPLabel: v1alpha1.OADPLabelValue})
	oadpOnly := map[string]cache.Config{oadpNamespace: {}}
	// managedFields are never read: not keeping them saves memory on every
	// cached object; equal plan snapshots are kept once.
	transform := cachetransform.New()
	var newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer
	if listPageSize > 0 {
		newInformer = pagedlist.NewInformer(transform, listPageSize)
	}
	return cache.Options{
		DefaultTransform: transform,
		NewInformer:      newInformer,
		ByObject: map[client.Object]cache.ByObject{
			// Every Backup of the OADP namespace, NAC's or not: all of them
			// take a place in Velero's queue.
			&velerov1.Backup{}:                               {Namespaces: oadpOnly},
			&velerov1.DeleteBackupRequest{}:                  {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.Restore{}:                              {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.BackupStorageLocation{}:                {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.DownloadRequest{}:                      {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.ServerStatusRequest{}:                  {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.Schedule{}:                             {Namespaces: oadpOnly, Label: nacSelector},
			&v1alpha1.NonAdminBackupStorageLocationRequest{}: {Namespaces: oadpOnly},
			&v1alpha1.Blueprint{}:                            {Namespaces: oadpOnly},
			// The volume work of Velero's node agent, counted in NAB and NAR
			// status (OADP NAC's progress counters).
			&velerov2alpha1.DataUpload{}:   {Namespaces: oadpOnly},
			&velerov2alpha1.DataDownload{}: {Namespaces: oadpOnly},
			&velerov1.PodVolumeBackup{}:    {Namespaces: oadpOnly},
			&velerov1.PodVolumeRestore{}:   {Namespaces: oadpOnly},
		},
	}
}
