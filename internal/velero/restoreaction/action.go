// Package restoreaction is velero-plugin-nacflow's RestoreItemAction
// (registered with Velero as restorepolicy.PluginName by
// cmd/velero-plugin-nacflow): it keeps a restore nacflow made for a tenant
// (OADP's Non-Admin Controller) within what the tenant could do itself,
// deciding on every item Velero is about to restore with the restore's
// restorejudge.Judge, the judge the controller's pre-check and preview
// build too.
package restoreaction

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/restorejudge"
	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

// clusterClient is what the action reads the cluster with: a
// controller-runtime client (its RESTMapper maps an item's kind to its
// resource).
type clusterClient = client.Client

// lookupTimeout bounds the API reads of one item.
const lookupTimeout = 30 * time.Second

// Action is the RestoreItemAction. Velero runs one plugin process per
// restore (and ends it after), so what it caches (the client, each
// restore's judge and the reads it is built from) lives about as long as
// one restore; the caches are keyed by restore UID anyway.
type Action struct {
	log       logrus.FieldLogger
	newClient func() (clusterClient, error)

	mu      sync.Mutex
	client  clusterClient
	bounds  map[string][]rbacv1.PolicyRule // "<restore UID>/<role>"
	buckets map[types.UID]bool             // restore UID → restorepolicy.Policy.BucketOnly
	reviews map[types.UID]*restorepolicy.Reviews
	// modifiers are each restore's resource modifiers.
	modifiers map[types.UID]*tenantmodifiers.Modifiers
	// verifiedRecords are each restore's record of the items nacflow
	// verified (verified.go).
	verifiedRecords map[types.UID]*verifiedRecord
	// judges are each restore's judge, keyed by judgeKey.
	judges map[string]*restorejudge.Judge
}

func New(log logrus.FieldLogger, newClient func() (client.Client, error)) *Action {
	return &Action{log: log, newClient: newClient, bounds: map[string][]rbacv1.PolicyRule{}, buckets: map[types.UID]bool{},
		reviews: map[types.UID]*restorepolicy.Reviews{}, modifiers: map[types.UID]*tenantmodifiers.Modifiers{}, verifiedRecords: map[types.UID]*verifiedRecord{},
		judges: map[string]*restorejudge.Judge{}}
}

// AppliesTo implements Velero's RestoreItemAction: every resource (the zero
// selector).
func (a *Action) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{}, nil
}

// Execute implements Velero's RestoreItemAction. A restore without nacflow's
// label openshift.io/oadp-nar-origin-nacuuid gets its item back unchanged.
// For a restore nacflow made, the item is decided by the restore's
// restorejudge.Judge (judgeOf: the namespace of the annotation
// openshift.io/oadp-nar-origin-namespace, the tenant role and admin-owned
// resources of nacflow's annotations (defaults when absent), the requester
// of restorepolicy.RequesterAnnotation (when present: every item is also
// checked as that user, by SubjectAccessReview), the target namespace of
// the restore's namespaceMapping, the restore's existingResourcePolicy, its
// resource modifiers and its record of verified items (verified.go)); an
// item refused comes back with SkipRestore and a log line naming it and
// why (in the restore's log, which the tenant can download). Any error (the
// cluster unreachable, the tenant role missing, an item of an unknown kind)
// is returned: Velero then leaves the item out and counts an error, so the
// action fails closed.
func (a *Action) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	out := velero.NewRestoreItemActionExecuteOutput(in.Item)
	r := in.Restore
	if r == nil || r.Labels[v1alpha1.NarOriginNACUUIDLabel] == "" {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	j, c, err := a.judgeOf(ctx, r)
	if err != nil {
		return nil, err
	}
	obj := in.Item.UnstructuredContent()
	it := restorejudge.Item{Object: obj, FromBackup: fromBackup(in.ItemFromBackup)}
	// Restore only what nacflow verified: asked before anything else of
	// the item, whatever its kind.
	if why := j.Unverified(it); why != "" {
		a.log.WithFields(logrus.Fields{"kind": str(obj["kind"]), "name": name(obj), "tenantNamespace": j.Namespace()}).
			Warnf("nacflow: not restoring %s %s: %s", str(obj["kind"]), name(obj), why)
		return out.WithoutRestore(), nil
	}
	gvk := schema.FromAPIVersionAndKind(str(obj["apiVersion"]), str(obj["kind"]))
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("restore %s: mapping kind %s of item %s to a resource: %w", r.Name, gvk, name(obj), err)
	}
	it.Resource = mapping.Resource.GroupResource()
	it.Object, out = a.provisioned(j, it.Resource, obj, out)
	v, err := j.Item(ctx, it)
	if err != nil {
		return nil, fmt.Errorf("restore %s: deciding on %s %s: %w", r.Name, it.Resource, name(obj), err)
	}
	if !v.Allowed {
		a.log.WithFields(logrus.Fields{"resource": v.Resource.String(), "name": name(obj), "tenantNamespace": j.Namespace()}).
			Warnf("nacflow: not restoring %s %s: %s", v.Resource, name(obj), v.Reason)
		return out.WithoutRestore(), nil
	}
	if !backupHasStatus(in.ItemFromBackup) {
		return out, nil
	}
	return a.statusDecided(ctx, j, r, v.Resource, it.Object, out)
}

