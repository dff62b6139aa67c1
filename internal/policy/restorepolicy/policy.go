// Package restorepolicy decides which items of a restore made for a tenant
// Velero may create: only what the tenant could create (or update, with
// existingResourcePolicy: update) itself in its namespace. It answers
// vmware-tanzu/velero#18 ("restore as the user") for non-admin restores.
//
// Velero restores with its own service account, a cluster admin: every check
// the API server would make of the tenant (RBAC, the escalation check on
// Roles and RoleBindings) is skipped. This package puts those checks back.
//
// The tenant is known by an upper bound rather than by name: the rules of one
// ClusterRole, by default Kubernetes' aggregated "admin" (Config.TenantRole),
// which is what nacflow ever grants a namespace owner. Whoever made the
// NonAdminRestore, the restore never does more than a namespace admin could.
//
// The decision is pure: Decide reads the cluster only through a Lookup, so
// the Velero plugin (cmd/velero-plugin-nacflow, on the items Velero actually
// restores) and tests share it. Items are tenant input (the tenant writes
// the bucket of its own location): any field may be missing, null, of the
// wrong type or huge; Decide never panics and refuses what it cannot read.
package restorepolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// PluginName is the name nacflow's RestoreItemAction registers with Velero
// (<DNS subdomain>/<name>, Velero's plugin naming rule).
const PluginName = "nacflow.io/restore-as-tenant"

// DefaultTenantRole is the ClusterRole whose rules bound what a restore
// made for a tenant may do: Kubernetes' aggregated namespace "admin".
const DefaultTenantRole = "admin"

// Annotations nacflow writes on the Velero Restores it makes (Velero
// Restores live in the OADP namespace, where tenants have no rights, so they
// are the admin's word). The plugin reads its settings from them, so that
// the controller's flags reach it without a configuration of their own.
const (
	// TenantRoleAnnotation names the ClusterRole bounding the tenant.
	TenantRoleAnnotation = "nacflow.io/restore-tenant-role"
	// RequesterAnnotation holds the user who asked for the restore, as the
	// API server authenticated them and nacflow's webhook recorded them
	// (internal/policy/requester): the JSON of an
	// authentication/v1 UserInfo. Absent: no requester is known, and the
	// tenant role alone bounds the restore.
	RequesterAnnotation = "nacflow.io/restore-requester"
	// AdminOwnedAnnotation lists the admin-owned resources, comma-separated
	// group-resources (resourcequotas, networkpolicies.networking.k8s.io).
	AdminOwnedAnnotation = "nacflow.io/restore-admin-owned-resources"
)

// DefaultAdminOwned are the namespaced resources an admin sets in tenant
// namespaces: a restore never updates them and creates them only where
// absent (and only if the tenant role allows create at all).
// NetworkPolicies are not among them by default: the admin and edit roles
// let namespace owners write them, so they are commonly the tenant's own; an
// admin who writes NetworkPolicies into tenant namespaces adds
// networkpolicies.networking.k8s.io.
var DefaultAdminOwned = []schema.GroupResource{{Resource: "resourcequotas"}, {Resource: "limitranges"}}

// Policy is what Decide applies to every item of one restore.
type Policy struct {
	// Namespace is the tenant's namespace, the only one items may come
	// from (the backup's and the NonAdminRestore's).
	Namespace string
	// Target is the namespace the items are restored into (the restore's
	// namespaceMapping of Namespace); empty: Namespace.
	Target string
	// Requester, when set, is the user who asked for the restore: every
	// item must be one they may create (and patch, with UpdateExisting) in
	// Target themselves, asked of the API server's authorizer through
	// Lookup.May, besides the tenant role's bound. Nil: the tenant role
	// alone bounds the restore.
	Requester *authenticationv1.UserInfo
	// Bound are the rules of the tenant role (Config.TenantRole as read from
	// the cluster: for an aggregated ClusterRole, its aggregated rules).
	Bound []rbacv1.PolicyRule
	// UpdateExisting is existingResourcePolicy: update: Velero patches an
	// item that exists to match the backup.
	UpdateExisting bool
	// AdminOwned are resources never updated and created only where absent.
	AdminOwned []schema.GroupResource
	// BucketOnly: the backup is kept in a bucket the tenant writes (a
	// location of its own, TenantBucket), so its volumes are restored only
	// from data in that bucket (file-system backup, data mover): no
	// PersistentVolume is restored, whatever snapshot the bucket names.
	BucketOnly bool
}

