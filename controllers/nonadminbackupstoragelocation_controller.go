package controllers

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/dpa"
)

// bslKind is the NonAdminBackupStorageLocation kind's part of its
// reconciler: it runs the nonadminbackupstoragelocation blueprint for each
// location (seed design non_admin_backupstoragelocation.md, OADP's approval
// flow) and computes the revision its create action runs for.
type bslKind struct {
	Deps
	// requireApproval is --require-approval-for-bsl, used when settings is
	// nil.
	requireApproval bool
	// settings, when set, resolves requireApprovalForBSL (the flag given on
	// the command line, else OADP's DataProtectionApplication); a change of
	// the DPA re-runs every location within the credential-check period.
	settings *dpa.Source
	// period is how often a location looks again at its credential
	// Secret's version, so that a rotation reaches the copy without
	// watching Secrets (--credential-check-period).
	period time.Duration
	// endpointRevision, when set, fingerprints what a location's endpoint
	// host names resolve to now (phases.EndpointRevision; cmd wires it). It
	// is part of the revision, looked up at most once per period per
	// location, so a name that comes to resolve elsewhere after validation
	// re-runs the endpoint rules.
	endpointRevision func(ctx context.Context, spec *velerov1.BackupStorageLocationSpec) string

	adminStorage adminStorage
	endpoints    endpointRevisions
}

// A location adopts (OADP NAC's), has its Velero BSL mirrored after each run
// of create, runs create again when its revision changes (a rotated
// credential, a DataProtectionApplication edit: revision) and is looked at
// again within the credential-check period (DefaultCredentialCheckPeriod
// when 0), waiting or not.
func init() {
	registerReconciler[*v1alpha1.NonAdminBackupStorageLocation](func(d Deps, s *Shared) Reconciler {
		k := &bslKind{Deps: d, requireApproval: s.RequireApprovalForBSL, settings: s.Settings,
			period: cmp.Or(max(s.CredentialCheckPeriod, 0), DefaultCredentialCheckPeriod), endpointRevision: s.EndpointRevision}
		return newNACReconciler(d, kindHooks[*v1alpha1.NonAdminBackupStorageLocation]{
			action: func(n *v1alpha1.NonAdminBackupStorageLocation) string { return finalizeOr(n, v1alpha1.ActionCreate) },
			refs:   bslRefs, afterRun: k.afterRun, watches: k.watches,
		}, kindPolicy[*v1alpha1.NonAdminBackupStorageLocation]{adopts: adoptsYounger[*v1alpha1.NonAdminBackupStorageLocation],
			mirror: "BackupStorageLocation", mirrorAfter: []string{v1alpha1.ActionCreate}, revision: k.revision, recheck: k.period})
	})
}

// endpointRevisions remembers each location's endpoint fingerprint for up
// to a period, so that reconciles do not resolve names each time.
type endpointRevisions struct {
	mu   sync.Mutex
	seen map[endpointKey]endpointSeen
}

type endpointKey struct {
	uid        types.UID
	generation int64
}

type endpointSeen struct {
	fingerprint string
	at          time.Time
}

// get returns n's fingerprint from compute, at most period old.
func (e *endpointRevisions) get(n *v1alpha1.NonAdminBackupStorageLocation, period time.Duration, compute func() string) string {
	key := endpointKey{n.UID, n.Generation}
	e.mu.Lock()
	if s, ok := e.seen[key]; ok && time.Since(s.at) < period {
		e.mu.Unlock()
		return s.fingerprint
	}
	e.mu.Unlock()
	fp := compute()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[endpointKey]endpointSeen{}
	}
	for k, s := range e.seen {
		if time.Since(s.at) >= period {
			delete(e.seen, k)
		}
	}
	e.seen[key] = endpointSeen{fp, time.Now()}
	return fp
}

// adminStorage fingerprints the storage of the admin's BackupStorageLocations
// in the OADP namespace (those nacflow did not make), read from the API
// server at most once per period: the manager's cache holds only
// NAC-labelled locations. It is part of every location's revision, so an
// admin location added, moved or removed re-runs every tenant location's
// create action — and its storage check — within a period: an admin
// location added later turns an overlapping tenant location BackingOff,
// never the admin's Unavailable.
type adminStorage struct {
	mu      sync.Mutex
	value   string
	fetched time.Time
}

// get returns the fingerprint, reading the locations again when the last
// read is older than period. Errors are the API server's.
func (a *adminStorage) get(ctx context.Context, r client.Reader, oadpNamespace string, period time.Duration) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.fetched.IsZero() && time.Since(a.fetched) < period {
		return a.value, nil
	}
	list := &velerov1.BackupStorageLocationList{}
	if err := r.List(ctx, list, client.InNamespace(oadpNamespace)); err != nil {
		return "", fmt.Errorf("listing BackupStorageLocations in %s: %w", oadpNamespace, err)
	}
	var where []string
	for i := range list.Items {
		if _, nac := list.Items[i].Labels[v1alpha1.NabslOriginNACUUIDLabel]; !nac {
			where = append(where, list.Items[i].Name+"="+v1alpha1.StorageOf(&list.Items[i].Spec).String())
		}
	}
	slices.Sort(where)
	sum := sha256.Sum256([]byte(strings.Join(where, "\n")))
	a.value, a.fetched = hex.EncodeToString(sum[:6]), time.Now()
	return a.value, nil
}

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackupstoragelocations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackupstoragelocations/status;nonadminbackupstoragelocations/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,namespace=openshift-adp,resources=nonadminbackupstoragelocationrequests,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups=oadp.openshift.io,namespace=openshift-adp,resources=nonadminbackupstoragelocationrequests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=backupstoragelocations,verbs=get;list;watch;create;update;patch;delete;deletecollection
// Tenant Secrets are only ever read one by one (the credential a location
// names); copies are written only in the OADP namespace.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",namespace=openshift-adp,resources=secrets,verbs=list;create;update;patch;delete;deletecollection