// provisioned returns claim obj given a new volume, and out with it, when
// the restore's backup is kept in a bucket a tenant writes: no
// PersistentVolume of such a backup is restored, so its claims get new
// volumes, which a file-system or data mover restore fills. Any other item
// comes back as it is.
func (a *Action) provisioned(j *restorejudge.Judge, gr schema.GroupResource, obj map[string]any,
	out *velero.RestoreItemActionExecuteOutput) (map[string]any, *velero.RestoreItemActionExecuteOutput) {
	if !j.BucketOnly() || gr != (schema.GroupResource{Resource: "persistentvolumeclaims"}) {
		return obj, out
	}
	provisioned, changed := restorepolicy.ProvisionClaim(obj)
	if !changed {
		return obj, out
	}
	a.log.WithFields(logrus.Fields{"resource": gr.String(), "name": name(obj), "tenantNamespace": j.Namespace()}).
		Infof("nacflow: claim %s gets a new volume: the backup is in a bucket the tenant writes, and its volumes are restored only from data in the bucket", name(obj))
	return provisioned, velero.NewRestoreItemActionExecuteOutput(&unstructured.Unstructured{Object: provisioned})
}

// statusDecided returns out, the allowed item gr obj, with its status
// decided. Velero strips an item's status before any restore item action,
// and after creating the item writes back the status the backup holds,
// with its own rights, when the item's StatusRestoreAnnotation (as Velero
// reads the created item: "true"/"false", case and spaces aside) or,
// without it, the restore's restoreStatus asks for it. So the status is
// decided on the item from the backup (unknown: it may have one), whatever
// the item asks now: when the tenant role (and the requester) may not
// update the status subresource, the annotation is set to "false", which
// wins over both. The item itself is restored (the pre-check's verdict is
// the plugin's): tenant modifiers may not touch the status or the
// annotation (tenantmodifiers.Parse). Errors: the judge's, an item without
// metadata.
func (a *Action) statusDecided(ctx context.Context, j *restorejudge.Judge, r *velerov1.Restore, gr schema.GroupResource, obj map[string]any,
	out *velero.RestoreItemActionExecuteOutput) (*velero.RestoreItemActionExecuteOutput, error) {
	itemMeta, _ := nestedMap(obj, "metadata")
	status, err := j.Status(ctx, gr, str(itemMeta["name"]))
	if err != nil {
		return nil, fmt.Errorf("restore %s: deciding on the status of %s %s: %w", r.Name, gr, name(obj), err)
	}
	if status.Allowed {
		return out, nil
	}
	u := out.UpdatedItem.DeepCopyObject().(runtime.Unstructured)
	content := u.UnstructuredContent()
	md, ok := content["metadata"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("restore %s: item %s has no metadata", r.Name, name(obj))
	}
	an, _ := md["annotations"].(map[string]any)
	if an == nil {
		an = map[string]any{}
		md["annotations"] = an
	}
	an[restorepolicy.StatusRestoreAnnotation] = "false"
	a.log.WithFields(logrus.Fields{"resource": gr.String(), "name": name(obj), "tenantNamespace": j.Namespace()}).
		Warnf("nacflow: not restoring the status of %s %s: %s", gr, name(obj), status.Reason)
	return velero.NewRestoreItemActionExecuteOutput(u), nil
}