// Item is one item of the restore.
type Item struct {
	// Resource is the item's group-resource (e.g. rolebindings.rbac.authorization.k8s.io).
	Resource schema.GroupResource
	// Object is the item as Velero is about to create it (the JSON of the
	// backup after Velero's own handling, e.g. a PV given a new volume).
	Object map[string]any
	// FromBackup is the item as the backup holds it, or nil when unknown. When
	// set, a PersistentVolume must have been given a new volume by Velero's
	// volume restore (its source differs from the backup's).
	FromBackup map[string]any
}

// Lookup reads the live cluster for Decide. Errors are passed on (Decide
// never guesses): a caller failing closed keeps the item out.
type Lookup interface {
	// Exists reports whether the object resource/namespace/name exists
	// (namespace "" for cluster-scoped resources).
	Exists(ctx context.Context, resource schema.GroupResource, namespace, name string) (bool, error)
	// RoleRules returns the rules of the Role namespace/name (kind "Role")
	// or of the ClusterRole name (kind "ClusterRole"), and false when it does
	// not exist.
	RoleRules(ctx context.Context, kind, namespace, name string) ([]rbacv1.PolicyRule, bool, error)
	// May reports whether user may make the request a (a
	// SubjectAccessReview's answer: RBAC and any other authorizer of the
	// API server).
	May(ctx context.Context, user authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error)
}

// Decision is Decide's verdict on one item.
type Decision struct {
	// Allowed: Velero may restore the item.
	Allowed bool
	// Reason says why an item is excluded (empty when allowed): one
	// sentence naming the rule, deterministic.
	Reason string
}

func allow() Decision { return Decision{Allowed: true} }

func deny(format string, a ...any) Decision {
	return Decision{Reason: fmt.Sprintf(format, a...)}
}

var (
	rbacGroup    = rbacv1.GroupName
	roles        = schema.GroupResource{Group: rbacGroup, Resource: "roles"}
	roleBindings = schema.GroupResource{Group: rbacGroup, Resource: "rolebindings"}
	pvs          = schema.GroupResource{Resource: "persistentvolumes"}
)

// maxRules bounds the rules read from one Role: Covers breaks each rule
// into one mini-rule per group, verb, resource and name, so a hostile Role
// could otherwise cost arbitrary time.
const maxRules = 1000

// maxBreakdown bounds the mini-rules of one Role (the product of its lists).
const maxBreakdown = 100000

