package main

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
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

// clusterClient is what the action reads the cluster with: a
// controller-runtime client (its RESTMapper maps an item's kind to its
// resource).
type clusterClient = client.Client

// lookupTimeout bounds the API reads of one item.
const lookupTimeout = 30 * time.Second

// action is the RestoreItemAction. Velero runs one plugin process per
// restore (and ends it after), so what it caches (the client, the tenant
// role's rules) lives about as long as one restore; the cache is keyed by
// restore UID and role anyway.
type action struct {
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
}

func newAction(log logrus.FieldLogger, newClient func() (clusterClient, error)) *action {
	return &action{log: log, newClient: newClient, bounds: map[string][]rbacv1.PolicyRule{}, buckets: map[types.UID]bool{},
		reviews: map[types.UID]*restorepolicy.Reviews{}, modifiers: map[types.UID]*tenantmodifiers.Modifiers{}, verifiedRecords: map[types.UID]*verifiedRecord{}}
}

// AppliesTo implements Velero's RestoreItemAction: every resource (the zero
// selector).
func (a *action) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{}, nil
}

// Execute implements Velero's RestoreItemAction. A restore without nacflow's
// label openshift.io/oadp-nar-origin-nacuuid gets its item back unchanged.
// For a restore nacflow made, the item is decided by restorepolicy.Decide
// with the namespace of the annotation openshift.io/oadp-nar-origin-namespace,
// the tenant role and admin-owned resources of nacflow's annotations
// (defaults when absent), the requester of restorepolicy.RequesterAnnotation
// (when present: every item is also checked as that user, by
// SubjectAccessReview), the target namespace of the restore's
// namespaceMapping and the restore's existingResourcePolicy; an item
// refused comes back with SkipRestore and a log line naming it and why (in
// the restore's log, which the tenant can download). Any error (the cluster
// unreachable, the tenant role missing, an item of an unknown kind) is
// returned: Velero then leaves the item out and counts an error, so the
// action fails closed.
func (a *action) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	out := velero.NewRestoreItemActionExecuteOutput(in.Item)
	r := in.Restore
	if r == nil || r.Labels[v1alpha1.NarOriginNACUUIDLabel] == "" {
		return out, nil
	}
	ns := r.Annotations[v1alpha1.NarOriginNamespaceAnnotation]
	if ns == "" {
		return nil, fmt.Errorf("restore %s is a tenant's (label %s) but has no annotation %s: not restoring its items", r.Name, v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NarOriginNamespaceAnnotation)
	}
	role := r.Annotations[restorepolicy.TenantRoleAnnotation]
	if role == "" {
		role = restorepolicy.DefaultTenantRole
	}
	adminOwned := restorepolicy.DefaultAdminOwned
	if s, ok := r.Annotations[restorepolicy.AdminOwnedAnnotation]; ok {
		var err error
		if adminOwned, err = restorepolicy.ParseAdminOwned(s); err != nil {
			return nil, fmt.Errorf("restore %s: annotation %s: %w", r.Name, restorepolicy.AdminOwnedAnnotation, err)
		}
	}
	var user *authenticationv1.UserInfo
	if raw, ok := r.Annotations[restorepolicy.RequesterAnnotation]; ok {
		user = &authenticationv1.UserInfo{}
		if err := json.Unmarshal([]byte(raw), user); err != nil || user.Username == "" {
			return nil, fmt.Errorf("restore %s: annotation %s is not a user (%v): not restoring its items", r.Name, restorepolicy.RequesterAnnotation, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	c, err := a.kube()
	if err != nil {
		return nil, err
	}
	bound, err := a.bound(ctx, c, string(r.UID), role)
	if err != nil {
		return nil, err
	}
	bucketOnly, err := a.bucketOnly(ctx, c, r)
	if err != nil {
		return nil, err
	}
	if left, err := a.verified(ctx, c, in, bucketOnly); left != nil || err != nil { // restore only what nacflow verified (verified.go)
		return left, err
	}
	obj := in.Item.UnstructuredContent()
	gvk := schema.FromAPIVersionAndKind(str(obj["apiVersion"]), str(obj["kind"]))
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("restore %s: mapping kind %s of item %s to a resource: %w", r.Name, gvk, name(obj), err)
	}
	gr := mapping.Resource.GroupResource()
	if bucketOnly && gr == (schema.GroupResource{Resource: "persistentvolumeclaims"}) {
		// No PersistentVolume of this backup is restored: its claims get new
		// volumes, which a file-system or data mover restore fills.
		if provisioned, changed := restorepolicy.ProvisionClaim(obj); changed {
			a.log.WithFields(logrus.Fields{"resource": gr.String(), "name": name(obj), "tenantNamespace": ns}).
				Infof("nacflow: claim %s gets a new volume: the backup is in a bucket the tenant writes, and its volumes are restored only from data in the bucket", name(obj))
			obj = provisioned
			out = velero.NewRestoreItemActionExecuteOutput(&unstructured.Unstructured{Object: obj})
		}
	}
	// Velero applies the restore's resource modifiers after every restore
	// item action: the item is judged as they will make it (never as
	// another kind, name or namespace: AsCreated refuses such a change).
	mods, err := a.modifiersOf(ctx, c, r)
	if err != nil {
		return nil, err
	}
	checked, cgr, why := tenantmodifiers.AsCreated(mods, obj, gr)
	if why != "" {
		a.log.WithFields(logrus.Fields{"resource": gr.String(), "name": name(obj), "tenantNamespace": ns}).
			Warnf("nacflow: not restoring %s %s: %s", gr, name(obj), why)
		return out.WithoutRestore(), nil
	}
	item := restorepolicy.Item{Resource: cgr, Object: checked}
	if in.ItemFromBackup != nil {
		item.FromBackup = in.ItemFromBackup.UnstructuredContent()
	}
	p := restorepolicy.Policy{Namespace: ns, Target: r.Spec.NamespaceMapping[ns], Requester: user, Bound: bound, AdminOwned: adminOwned,
		UpdateExisting: r.Spec.ExistingResourcePolicy == velerov1.PolicyTypeUpdate, BucketOnly: bucketOnly}
	lk := kubeLookup{c: c, reviews: a.reviewsOf(r.UID, c)}
	d, err := restorepolicy.Decide(ctx, p, item, lk)
	if err != nil {
		return nil, fmt.Errorf("restore %s: deciding on %s %s: %w", r.Name, item.Resource, name(obj), err)
	}
	if !d.Allowed {
		a.log.WithFields(logrus.Fields{"resource": item.Resource.String(), "name": name(obj), "tenantNamespace": ns}).
			Warnf("nacflow: not restoring %s %s: %s", item.Resource, name(obj), d.Reason)
		return out.WithoutRestore(), nil
	}
	// Velero strips an item's status before any restore item action, and
	// after creating the item writes back the status the backup holds, with
	// its own rights, when the item's StatusRestoreAnnotation (as Velero
	// reads the created item: "true"/"false", case and spaces aside) or,
	// without it, the restore's restoreStatus asks for it. So the status is
	// decided on the item from the backup (unknown: it may have one),
	// whatever the item asks now: when the tenant role (and the requester)
	// may not update the status subresource, the annotation is set to
	// "false", which wins over both. The item itself is restored (the
	// pre-check's verdict is the plugin's): tenant modifiers may not touch
	// the status or the annotation (tenantmodifiers.Parse).
	if !backupHasStatus(in.ItemFromBackup) {
		return out, nil
	}
	itemMeta, _ := nestedMap(obj, "metadata")
	status, err := restorepolicy.MayWriteStatus(ctx, p, item.Resource, str(itemMeta["name"]), lk)
	if err != nil {
		return nil, fmt.Errorf("restore %s: deciding on the status of %s %s: %w", r.Name, item.Resource, name(obj), err)
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
	a.log.WithFields(logrus.Fields{"resource": item.Resource.String(), "name": name(obj), "tenantNamespace": ns}).
		Warnf("nacflow: not restoring the status of %s %s: %s", item.Resource, name(obj), status.Reason)
	return velero.NewRestoreItemActionExecuteOutput(u), nil
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
func (a *action) modifiersOf(ctx context.Context, c clusterClient, r *velerov1.Restore) (*tenantmodifiers.Modifiers, error) {
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
func (a *action) reviewsOf(uid types.UID, c clusterClient) *restorepolicy.Reviews {
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
func (a *action) kube() (clusterClient, error) {
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
func (a *action) bound(ctx context.Context, c clusterClient, restoreUID, role string) ([]rbacv1.PolicyRule, error) {
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
func (a *action) bucketOnly(ctx context.Context, c clusterClient, r *velerov1.Restore) (bool, error) {
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

// newKubeClient connects with kubeconfig, else $KUBECONFIG, else in-cluster.
func newKubeClient(kubeconfig string) (clusterClient, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "velero-plugin-nacflow"
	// client-go's default (5/s) would spend a minute on the
	// SubjectAccessReviews of one RoleBinding to admin checked as the
	// requester (one per rule of the role, each asked once per restore).
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
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
