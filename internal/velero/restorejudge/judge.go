// Package restorejudge is the one place that decides whether a restore
// made for a tenant may create (or update) an item: nacflow's answer, for
// non-admin restores (OADP's Non-Admin Controller), to Velero restoring
// with its own cluster-admin rights (vmware-tanzu/velero#18, "restore as
// the user").
//
// A Judge is built once per restore, from what nacflow decided the restore
// on: the tenant role's rules and the other settings of
// restorepolicy.Policy (namespace, target namespace, existingResourcePolicy,
// admin-owned resources, whether the backup is kept in a bucket a tenant
// writes), the verified requester (and, through the Lookup, the
// SubjectAccessReview cache asked as them), the tenant's or the admin's
// resource modifiers (tenantmodifiers), and the record of the items nacflow
// verified (itemdigest). The controller's pre-check (phases
// CheckRestoreItems), its preview (phases PreviewRestore) and Velero's
// restore item action (cmd/velero-plugin-nacflow) each build one from
// their own inputs and ask it about every item: a change of what is
// allowed lands here, for all three.
//
// The package reads the cluster only through the Lookup it is given.
package restorejudge

import (
	"context"
	"errors"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

// Config is what a Judge is built from, once per restore.
type Config struct {
	// Namespace is the tenant's namespace: the backup's, the
	// NonAdminRestore's, the only one items may come from.
	Namespace string
	// Spec is the restore's spec as Velero gets it (the accepted
	// restoreSpec, or the Velero Restore's): its namespaceMapping of
	// Namespace is the target namespace, its existingResourcePolicy
	// whether existing items are updated. Nil: neither.
	Spec *velerov1.RestoreSpec
	// Requester is the verified requester, as whom every item is checked
	// too (nil: none known; the tenant role alone bounds the restore).
	Requester *authenticationv1.UserInfo
	// Bound are the rules of the tenant role, TenantRole names it (for
	// messages).
	Bound      []rbacv1.PolicyRule
	TenantRole string
	// AdminOwned are resources never updated and created only where
	// absent.
	AdminOwned []schema.GroupResource
	// BucketOnly: the backup is kept in a bucket a tenant writes
	// (restorepolicy.TenantBucket).
	BucketOnly bool
	// Modifiers are the resource modifiers Velero applies to every item
	// after the restore item actions (the tenant's, as its requester asked
	// for them, or the admin's enforced ones); nil: none.
	Modifiers *tenantmodifiers.Modifiers
	// Verified, when set, is the record of the items nacflow verified of
	// the backup (itemdigest, Record): only items whose digest it holds
	// are restored. NeedsRecord says when a restore must have one.
	Verified *itemdigest.Set
	// Backup names the Velero Backup, for messages.
	Backup string
	// Lookup reads the cluster (and asks SubjectAccessReviews as the
	// requester, through the restore's restorepolicy.Reviews).
	Lookup restorepolicy.Lookup
}

// policy is restorepolicy's Policy of c.
func (c Config) policy() restorepolicy.Policy {
	p := restorepolicy.Policy{Namespace: c.Namespace, Requester: c.Requester, Bound: c.Bound, AdminOwned: c.AdminOwned, BucketOnly: c.BucketOnly}
	if c.Spec != nil {
		p.Target = c.Spec.NamespaceMapping[c.Namespace]
		p.UpdateExisting = c.Spec.ExistingResourcePolicy == velerov1.PolicyTypeUpdate
	}
	return p
}

// Judge decides on the items of one restore made for a tenant. It is safe
// for concurrent use as far as its Lookup is.
type Judge struct {
	c      Config
	policy restorepolicy.Policy
}

// ErrNoRecord is New's refusal of a restore that needs a record of
// verified items (NeedsRecord) and has none.
var ErrNoRecord = errors.New("a restore from a bucket a tenant writes, checked as its requester, restores only the items nacflow verified, and no record of them is given")

// NeedsRecord reports whether a restore needs nacflow's record of the
// items it verified: its backup is kept in a bucket a tenant writes
// (another editor of the namespace may have written it after nacflow
// verified it) and it is checked as its requester, who may hold more
// rights than the bucket's writers. Without a requester the tenant role
// alone bounds the restore (docs/security.md, "Not closed yet").
func NeedsRecord(bucketOnly bool, requester *authenticationv1.UserInfo) bool {
	return bucketOnly && requester != nil
}

// New returns the Judge of c. Errors: ErrNoRecord when c needs a record
// of verified items (NeedsRecord) and has none (deny by default: callers
// refuse such a restore earlier, naming why, and this keeps a caller that
// forgot from restoring unverified items); a nil Lookup.
func New(c Config) (*Judge, error) {
	if c.Lookup == nil {
		return nil, errors.New("restorejudge: no Lookup")
	}
	if c.Verified == nil && NeedsRecord(c.BucketOnly, c.Requester) {
		return nil, ErrNoRecord
	}
	return &Judge{c: c, policy: c.policy()}, nil
}

// Item is one item of the restore, as a caller has it.
type Item struct {
	// Resource is the item's group-resource (its place in the backup, or
	// its kind mapped by the API server).
	Resource schema.GroupResource
	// Object is the item as Velero is about to create it, before the
	// restore's resource modifiers.
	Object map[string]any
	// FromBackup is the item as the backup holds it (Velero's
	// ItemFromBackup), nil when unknown: restorepolicy.Item.FromBackup,
	// and what its digest is taken from when Raw is nil.
	FromBackup map[string]any
	// Raw, when set, is the item's file as the backup's tarball holds it:
	// its digest is taken from these bytes (itemdigest.Of).
	Raw []byte
}

// Verdict is a Judge's answer on one item.
type Verdict struct {
	// Allowed: Velero may restore the item.
	Allowed bool
	// Reason says why not (empty when allowed): one sentence naming the
	// rule.
	Reason string
	// Unverified: refused because the item is not one nacflow verified
	// (Reason says how).
	Unverified bool
	// Resource and Object are the item as Velero will create it, after
	// the resource modifiers (nil Object when the modifiers refuse it).
	Resource schema.GroupResource
	Object   map[string]any
}

// Item decides on it: first whether it is one nacflow verified (with a
// record), then the resource modifiers (tenantmodifiers.AsCreated: an
// item they would give another kind, name or namespace is refused), then
// restorepolicy.Decide on the item as Velero will create it. Errors: the
// Lookup's (the caller fails closed).
func (j *Judge) Item(ctx context.Context, it Item) (Verdict, error) {
	if why := j.Unverified(it); why != "" {
		return Verdict{Reason: why, Unverified: true, Resource: it.Resource}, nil
	}
	obj, gr, why := tenantmodifiers.AsCreated(j.c.Modifiers, it.Object, it.Resource)
	if why != "" {
		return Verdict{Reason: why, Resource: gr}, nil
	}
	d, err := restorepolicy.Decide(ctx, j.policy, restorepolicy.Item{Resource: gr, Object: obj, FromBackup: it.FromBackup}, j.c.Lookup)
	if err != nil {
		return Verdict{}, err
	}
	return Verdict{Allowed: d.Allowed, Reason: d.Reason, Resource: gr, Object: obj}, nil
}

// Unverified returns why it is not an item nacflow verified ("" when it
// is, or when the restore has no record): its digest (of Raw, else of
// FromBackup) is not in the record, or there is nothing to take one from.
// Raw that Velero could not decode (itemdigest.Of fails) is no item Velero
// restores: not refused as changed.
func (j *Judge) Unverified(it Item) string {
	if j.c.Verified == nil {
		return ""
	}
	var d itemdigest.Digest
	var err error
	switch {
	case it.Raw != nil:
		if d, err = itemdigest.Of(it.Raw); err != nil {
			// Velero decodes no such item and restores nothing of it:
			// restorepolicy judges what there is.
			return ""
		}
	case it.FromBackup != nil:
		d, err = itemdigest.OfObject(it.FromBackup)
	default:
		return fmt.Sprintf("Velero gave no item from the backup to check against what nacflow verified of backup %s", j.c.Backup)
	}
	if err != nil || !j.c.Verified.Contains(d) {
		return fmt.Sprintf("changed since nacflow verified backup %s", j.c.Backup)
	}
	return ""
}

// CopyChanged reports whether raw, one copy of an item file as the
// backup's tarball holds it (the plain or a preferred-version one: Velero
// may restore either), is not one nacflow verified. A copy that is no
// JSON Velero could decode is no item Velero restores: not changed.
// Without a record nothing is changed.
func (j *Judge) CopyChanged(raw []byte) bool {
	if j.c.Verified == nil {
		return false
	}
	d, err := itemdigest.Of(raw)
	return err == nil && !j.c.Verified.Contains(d)
}

// Status decides whether Velero may write back the status the backup
// holds for the item gr/name as created (restorepolicy.MayWriteStatus).
// Errors: the Lookup's.
func (j *Judge) Status(ctx context.Context, gr schema.GroupResource, name string) (restorepolicy.Decision, error) {
	return restorepolicy.MayWriteStatus(ctx, j.policy, gr, name, j.c.Lookup)
}

// RequesterMay asks whether the requester may make request a, as Decide
// asks it (the restore's SubjectAccessReview cache). Errors: no requester
// is known; the Lookup's.
func (j *Judge) RequesterMay(ctx context.Context, a authorizationv1.ResourceAttributes) (bool, error) {
	if j.policy.Requester == nil {
		return false, errors.New("no requester is known")
	}
	return j.c.Lookup.May(ctx, *j.policy.Requester, a)
}

// Namespace is the tenant's namespace, the only one items come from.
func (j *Judge) Namespace() string { return j.policy.Namespace }

// Target is the namespace items are restored into (the namespaceMapping
// of Namespace; Namespace when there is none).
func (j *Judge) Target() string {
	if j.policy.Target == "" {
		return j.policy.Namespace
	}
	return j.policy.Target
}

// Mapped reports whether the restore maps the namespace into another.
func (j *Judge) Mapped() bool { return j.Target() != j.policy.Namespace }

// Requester is the verified requester (nil: none known).
func (j *Judge) Requester() *authenticationv1.UserInfo { return j.policy.Requester }

// UpdateExisting is existingResourcePolicy: update.
func (j *Judge) UpdateExisting() bool { return j.policy.UpdateExisting }

// BucketOnly reports whether the backup is kept in a bucket a tenant
// writes (restorepolicy.Policy.BucketOnly).
func (j *Judge) BucketOnly() bool { return j.policy.BucketOnly }

// Verifies reports whether the Judge restores only verified items.
func (j *Judge) Verifies() bool { return j.c.Verified != nil }

// Within says in words what bounds the restore, for messages: "ClusterRole
// <role> allows in namespace <target>", then " and <requester> may do
// there", ", as the resource modifiers make them" and ", each as nacflow
// verified it" as they apply.
func (j *Judge) Within() string {
	s := fmt.Sprintf("ClusterRole %s allows in namespace %s", j.c.TenantRole, j.Target())
	if u := j.policy.Requester; u != nil {
		s += " and " + u.Username + " may do there"
	}
	if j.c.Modifiers != nil {
		s += ", as the resource modifiers make them"
	}
	if j.c.Verified != nil {
		s += ", each as nacflow verified it"
	}
	return s
}