// Decide applies p to item and returns whether Velero may restore it. Rules,
// in order:
//
//   - an item of a NAC kind (group oadp.openshift.io) or of Velero's
//     (velero.io, or a sub-group of either) is refused, whoever asks and
//     whatever the tenant role: a restore made for a tenant never creates a
//     NAC or Velero object (the pre-check, the preview and the plugin all
//     get the rule here);
//   - a cluster-scoped item is refused unless it is a PersistentVolume
//     (nacflow excludes every other cluster-scoped type from tenant
//     restores), which follows decidePV, and none when p.BucketOnly; a
//     namespaced item must come from p.Namespace, and is created in
//     p.Target (p.Namespace when empty);
//   - the tenant role must allow create on the item's group/resource and,
//     when p.UpdateExisting and the item exists, update and patch on it
//     (the verbs Velero's create and patch need, as the API server would
//     check them for the tenant);
//   - with p.Requester, the requester must be allowed the same (create
//     with no name: RBAC never lets a resourceNames rule allow a create;
//     patch with the item's name), asked of the API server (Lookup.May);
//   - an admin-owned resource (p.AdminOwned) that exists is never touched;
//   - a Role's rules must all be covered by the tenant role, unless it may
//     "escalate" roles; a RoleBinding's referenced Role or ClusterRole must
//     exist and its rules be covered by the tenant role, unless it may
//     "bind" that role: Kubernetes' escalation check (ConfirmNoEscalation
//     and BindingAuthorized in kubernetes/pkg/registry/rbac, with Covers
//     from k8s.io/component-helpers). With p.Requester, the same rule holds
//     for the requester: they may escalate (bind), or hold every rule,
//     each asked of the API server.
//
// Errors are the Lookup's only; a malformed item is a Decision, not an error.
func Decide(ctx context.Context, p Policy, item Item, lk Lookup) (Decision, error) {
	if nacOrVelero(item.Resource.Group) {
		return deny("%s is a NAC or Velero kind: a restore made for a tenant never creates a NAC or Velero object", item.Resource), nil
	}
	name, ok := str(item.Object, "metadata", "name")
	if !ok || name == "" {
		return deny("metadata.name is missing or not a string"), nil
	}
	ns, ok := str(item.Object, "metadata", "namespace")
	if !ok {
		return deny("metadata.namespace is not a string"), nil
	}
	if item.Resource == pvs {
		if p.BucketOnly {
			return deny("PersistentVolume %s: the backup is in a bucket the tenant writes, whose volume snapshot list could name any snapshot; volumes of such a backup are restored only from data in the bucket (file-system backup, data mover)", name), nil
		}
		return decidePV(ctx, p, item, name, lk)
	}
	if ns == "" {
		return deny("%s is cluster-scoped: a restore made for a tenant creates no cluster-scoped object but through Velero's volume restore", item.Resource), nil
	}
	if ns != p.Namespace {
		return deny("metadata.namespace %q is not the restore's namespace %q", ns, p.Namespace), nil
	}
	target := p.target()
	if !may(p.Bound, item.Resource, "create", "") {
		return deny("the tenant role does not allow create on %s", item.Resource), nil
	}
	if d, err := p.requesterMay(ctx, lk, "create", item.Resource, target, ""); d != nil || err != nil {
		return deref(d), err
	}
	exists, err := lk.Exists(ctx, item.Resource, target, name)
	if err != nil {
		return Decision{}, err
	}
	if exists && slices.Contains(p.AdminOwned, item.Resource) {
		return deny("%s is admin-owned and %s exists: a restore never changes it", item.Resource, name), nil
	}
	if exists && p.UpdateExisting {
		for _, verb := range []string{"update", "patch"} {
			if !may(p.Bound, item.Resource, verb, name) {
				return deny("existingResourcePolicy update: the tenant role does not allow %s on %s %s", verb, item.Resource, name), nil
			}
		}
		if d, err := p.requesterMay(ctx, lk, "patch", item.Resource, target, name); d != nil || err != nil {
			return deref(d), err
		}
	}
	switch item.Resource {
	case roles:
		return decideRole(ctx, p, item, name, lk)
	case roleBindings:
		return decideRoleBinding(ctx, p, item, name, lk)
	}
	return allow(), nil
}

// veleroGroup is Velero's API group (velero.io/v1, v2alpha1).
const veleroGroup = "velero.io"

// nacOrVelero reports whether group is NAC's (oadp.openshift.io), Velero's
// (velero.io) or a sub-group of either.
func nacOrVelero(group string) bool {
	g := strings.ToLower(group)
	for _, own := range []string{v1alpha1.GroupVersion.Group, veleroGroup} {
		if g == own || strings.HasSuffix(g, "."+own) {
			return true
		}
	}
	return false
}

func (p Policy) target() string {
	if p.Target != "" {
		return p.Target
	}
	return p.Namespace
}

func deref(d *Decision) Decision {
	if d == nil {
		return Decision{}
	}
	return *d
}

// requesterMay asks whether p.Requester may verb gr (subresource after a
// "/") in namespace ns (name "" for any): nil when they may or no
// requester is known, else the refusal naming the missing right.
func (p Policy) requesterMay(ctx context.Context, lk Lookup, verb string, gr schema.GroupResource, ns, name string) (*Decision, error) {
	if p.Requester == nil {
		return nil, nil
	}
	resource, sub, _ := strings.Cut(gr.Resource, "/")
	ok, err := lk.May(ctx, *p.Requester, authorizationv1.ResourceAttributes{
		Namespace: ns, Verb: verb, Group: gr.Group, Resource: resource, Subresource: sub, Name: name})
	if err != nil || ok {
		return nil, err
	}
	what := schema.GroupResource{Group: gr.Group, Resource: resource}.String()
	if sub != "" {
		what += "/" + sub
	}
	if name != "" {
		what += " " + name
	}
	d := deny("%s may not %s %s in namespace %s", p.Requester.Username, verb, what, ns)
	return &d, nil
}

