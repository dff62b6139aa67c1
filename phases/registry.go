// Package phases holds nacflow's phase functions, one file each, and the
// registry that gives them to the engine, with the reference rules of the
// Velero objects they make (docs/architecture.md, "The engine contract").
// Functions are stateless and hold no client: they reach the cluster only
// through the guarded clients the engine puts in each engine.Operation, so
// the engine's safety rule holds whatever a blueprint asks of them. A
// function's file begins with its family — validate_, velero_, wait_,
// status_, contents_, schedule_, storage_ — and holds its Doc.
package phases

import (
	"context"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/endpoint"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

// Clients are what phase functions talk to the cluster with.
type Clients struct {
	// Client reads through the manager's cache and writes to the API server.
	// Functions never hold it: the engine guards it for each operation
	// (engine.NewGuardedRegistry) and hands it over as Operation.Client.
	Client client.Client
	// APIReader reads straight from the API server, for the rare reads that
	// must not see a stale cache (adopting an object after AlreadyExists);
	// guarded the same way, as Operation.APIReader.
	APIReader client.Reader
	// Recorder emits the events of Notify and SyncScheduleRuns (nil: none).
	Recorder record.EventRecorder
	// Queue estimates queue positions (nil: CreateVeleroBackup sets none).
	Queue QueueEstimator
	// Turns shares Velero's queue between namespaces (WaitForTurn; nil:
	// WaitForTurn fails unless its limit is 0).
	Turns TurnKeeper
	// Locations records which namespace each tenant's Velero
	// BackupStorageLocation belongs to (CreateVeleroBSL, DeleteObjects;
	// nil: not recorded, and the admission policy then refuses every
	// PodVolumeBackup on the location).
	Locations LocationRecorder
}

// LocationRecorder keeps the map of tenant locations to their namespaces
// that the ValidatingAdmissionPolicy nacflow-pod-volume-backups reads
// (implemented by internal/velero/tenantlocations.Map).
type LocationRecorder interface {
	// Record maps the Velero BackupStorageLocation named location to the
	// tenant namespace; called before the location is created.
	Record(ctx context.Context, location, namespace string) error
	// Forget drops location's entry; called once it is deleted.
	Forget(ctx context.Context, location string) error
}

// restoreRules bound what a tenant's restore may create (restorepolicy):
// CheckRestoreItems judges a backup's items by them before the restore, and
// CreateVeleroRestore hands them to Velero's plugin on the Velero Restore.
type restoreRules struct {
	// tenantRole is the ClusterRole bounding a tenant's restore
	// (--tenant-role; restorepolicy.DefaultTenantRole when unset).
	tenantRole string
	// adminOwned are the resources a restore never changes when they exist
	// (--admin-owned-resources; restorepolicy.DefaultAdminOwned when unset).
	adminOwned []schema.GroupResource
	// requesters tell who asked for a restore (zero: no one is known).
	requesters Requesters
	// protect names the namespaces no restore maps into.
	protect Protected
	// precheck is --restore-precheck (a restore into another namespace
	// needs it).
	precheck bool
}

// tenantRoleName is the tenant role's name for messages.
func (r restoreRules) tenantRoleName() string {
	if r.tenantRole == "" {
		return restorepolicy.DefaultTenantRole
	}
	return r.tenantRole
}

// tools are what some functions keep besides the operation: never a client.
type tools struct {
	// recorder emits the events of Notify and SyncScheduleRuns (nil: none).
	recorder record.EventRecorder
	// queue estimates queue positions (nil: none).
	queue QueueEstimator
	// turns decides WaitForTurn's turns (nil: none).
	turns TurnKeeper
	// recent remembers what these functions created.
	recent *recentCreates
	// serving remembers when Velero last answered a DownloadRequest.
	serving *serving
	// quotas finds the admin's quota of a namespace for its schedules'
	// runs (nil: none).
	quotas QuotaSource
	// store GETs backup files under the endpoint rules.
	store *storeClient
	// locations records tenant locations' namespaces (nil: none).
	locations LocationRecorder
}

// Options are controller settings some phase functions follow.
type Options struct {
	// RequireApprovalForBSL is --require-approval-for-bsl: tenants' storage
	// locations wait for an admin's approval. Used only when Settings is nil.
	RequireApprovalForBSL bool
	// Settings, when set, resolves the admin's non-admin settings on each
	// run: flags given on the command line, else OADP's
	// DataProtectionApplication spec.nonAdmin (requireApprovalForBSL and the
	// enforce*Spec a blueprint's args.enforce does not set).
	Settings Settings
	// MaxBackupsInVelero is --max-backups-in-velero-per-namespace: how
	// many unfinished Velero Backups a namespace may have at once when its
	// blueprint's WaitForTurn sets no max. 0: unlimited (cmd/nac's default
	// is DefaultMaxBackupsInVelero).
	MaxBackupsInVelero int
	// MaxRestoresInVelero is --max-restores-in-velero-per-namespace: the
	// same for unfinished Velero Restores and a NonAdminRestore's
	// WaitForTurn (cmd/nac's default is DefaultMaxRestoresInVelero).
	MaxRestoresInVelero int
	// TenantRole is --tenant-role: the ClusterRole bounding what a tenant's
	// restore may create (empty: restorepolicy.DefaultTenantRole).
	TenantRole string
	// AdminOwned is --admin-owned-resources (nil: restorepolicy.DefaultAdminOwned).
	AdminOwned []schema.GroupResource
	// RequireTenantLocationForDownloads is
	// --require-tenant-location-for-downloads: every
	// NonAdminDownloadRequest follows OADP NAC's rule, refusing files of
	// backups kept on the admin's storage locations, as a blueprint's
	// ValidateDownloadRequest args.requireTenantLocation does for the
	// tenants it serves.
	RequireTenantLocationForDownloads bool
	// RestorePrecheck is --restore-precheck: CheckRestoreItems checks that
	// Velero runs nacflow's plugin and reads the backup's items before a
	// restore (false: it does nothing, as where no Velero runs).
	RestorePrecheck bool
	// Endpoints are the admin's endpoint rules for tenants' storage
	// locations (nac --endpoint-allow-cidrs, --endpoint-deny-cidrs,
	// --endpoint-allow-hosts, --endpoint-deny-hosts), merged with a
	// blueprint's ValidateBSLSpec args.endpoints. Zero: the defaults only.
	Endpoints endpoint.Policy
	// UncheckedCredentialProviders are the storage location providers
	// without a credential parser whose credentials and config the admin
	// lets through unchecked (nac --unchecked-credential-providers).
	UncheckedCredentialProviders []string
	// Resolver resolves endpoint host names (nil: net.DefaultResolver).
	Resolver endpoint.Resolver
	// Protected are the namespaces no NonAdminRestore maps into (nac
	// --protected-namespaces, --protected-namespace-selector; nil Names:
	// DefaultProtectedNamespaces). The OADP namespace always is.
	Protected Protected
	// Requesters tell who asked for a NonAdminRestore (cmd/nac: the
	// signer of its webhook's records; zero: no one is known, and the
	// tenant role alone bounds every restore). NewRegistry sets Review.
	Requesters Requesters
	// Quotas finds a namespace's quota for SyncScheduleRuns, which pauses
	// a schedule whose next run would pass it (nil: schedules are never
	// paused for a quota; BlueprintQuotas in cmd/nac).
	Quotas QuotaSource
}

// NewRegistry returns the registry of every phase function, bound to o, each run
// with c's clients guarded for its operation (engine.NewGuardedRegistry,
// with VeleroReferences for what the Velero objects they write name). It
// returns an error only if two functions share a name or an exception is
// malformed (programming errors).
func NewRegistry(c Clients, o Options) (*engine.Registry, error) {
	t := tools{recorder: c.Recorder, queue: c.Queue, turns: c.Turns, recent: newRecentCreates(), serving: &serving{}, quotas: o.Quotas,
		store: newStoreClient(o.Endpoints, o.Resolver), locations: c.Locations}
	rules := restoreRules{tenantRole: o.TenantRole, adminOwned: o.AdminOwned, requesters: o.Requesters, protect: o.Protected, precheck: o.RestorePrecheck}
	if rules.protect.Names == nil {
		rules.protect.Names = DefaultProtectedNamespaces
	}
	if rules.requesters.Signer != nil && c.Client != nil {
		// A review writes nothing: sent with the manager's client, outside
		// the safety rule's guard.
		rules.requesters.Review = func(ctx context.Context, r *authorizationv1.SubjectAccessReview) error {
			return c.Client.Create(ctx, r)
		}
	}
	if rules.tenantRole == "" {
		rules.tenantRole = restorepolicy.DefaultTenantRole
	}
	if rules.adminOwned == nil {
		rules.adminOwned = restorepolicy.DefaultAdminOwned
	}
	content := newContentRules(o)
	var settings Settings = noSettings{}
	if o.Settings != nil {
		settings = o.Settings
	}
	return engine.NewGuardedRegistry(c.Client, c.APIReader, VeleroReferences{},
		bind(&ValidateBackupSpec{settings: settings}),
		bind(&CreateVeleroBackup{tools: t}),
		bind(&WaitFor{tools: t}),
		bind(&SyncStatus{}),
		bind(&MarkDeleting{}),
		bind(&CreateDeleteBackupRequest{tools: t}),
		bind(&DeleteObjects{tools: t}),
		bind(&ValidateRestoreSpec{settings: settings, restoreRules: rules}),
		bind(&CreateVeleroRestore{restoreRules: rules, tools: t, validate: ValidateRestoreSpec{settings: settings, restoreRules: rules}}),
		bind(&CheckRestoreItems{restoreRules: rules, tools: t, enabled: o.RestorePrecheck}),
		bind(&PreviewRestore{restoreRules: rules, tools: t}),
		bind(&DeleteRestoresOfBackup{}),
		bind(&ValidateBSLSpec{settings: settings, content: content}),
		bind(&RequestApproval{tools: t, required: o.RequireApprovalForBSL, settings: settings}),
		bind(&CopySecret{tools: t, content: content}),
		bind(&CreateVeleroBSL{tools: t}),
		bind(&DeleteBackupsUsingBSL{}),
		bind(&AdoptVeleroBackup{}),
		bind(&Notify{tools: t}),
		bind(&LimitActiveOperations{ledger: newAdmissions()}),
		bind(&WaitForTurn{tools: t, defaultMax: o.MaxBackupsInVelero, defaultRestoreMax: o.MaxRestoresInVelero}),
		bind(&ValidateDownloadRequest{requireTenantLocation: o.RequireTenantLocationForDownloads}),
		bind(&CreateDownloadRequest{tools: t}),
		bind(&VerifyBackupContents{tools: t}),
		bind(&ValidateScheduleSpec{settings: settings}),
		bind(&CreateVeleroSchedule{tools: t, maxInVelero: o.MaxBackupsInVelero}),
		bind(&SyncScheduleRuns{tools: t, maxInVelero: o.MaxBackupsInVelero}),
		bind(&TestRestore{restoreRules: rules, tools: t, starting: &sync.Mutex{}}),
		bind(&RemoveRestoreTest{}),
		bind(&MeasureUsage{tools: t}),
		bind(&CheckQuota{tools: t}),
	)
}
