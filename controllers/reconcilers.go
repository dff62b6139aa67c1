package controllers

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/dpa"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// Reconciler is the reconciler of one NAC kind, as the manager starts it
// (SetupWithManager) or a caller drives it by hand (Reconcile).
type Reconciler interface {
	reconcile.Reconciler
	SetupWithManager(mgr ctrl.Manager) error
}

// Shared is what the NAC kinds' reconcilers take from the manager's
// configuration (cmd/nac's flags, a test's manager): each kind's
// dependencies, and the parts and settings some kinds share or own. A kind
// reads only the fields its kind file names; the zero value of a field is
// that part off (nil) or the reconciler's default (zero durations).
type Shared struct {
	// Deps returns the dependencies of the controller of the NAC kind
	// named kind (e.g. NonAdminBackup).
	Deps func(kind string) Deps
	// Queue is Velero's backup queue as nacflow sees it (NonAdminBackup:
	// queue positions; nil: none reported).
	Queue *veleroqueue.BackupQueue
	// Turns is the fair share of Velero's queues by namespace
	// (NonAdminBackup, NonAdminRestore).
	Turns *veleroqueue.Turns
	// Usage measures finished backups' status.usage (NonAdminBackup; nil:
	// measurement off).
	Usage *UsageMeter
	// QueueRefreshWindow bounds how often a finished Velero Backup
	// refreshes the queue positions of waiting NonAdminBackups (0: the
	// reconciler's default).
	QueueRefreshWindow time.Duration
	// NoServerStatusRequests: Velero ServerStatusRequests may not be made
	// (NonAdminRestore's pre-check asks Velero which restore item actions
	// run; without the right it is skipped, said in status).
	NoServerStatusRequests bool
	// RequireApprovalForBSL holds tenants' locations for an admin's
	// approval (NonAdminBackupStorageLocation; OADP NAC's
	// requireApprovalForBSL).
	RequireApprovalForBSL bool
	// Settings are the admin's non-admin settings, read live
	// (NonAdminBackupStorageLocation).
	Settings *dpa.Source
	// CredentialCheckPeriod is how often an Available location's
	// credential is checked again (NonAdminBackupStorageLocation; 0: the
	// reconciler's default).
	CredentialCheckPeriod time.Duration
	// EndpointRevision returns the revision of a location's endpoint, its
	// resolved addresses (NonAdminBackupStorageLocation; nil: none).
	EndpointRevision func(ctx context.Context, spec *velerov1.BackupStorageLocationSpec) string
}

// newReconciler makes the reconciler of one NAC kind from its dependencies
// and the shared parts.
type newReconciler func(d Deps, s *Shared) Reconciler

// reconcilerFor holds each NAC kind's constructor by kind name; each kind
// file adds its own at init (registerReconciler), as the kind's types file
// adds its registry entry.
var reconcilerFor = map[string]newReconciler{}

// registerReconciler records the constructor of the reconciler of the NAC
// kind T. A T the kind registry lacks is recorded under its Go type, so
// that NewReconcilers reports the registry's missing kind.
func registerReconciler[T v1alpha1.Object](f newReconciler) {
	k, err := v1alpha1.KindFor[T]()
	if err != nil {
		var zero T
		reconcilerFor[fmt.Sprintf("%T", zero)] = f
		return
	}
	reconcilerFor[k.Kind] = f
}

// NewReconcilers returns the reconciler of every kind of the NAC kind
// registry, by kind name, each with s.Deps(kind) and the shared parts. The
// error names a kind without a reconciler (a build defect: its kind file is
// missing).
func NewReconcilers(s *Shared) (map[string]Reconciler, error) {
	rs := make(map[string]Reconciler, len(reconcilerFor))
	for _, k := range v1alpha1.Kinds() {
		f, ok := reconcilerFor[k.Kind]
		if !ok {
			return nil, fmt.Errorf("no reconciler for NAC kind %s (its kind file in controllers registers one)", k.Kind)
		}
		rs[k.Kind] = f(s.Deps(k.Kind), s)
	}
	return rs, nil
}