// MaxRequesterChecks bounds the rules of one Role or bound role checked one
// by one as the requester (each a SubjectAccessReview, cached): a role
// with more group/verb/resource/name combinations is restored only for a
// requester who may escalate (bind) it.
const MaxRequesterChecks = 3000

// requesterHolds asks whether p.Requester holds every rule of rules in
// namespace ns (Kubernetes' ConfirmNoEscalation, as the requester): nil
// when they do or no requester is known, else a refusal naming the first
// rule they lack. rules are broken down into one group, verb, resource and
// name each (k8s.io/component-helpers BreakdownRule) and asked one by one.
func (p Policy) requesterHolds(ctx context.Context, lk Lookup, what string, rules []rbacv1.PolicyRule, ns string) (*Decision, error) {
	if p.Requester == nil {
		return nil, nil
	}
	var mini []rbacv1.PolicyRule
	for _, r := range rules {
		mini = append(mini, rbacvalidation.BreakdownRule(r)...)
		if len(mini) > MaxRequesterChecks {
			d := deny("%s has more than %d rules to check as %s, who may not escalate it", what, MaxRequesterChecks, p.Requester.Username)
			return &d, nil
		}
	}
	for _, r := range mini {
		if len(r.NonResourceURLs) > 0 {
			// Not asked one by one (a SubjectAccessReview of a URL is
			// cluster-wide); deny by default.
			d := deny("%s grants %s on non-resource URL %s, which is not checked as %s, who may not escalate it", what, r.Verbs[0], r.NonResourceURLs[0], p.Requester.Username)
			return &d, nil
		}
		name := ""
		if len(r.ResourceNames) > 0 {
			name = r.ResourceNames[0]
		}
		gr := schema.GroupResource{Group: r.APIGroups[0], Resource: r.Resources[0]}
		d, err := p.requesterMay(ctx, lk, r.Verbs[0], gr, ns, name)
		if err != nil {
			return nil, err
		}
		if d != nil {
			d2 := deny("%s grants %s, which %s does not hold in namespace %s", what, describe([]rbacv1.PolicyRule{r}), p.Requester.Username, ns)
			return &d2, nil
		}
	}
	return nil, nil
}

// StatusRestoreAnnotation is Velero's object-level switch for restoring an
// item's status (ObjectStatusRestoreAnnotationKey, Velero 1.18
// pkg/restore): "true" restores the status the backup holds, with Velero's
// rights, whatever the restore's restoreStatus says; "false" never does.
// Velero reads it from the item as restore item actions return it.
const StatusRestoreAnnotation = "velero.io/restore-status"

// MayWriteStatus reports whether p's tenant role (and p.Requester, when
// known, asked through lk) allows update of the status subresource of gr's
// object name in p's target namespace: the write Velero makes when it
// restores an item's status. A namespace admin may not write the status of
// a Service (a LoadBalancer ingress address kube-proxy routes), an Ingress
// (an address external-dns publishes) or a Pod (Running with a podIP it
// never had), so a tenant's backup must not either. The Decision's reason
// names the missing right. Errors are lk's.
func MayWriteStatus(ctx context.Context, p Policy, gr schema.GroupResource, name string, lk Lookup) (Decision, error) {
	status := schema.GroupResource{Group: gr.Group, Resource: gr.Resource + "/status"}
	if !may(p.Bound, status, "update", name) {
		return deny("the tenant role does not allow update on %s/status", gr), nil
	}
	d, err := p.requesterMay(ctx, lk, "update", status, p.target(), name)
	if d != nil || err != nil {
		return deref(d), err
	}
	return allow(), nil
}

// may reports whether rules allow verb on resource (on the object name, when
// not empty: rules limited to resourceNames count only for named requests,
// as the RBAC authorizer does; create carries no name).
func may(rules []rbacv1.PolicyRule, gr schema.GroupResource, verb, name string) bool {
	r := rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: []string{verb}}
	if name != "" {
		r.ResourceNames = []string{name}
	}
	ok, _ := rbacvalidation.Covers(rules, []rbacv1.PolicyRule{r})
	return ok
}