// fromBackup is the content of Velero's ItemFromBackup (nil when Velero
// gave none).
func fromBackup(u runtime.Unstructured) map[string]any {
	if u == nil {
		return nil
	}
	if p, ok := u.(*unstructured.Unstructured); ok && p == nil {
		return nil
	}
	return u.UnstructuredContent()
}

// settings are what nacflow's annotations on a Velero Restore say its
// judge is built with.
type settings struct {
	// ns is the tenant's namespace.
	ns   string
	role string
	// adminOwned are the admin-owned resources.
	adminOwned []schema.GroupResource
	// user is the requester (nil: none).
	user *authenticationv1.UserInfo
}

// settingsOf reads restore r's settings: the namespace (required), the
// tenant role and admin-owned resources (defaults when absent) and the
// requester. Errors: a missing namespace, a malformed annotation.
func settingsOf(r *velerov1.Restore) (settings, error) {
	s := settings{ns: r.Annotations[v1alpha1.NarOriginNamespaceAnnotation], role: r.Annotations[restorepolicy.TenantRoleAnnotation], adminOwned: restorepolicy.DefaultAdminOwned}
	if s.ns == "" {
		return s, fmt.Errorf("restore %s is a tenant's (label %s) but has no annotation %s: not restoring its items", r.Name, v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NarOriginNamespaceAnnotation)
	}
	if s.role == "" {
		s.role = restorepolicy.DefaultTenantRole
	}
	if v, ok := r.Annotations[restorepolicy.AdminOwnedAnnotation]; ok {
		var err error
		if s.adminOwned, err = restorepolicy.ParseAdminOwned(v); err != nil {
			return s, fmt.Errorf("restore %s: annotation %s: %w", r.Name, restorepolicy.AdminOwnedAnnotation, err)
		}
	}
	if raw, ok := r.Annotations[restorepolicy.RequesterAnnotation]; ok {
		s.user = &authenticationv1.UserInfo{}
		if err := json.Unmarshal([]byte(raw), s.user); err != nil || s.user.Username == "" {
			return s, fmt.Errorf("restore %s: annotation %s is not a user (%v): not restoring its items", r.Name, restorepolicy.RequesterAnnotation, err)
		}
	}
	return s, nil
}

// judgeKey keys restore r's judge: its UID and what the judge is built
// from (nacflow never changes them on a Restore; a judge is never used for
// other settings).
func judgeKey(r *velerov1.Restore) string {
	b, _ := json.Marshal(struct {
		UID         types.UID
		Annotations map[string]string
		Mapping     map[string]string
		Policy      velerov1.PolicyType
		Modifier    *corev1.TypedLocalObjectReference
		Backup      string
	}{r.UID, r.Annotations, r.Spec.NamespaceMapping, r.Spec.ExistingResourcePolicy, r.Spec.ResourceModifier, r.Spec.BackupName})
	return string(b)
}

// judgeOf returns restore r's judge, built once (settingsOf, the tenant
// role's rules, whether the backup is in a tenant's bucket, the record of
// verified items, the resource modifiers, the SubjectAccessReview cache),
// and the client. Errors: settingsOf's, the connection's, and those of
// each read (the refusals of verified.go among them), not kept.
func (a *Action) judgeOf(ctx context.Context, r *velerov1.Restore) (*restorejudge.Judge, clusterClient, error) {
	s, err := settingsOf(r)
	if err != nil {
		return nil, nil, err
	}
	c, err := a.kube()
	if err != nil {
		return nil, nil, err
	}
	key := judgeKey(r)
	a.mu.Lock()
	j, ok := a.judges[key]
	a.mu.Unlock()
	if ok {
		return j, c, nil
	}
	cfg := restorejudge.Config{Namespace: s.ns, Spec: &r.Spec, Requester: s.user, TenantRole: s.role, AdminOwned: s.adminOwned,
		Backup: r.Spec.BackupName, Lookup: kubeLookup{c: c, reviews: a.reviewsOf(r.UID, c)}}
	if cfg.Bound, err = a.bound(ctx, c, string(r.UID), s.role); err != nil {
		return nil, nil, err
	}
	if cfg.BucketOnly, err = a.bucketOnly(ctx, c, r); err != nil {
		return nil, nil, err
	}
	if cfg.Verified, err = a.verified(ctx, c, r, restorejudge.NeedsRecord(cfg.BucketOnly, s.user)); err != nil {
		return nil, nil, err
	}
	if cfg.Modifiers, err = a.modifiersOf(ctx, c, r); err != nil {
		return nil, nil, err
	}
	if j, err = restorejudge.New(cfg); err != nil {
		return nil, nil, fmt.Errorf("restore %s: %w", r.Name, err)
	}
	a.mu.Lock()
	a.judges[key] = j
	a.mu.Unlock()
	return j, c, nil
}