// bslRefs are a NonAdminBackupStorageLocation's: its Velero
// BackupStorageLocation.
func bslRefs(n *v1alpha1.NonAdminBackupStorageLocation) []statusRef {
	if v := n.Status.VeleroBackupStorageLocation; v != nil {
		return []statusRef{refTo[velerov1.BackupStorageLocation]("status.veleroBackupStorageLocation", &v.NACUUID, &v.Name, &v.Namespace)}
	}
	return nil
}

// DefaultCredentialCheckPeriod is --credential-check-period's default.
const DefaultCredentialCheckPeriod = time.Minute

// revision is what a create run is for: the spec's generation, the version
// of the credential Secret (read from the API server: no Secret cache), the
// admin's decision, the admin locations' storage (adminStorage) and what the
// location's endpoint host names resolve to (EndpointRevision, when set and
// the location names a host). Deleting runs are never restarted.
func (k *bslKind) revision(ctx context.Context, n *v1alpha1.NonAdminBackupStorageLocation) (string, error) {
	if !n.DeletionTimestamp.IsZero() {
		return "", nil
	}
	secretRV := "none"
	if spec := n.Spec.BackupStorageLocationSpec; spec != nil && spec.Credential != nil && spec.Credential.Name != "" {
		s := &corev1.Secret{}
		err := k.APIReader.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: spec.Credential.Name}, s)
		switch {
		case err == nil:
			secretRV = s.ResourceVersion
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("reading Secret %s/%s: %w", n.Namespace, spec.Credential.Name, err)
		}
	}
	required, settingsRev := k.requireApproval, "none"
	if k.settings != nil {
		var err error
		if required, _, err = k.settings.RequireApprovalForBSL(ctx); err != nil {
			return "", err
		}
		if settingsRev, err = k.settings.Revision(ctx); err != nil {
			return "", err
		}
	}
	decision := v1alpha1.ApprovalApprove
	if required {
		decision = v1alpha1.ApprovalPending
	}
	req := &v1alpha1.NonAdminBackupStorageLocationRequest{}
	// The request is the operation's own, named from the UID: never from
	// status.
	name := v1alpha1.OperationObjectName(n, v1alpha1.DerivedNACUUID(n))
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.OADPNamespace, Name: name}, req)
	switch {
	case err == nil && req.Spec.ApprovalDecision != "":
		decision = req.Spec.ApprovalDecision
	case err != nil && !apierrors.IsNotFound(err):
		return "", fmt.Errorf("reading NonAdminBackupStorageLocationRequest %s/%s: %w", k.OADPNamespace, name, err)
	}
	admin, err := k.adminStorage.get(ctx, k.APIReader, k.OADPNamespace, k.period)
	if err != nil {
		return "", err
	}
	rev := fmt.Sprintf("generation=%d,secret=%s,decision=%s,admin=%s,dpa=%s", n.Generation, secretRV, decision, admin, settingsRev)
	if spec := n.Spec.BackupStorageLocationSpec; k.endpointRevision != nil && spec != nil {
		if fp := k.endpoints.get(n, k.period, func() string { return k.endpointRevision(ctx, spec) }); fp != "" {
			rev += ",endpoints=" + fp
		}
	}
	return rev, nil
}

// afterRun, after each run of create of a location linked to its Velero
// BSL, counts its usage (countUsage).
func (k *bslKind) afterRun(ctx context.Context, n *v1alpha1.NonAdminBackupStorageLocation, run ran[*v1alpha1.NonAdminBackupStorageLocation]) (time.Duration, error) {
	if run.action != v1alpha1.ActionCreate || n.Status.VeleroBackupStorageLocation == nil {
		return 0, nil
	}
	return 0, k.countUsage(ctx, n)
}

// countUsage sets n's status.usage: what the NonAdminBackups of its
// namespace on it take (v1alpha1.UsageByLocation, from the cache), so that a
// tenant reads it where it reads its location. Errors: the list's.
func (k *bslKind) countUsage(ctx context.Context, n *v1alpha1.NonAdminBackupStorageLocation) error {
	nabs := &v1alpha1.NonAdminBackupList{}
	if err := k.Client.List(ctx, nabs, client.InNamespace(n.Namespace)); err != nil {
		return fmt.Errorf("listing the NonAdminBackups of %s: %w", n.Namespace, err)
	}
	u := v1alpha1.UsageByLocation(nabs.Items)[n.Name]
	if u == nil {
		u = &v1alpha1.StorageUsage{}
	}
	n.Status.Usage = u
	return nil
}

// watches: the locations' Velero BSLs and approval requests in the OADP
// namespace, mapped back by origin annotations. Secrets are not watched
// (least privilege): each location rechecks its credential's version every
// credential-check period.
func (k *bslKind) watches(_ ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	made := builder.WithPredicates(madeForKind[*v1alpha1.NonAdminBackupStorageLocation](k.OADPNamespace))
	return b.
		Watches(&velerov1.BackupStorageLocation{}, toOrigin[*v1alpha1.NonAdminBackupStorageLocation](), made).
		Watches(&v1alpha1.NonAdminBackupStorageLocationRequest{}, toOrigin[*v1alpha1.NonAdminBackupStorageLocation](), made), nil
}