// decideRole applies the escalation rule to a Role: for the tenant role,
// then for the requester.
func decideRole(ctx context.Context, p Policy, item Item, name string, lk Lookup) (Decision, error) {
	rules, err := policyRules(item.Object)
	if err != nil {
		return deny("Role %s: %v", name, err), nil
	}
	if !may(p.Bound, roles, "escalate", name) {
		if ok, missing := rbacvalidation.Covers(p.Bound, rules); !ok {
			return deny("Role %s grants what the tenant role does not hold: %s", name, describe(missing)), nil
		}
	}
	if p.Requester == nil {
		return allow(), nil
	}
	if d, err := p.requesterMay(ctx, lk, "escalate", roles, p.target(), name); err != nil {
		return Decision{}, err
	} else if d == nil {
		return allow(), nil
	}
	d, err := p.requesterHolds(ctx, lk, "Role "+name, rules, p.target())
	if d != nil || err != nil {
		return deref(d), err
	}
	return allow(), nil
}

// decideRoleBinding applies the escalation rule to a RoleBinding: for the
// tenant role, then for the requester.
func decideRoleBinding(ctx context.Context, p Policy, item Item, name string, lk Lookup) (Decision, error) {
	kind, _ := str(item.Object, "roleRef", "kind")
	group, _ := str(item.Object, "roleRef", "apiGroup")
	ref, _ := str(item.Object, "roleRef", "name")
	if group != rbacGroup || (kind != "Role" && kind != "ClusterRole") || ref == "" {
		return deny("RoleBinding %s: roleRef must name a Role or ClusterRole of %s", name, rbacGroup), nil
	}
	refResource := schema.GroupResource{Group: rbacGroup, Resource: "clusterroles"}
	if kind == "Role" {
		refResource = roles
	}
	boundMay := may(p.Bound, refResource, "bind", ref)
	requesterMay := true
	if p.Requester != nil {
		d, err := p.requesterMay(ctx, lk, "bind", refResource, p.target(), ref)
		if err != nil {
			return Decision{}, err
		}
		requesterMay = d == nil
	}
	if boundMay && requesterMay {
		return allow(), nil
	}
	// Without bind, Kubernetes' escalation check: the bound role's rules
	// must all be held.
	rules, found, err := lk.RoleRules(ctx, kind, p.target(), ref)
	if err != nil {
		return Decision{}, err
	}
	if !found {
		return deny("RoleBinding %s binds %s %s, which does not exist: Kubernetes refuses such a binding to anyone who may not bind it", name, kind, ref), nil
	}
	if !boundMay {
		if ok, missing := rbacvalidation.Covers(p.Bound, rules); !ok {
			return deny("RoleBinding %s binds %s %s, which grants what the tenant role does not hold: %s", name, kind, ref, describe(missing)), nil
		}
	}
	if !requesterMay {
		d, err := p.requesterHolds(ctx, lk, fmt.Sprintf("RoleBinding %s binds %s %s, which", name, kind, ref), rules, p.target())
		if d != nil || err != nil {
			return deref(d), err
		}
	}
	return allow(), nil
}

// policyRules reads obj's "rules" strictly as RBAC PolicyRules, bounded.
func policyRules(obj map[string]any) ([]rbacv1.PolicyRule, error) {
	raw, ok := obj["rules"]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("rules is not a list")
	}
	if len(list) > maxRules {
		return nil, fmt.Errorf("%d rules, more than %d", len(list), maxRules)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	var rules []rbacv1.PolicyRule
	if err := json.Unmarshal(b, &rules); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	n := 0
	for _, r := range rules {
		// BreakdownRule's product: groups*verbs*resources*names (names or
		// one), plus nonResourceURLs*verbs.
		per := max(len(r.APIGroups), 1) * max(len(r.Verbs), 1) * max(len(r.Resources), 1) * max(len(r.ResourceNames), 1)
		n += per + len(r.NonResourceURLs)*max(len(r.Verbs), 1)
		if n > maxBreakdown {
			return nil, fmt.Errorf("rules too large to compare (more than %d group/verb/resource/name combinations)", maxBreakdown)
		}
	}
	return rules, nil
}