// backupHasStatus reports whether the item from the backup has a status
// (Velero's test: the field is present, whatever its value); deny by
// default, true when the item from the backup is unknown.
func backupHasStatus(fromBackup runtime.Unstructured) bool {
	if fromBackup == nil {
		return true
	}
	if u, ok := fromBackup.(*unstructured.Unstructured); ok && u == nil {
		return true
	}
	_, has := fromBackup.UnstructuredContent()["status"]
	return has
}

// nestedMap returns the map at path of obj (nil when absent or not a map).
func nestedMap(obj map[string]any, path ...string) (map[string]any, bool) {
	cur := obj
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// modifiersOf returns restore r's resource modifiers (nil when it has
// none), parsed once per restore from the ConfigMap of its namespace that
// spec.resourceModifier names, as Velero reads it. Errors: the ConfigMap
// unreadable or not Velero's format (Velero refuses such a restore too).
func (a *Action) modifiersOf(ctx context.Context, c clusterClient, r *velerov1.Restore) (*tenantmodifiers.Modifiers, error) {
	ref := r.Spec.ResourceModifier
	if ref == nil || !strings.EqualFold(ref.Kind, "configmap") {
		return nil, nil
	}
	a.mu.Lock()
	m, ok := a.modifiers[r.UID]
	a.mu.Unlock()
	if ok {
		return m, nil
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: ref.Name}, cm); err != nil {
		return nil, fmt.Errorf("restore %s: reading its resource modifiers, ConfigMap %s/%s: %w", r.Name, r.Namespace, ref.Name, err)
	}
	// nacflow's copy of a tenant's modifiers (labelled with the
	// NonAdminRestore's NACUUID, in the OADP namespace where tenants write
	// nothing) is read with nacflow's rules for a tenant's modifiers, as
	// the pre-check read it; the admin's enforced ones as Velero reads them.
	parse := tenantmodifiers.ParseAsVelero
	if cm.Labels[v1alpha1.NarOriginNACUUIDLabel] != "" {
		parse = tenantmodifiers.Parse
		// What the requester asked for, recorded at admission: a copy
		// with other content is not applied (deny by default: a copy
		// without the digest on its Restore neither).
		if want := r.Annotations[v1alpha1.RestoreModifiersDigestAnnotation]; want == "" || requester.ConfigMapDigest(cm) != want {
			return nil, fmt.Errorf("restore %s: its resource modifiers, ConfigMap %s/%s, are not what its requester asked for (annotation %s): not restoring its items",
				r.Name, cm.Namespace, cm.Name, v1alpha1.RestoreModifiersDigestAnnotation)
		}
	}
	m, err := parse(cm)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", r.Name, err)
	}
	a.mu.Lock()
	a.modifiers[r.UID] = m
	a.mu.Unlock()
	return m, nil
}

// reviewsOf returns the SubjectAccessReview cache of restore uid.
func (a *Action) reviewsOf(uid types.UID, c clusterClient) *restorepolicy.Reviews {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.reviews[uid]
	if !ok {
		r = &restorepolicy.Reviews{Create: func(ctx context.Context, sar *authorizationv1.SubjectAccessReview) error { return c.Create(ctx, sar) }}
		a.reviews[uid] = r
	}
	return r
}

// kube returns the client, creating it on first use.
func (a *Action) kube() (clusterClient, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil {
		c, err := a.newClient()
		if err != nil {
			return nil, fmt.Errorf("nacflow restore plugin: connecting to the cluster: %w", err)
		}
		a.client = c
	}
	return a.client, nil
}

// bound returns the rules of the ClusterRole role, read once per restore.
// A missing role is an error: nothing is restored without a bound.
func (a *Action) bound(ctx context.Context, c clusterClient, restoreUID, role string) ([]rbacv1.PolicyRule, error) {
	key := restoreUID + "/" + role
	a.mu.Lock()
	rules, ok := a.bounds[key]
	a.mu.Unlock()
	if ok {
		return rules, nil
	}
	cr := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, types.NamespacedName{Name: role}, cr); err != nil {
		return nil, fmt.Errorf("reading the tenant role, ClusterRole %s: %w", role, err)
	}
	a.mu.Lock()
	a.bounds[key] = cr.Rules
	a.mu.Unlock()
	return cr.Rules, nil
}