// describe names the first few uncovered mini-rules, sorted.
func describe(rules []rbacv1.PolicyRule) string {
	var s []string
	for _, r := range rules {
		switch {
		case len(r.NonResourceURLs) > 0:
			s = append(s, fmt.Sprintf("%s %s", strings.Join(r.Verbs, ","), strings.Join(r.NonResourceURLs, ",")))
		default:
			gr := schema.GroupResource{Group: strings.Join(r.APIGroups, ","), Resource: strings.Join(r.Resources, ",")}.String()
			if len(r.ResourceNames) > 0 {
				gr += "/" + strings.Join(r.ResourceNames, ",")
			}
			s = append(s, fmt.Sprintf("%s %s", strings.Join(r.Verbs, ","), gr))
		}
	}
	sort.Strings(s)
	s = slices.Compact(s)
	const shown = 3
	if len(s) > shown {
		return fmt.Sprintf("%s and %d more", strings.Join(s[:shown], "; "), len(s)-shown)
	}
	return strings.Join(s, "; ")
}

// AllowedPVSources are the PersistentVolume sources a restore made for a
// tenant may create: CSI and the cloud block disks Velero's volume
// snapshotters restore (velero-plugin-for-aws: awsElasticBlockStore,
// -for-gcp: gcePersistentDisk, -for-microsoft-azure: azureDisk; the
// community OpenStack and vSphere plugins: cinder, vsphereVolume). Every
// other source, node-local or host ones (hostPath, local), network mounts
// (nfs, iscsi, fc, rbd, cephfs, glusterfs, ...), flexVolume and any source
// unknown to this list, is refused.
var AllowedPVSources = []string{"csi", "awsElasticBlockStore", "gcePersistentDisk", "azureDisk", "cinder", "vsphereVolume"}

// pvSpecFields are PersistentVolumeSpec fields that are not volume sources
// (k8s.io/api/core/v1 PersistentVolumeSpec).
var pvSpecFields = []string{"capacity", "accessModes", "claimRef", "persistentVolumeReclaimPolicy",
	"storageClassName", "mountOptions", "volumeMode", "nodeAffinity", "volumeAttributesClassName"}

// decidePV: a PersistentVolume is created only as Velero's volume restore
// makes it: it must not exist (a restore never updates a cluster-scoped
// object), have exactly one volume source from AllowedPVSources, be claimed
// (if at all) from p.Namespace or p.Target, and, when item.FromBackup is known, carry a
// source Velero changed (a new volume from the backup's snapshot): a spec
// copied from the tarball could name any volume, the tenant's or not.
func decidePV(ctx context.Context, p Policy, item Item, name string, lk Lookup) (Decision, error) {
	spec, ok := item.Object["spec"].(map[string]any)
	if !ok {
		return deny("PersistentVolume %s: spec is missing or not an object", name), nil
	}
	var sources []string
	for k, v := range spec {
		if slices.Contains(pvSpecFields, k) || v == nil {
			continue
		}
		sources = append(sources, k)
	}
	sort.Strings(sources)
	if len(sources) != 1 {
		return deny("PersistentVolume %s: spec must have exactly one volume source, has %d (%s)", name, len(sources), strings.Join(sources, ", ")), nil
	}
	if !slices.Contains(AllowedPVSources, sources[0]) {
		return deny("PersistentVolume %s: volume source spec.%s is not one a restore made for a tenant may create (allowed: %s)", name, sources[0], strings.Join(AllowedPVSources, ", ")), nil
	}
	if ref, present := spec["claimRef"]; present && ref != nil {
		m, ok := ref.(map[string]any)
		if !ok {
			return deny("PersistentVolume %s: spec.claimRef is not an object", name), nil
		}
		// Velero remaps the claim's namespace with the restore's
		// namespaceMapping (remapClaimRefNS) before restore item actions.
		if ns, _ := m["namespace"].(string); ns != p.Namespace && ns != p.target() {
			return deny("PersistentVolume %s: spec.claimRef.namespace %q is not the restore's namespace %q", name, m["namespace"], p.target()), nil
		}
	}
	if item.FromBackup != nil {
		old, _ := item.FromBackup["spec"].(map[string]any)
		if old != nil && reflect.DeepEqual(old[sources[0]], spec[sources[0]]) {
			return deny("PersistentVolume %s: spec.%s is the backup's own, not a volume Velero restored from a snapshot: it could name any volume", name, sources[0]), nil
		}
	}
	exists, err := lk.Exists(ctx, pvs, "", name)
	if err != nil {
		return Decision{}, err
	}
	if exists {
		return deny("PersistentVolume %s exists: a restore made for a tenant never changes a cluster-scoped object", name), nil
	}
	return allow(), nil
}

// str reads a string field; ok is false when the field is present but not
// a string (absent or null reads as "", true).
func str(obj map[string]any, path ...string) (string, bool) {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", cur == nil
		}
		cur = m[k]
	}
	if cur == nil {
		return "", true
	}
	s, ok := cur.(string)
	return s, ok
}

// ParseAdminOwned parses a comma-separated list of group-resources
// ("resourcequotas,networkpolicies.networking.k8s.io"), as the flag
// --admin-owned-resources and AdminOwnedAnnotation give it. Empty entries
// are skipped; an entry with spaces or uppercase letters is an error.
func ParseAdminOwned(s string) ([]schema.GroupResource, error) {
	var out []schema.GroupResource
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.ToLower(e) != e || strings.ContainsAny(e, " /") {
			return nil, fmt.Errorf("admin-owned resource %q: want a lower-case resource[.group], e.g. networkpolicies.networking.k8s.io", e)
		}
		out = append(out, schema.ParseGroupResource(e))
	}
	return out, nil
}

// FormatAdminOwned is the inverse of ParseAdminOwned.
func FormatAdminOwned(grs []schema.GroupResource) string {
	s := make([]string, len(grs))
	for i, gr := range grs {
		s[i] = gr.String()
	}
	return strings.Join(s, ",")
}

// TenantBucket reports whether a backup kept on a Velero
// BackupStorageLocation is in a bucket a tenant writes, given the location's
// labels and whether it was found: it carries OADP's NABSL origin label
// (v1alpha1.NabslOriginNACUUIDLabel: nacflow's and OADP NAC's tenant
// locations), or it does not exist (deny by default: a location nobody can
// show to be the admin's counts as a tenant's). Everything in such a bucket
// — the tarball, the volume snapshot list, the volume infos — is the
// tenant's to rewrite.
func TenantBucket(labels map[string]string, found bool) bool {
	_, tenant := labels[v1alpha1.NabslOriginNACUUIDLabel]
	return tenant || !found
}

// Annotations of a claim that record its binding to a volume
// (k8s.io/component-helpers/storage/volume): a claim kept with them but
// without spec.volumeName would read as having lost its volume.
var claimBindingAnnotations = []string{"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller"}

// ProvisionClaim returns a copy of the PersistentVolumeClaim obj made ready
// for a new volume, as Velero makes a claim whose volume it re-provisions
// (Velero 1.18 pkg/restore, pvsToProvision): without spec.volumeName and
// the binding annotations, so that its storage class provisions it and a
// file-system or data mover restore fills it. changed is false (and obj
// returned as it is) when there was nothing to remove. A malformed field is
// left as it is: the API server refuses the claim then.
func ProvisionClaim(obj map[string]any) (out map[string]any, changed bool) {
	spec, _ := obj["spec"].(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	an, _ := md["annotations"].(map[string]any)
	_, named := spec["volumeName"]
	bound := slices.ContainsFunc(claimBindingAnnotations, func(k string) bool { _, ok := an[k]; return ok })
	if !named && !bound {
		return obj, false
	}
	out = maps.Clone(obj)
	if named {
		spec = maps.Clone(spec)
		delete(spec, "volumeName")
		out["spec"] = spec
	}
	if bound {
		md, an = maps.Clone(md), maps.Clone(an)
		for _, k := range claimBindingAnnotations {
			delete(an, k)
		}
		md["annotations"] = an
		out["metadata"] = md
	}
	return out, true
}