// bucketOnly reports whether restore r's backup is kept in a bucket a
// tenant writes (restorepolicy.TenantBucket of the location the Velero
// Backup names), read once per restore. Deny by default: a Backup that
// cannot be found or names no location counts as a tenant's. Errors are
// the API server's.
func (a *Action) bucketOnly(ctx context.Context, c clusterClient, r *velerov1.Restore) (bool, error) {
	a.mu.Lock()
	only, ok := a.buckets[r.UID]
	a.mu.Unlock()
	if ok {
		return only, nil
	}
	// Velero's kinds are read unstructured: the client's scheme is
	// client-go's alone.
	read := func(kind, name string) (*unstructured.Unstructured, bool, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(velerov1.SchemeGroupVersion.WithKind(kind))
		switch err := c.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, u); {
		case err == nil:
			return u, true, nil
		case apierrors.IsNotFound(err):
			return nil, false, nil
		default:
			return nil, false, fmt.Errorf("restore %s: reading Velero %s %s/%s: %w", r.Name, kind, r.Namespace, name, err)
		}
	}
	only = true
	backup, found, err := read("Backup", r.Spec.BackupName)
	if err != nil {
		return false, err
	}
	// Pinned by nacflow to the Backup it checked: one made again under
	// that name since is not restored from.
	if uid := r.Annotations[v1alpha1.RestoreBackupUIDAnnotation]; uid != "" && (!found || string(backup.GetUID()) != uid) {
		return false, fmt.Errorf("restore %s: Velero Backup %s is not the one nacflow checked (UID %s): not restoring its items", r.Name, r.Spec.BackupName, uid)
	}
	var location string
	if found {
		location, _, _ = unstructured.NestedString(backup.Object, "spec", "storageLocation")
	}
	if location != "" {
		bsl, found, err := read("BackupStorageLocation", location)
		if err != nil {
			return false, err
		}
		var labels map[string]string
		if found {
			labels = bsl.GetLabels()
		}
		only = restorepolicy.TenantBucket(labels, found)
	}
	a.mu.Lock()
	a.buckets[r.UID] = only
	a.mu.Unlock()
	return only, nil
}

// kubeLookup implements restorepolicy.Lookup with the cluster client.
type kubeLookup struct {
	c clusterClient
	// reviews asks as the restore's requester (nil: none known).
	reviews *restorepolicy.Reviews
}

// May asks the API server with the restore's Reviews.
func (l kubeLookup) May(ctx context.Context, user authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
	if l.reviews == nil {
		return false, fmt.Errorf("no SubjectAccessReviews without a requester")
	}
	return l.reviews.May(ctx, user, a)
}

// Exists reads the object's metadata only.
func (l kubeLookup) Exists(ctx context.Context, gr schema.GroupResource, ns, name string) (bool, error) {
	gvk, err := l.c.RESTMapper().KindFor(gr.WithVersion(""))
	if err != nil {
		return false, fmt.Errorf("mapping %s to a kind: %w", gr, err)
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	switch err := l.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m); {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("reading %s %s/%s: %w", gr, ns, name, err)
	}
}

// RoleRules reads a Role or ClusterRole.
func (l kubeLookup) RoleRules(ctx context.Context, kind, ns, name string) ([]rbacv1.PolicyRule, bool, error) {
	var obj client.Object
	var rules *[]rbacv1.PolicyRule
	switch kind {
	case "Role":
		r := &rbacv1.Role{}
		obj, rules = r, &r.Rules
	case "ClusterRole":
		r := &rbacv1.ClusterRole{}
		obj, rules, ns = r, &r.Rules, ""
	default:
		return nil, false, fmt.Errorf("kind %q is neither Role nor ClusterRole", kind)
	}
	switch err := l.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); {
	case err == nil:
		return *rules, true, nil
	case apierrors.IsNotFound(err):
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// name is the item's namespace/name for messages.
func name(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	if ns := str(md["namespace"]); ns != "" {
		return ns + "/" + str(md["name"])
	}
	return str(md["name"])
}
