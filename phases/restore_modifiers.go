package phases

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/restorejudge"
	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

// The phases' side of a tenant restore's judge (internal/velero/restorejudge):
// what it is built from (the modifiers Velero applies, judgeRestore), the
// Lookup it reads the cluster with before any restore (precheckLookup),
// and the walk of a backup's contents that asks it about every item
// (walkContents). The pre-check and the preview share all three;
// velero-plugin-nacflow builds the same judge from the Velero Restore.

// restoreModifiers returns the resource modifiers Velero will apply to
// nar's items: the tenant's, as its requester's record holds them
// (requesterVerdict.recordedModifiers: the ConfigMap recorded at admission,
// unchanged since), else the admin's enforced ones (the accepted spec's,
// a ConfigMap of the OADP namespace: validation keeps no tenant's name
// there), nil when none. refusal is the tenant's modifiers' refusal.
// Errors: the API server's, and an admin's ConfigMap Velero could not read.
func restoreModifiers(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, who requesterVerdict) (m *tenantmodifiers.Modifiers, refusal, err error) {
	cm, m, refusal, err := who.recordedModifiers(ctx, op, nar)
	if err != nil || refusal != nil || cm != nil {
		return m, refusal, err
	}
	spec := nar.AcceptedRestoreSpec()
	if spec == nil || spec.ResourceModifier == nil || !strings.EqualFold(spec.ResourceModifier.Kind, "configmap") {
		return nil, nil, nil
	}
	admins := &corev1.ConfigMap{}
	if err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: spec.ResourceModifier.Name}, admins); err != nil {
		return nil, nil, fmt.Errorf("reading the enforced resource modifiers, ConfigMap %s/%s: %w", op.OADPNamespace, spec.ResourceModifier.Name, err)
	}
	m, err = tenantmodifiers.ParseAsVelero(admins)
	return m, nil, err
}

// restoreJudgement is a NonAdminRestore's restore judge
// (restorejudge.Judge) as the pre-check and the preview build it
// (judgeRestore), with what they report of it.
type restoreJudgement struct {
	judge *restorejudge.Judge
	// who is the requester, verified.
	who requesterVerdict
	// verified is the record of verified items the judge restores by
	// (nil: the restore needs none).
	verified *verifiedItems
	// lookup is the judge's Lookup: walking the contents adds to it the
	// backup's Roles that pass.
	lookup *precheckLookup
}

// judgeRefusal is why a restore is refused before any item is judged.
type judgeRefusal struct {
	// reason is condition Accepted's.
	reason string
	err    error
	// unverified: the restore needs a record of the items nacflow
	// verified and there is none (err says why).
	unverified bool
}

// judgeRestore builds the restore judge of nar's restore of Velero Backup
// backupName of the OADP namespace: the tenant role's rules, whether the
// backup is kept in a bucket a tenant writes (backupInTenantBucket), the
// verified requester (verifiedRequester; the reviews asked as them are
// cached for the judge's life), the record of verified items when the
// restore needs one (restorejudge.NeedsRecord; verifiedItemsOf), the
// accepted spec's target and existingResourcePolicy and the resource
// modifiers Velero will apply (restoreModifiers). refusal is set when the
// restore must be refused before any item: a forged requester record
// (condition RequesterVerified set), no usable record of verified items,
// modifiers other than asked. Errors: the API server's.
func (r restoreRules) judgeRestore(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, backupName string) (*restoreJudgement, *judgeRefusal, error) {
	bound, err := r.bound(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	bucketOnly, err := backupInTenantBucket(ctx, op, backupName)
	if err != nil {
		return nil, nil, err
	}
	who, forged, err := r.verifiedRequester(ctx, op, nar)
	if err != nil || forged != nil {
		return nil, refusedAs(v1alpha1.ReasonInvalidRestoreSpec, forged), err
	}
	rj := &restoreJudgement{who: who, lookup: &precheckLookup{op: op, reviews: r.requesters.reviews(), backupRole: map[string][]rbacv1.PolicyRule{}}}
	if restorejudge.NeedsRecord(bucketOnly, who.user) {
		var why string
		if rj.verified, why, err = verifiedItemsOf(ctx, op, backupName); err != nil {
			return nil, nil, err
		}
		if rj.verified == nil {
			return nil, unverifiedRefusal(backupName, who, why), nil
		}
	}
	mods, refusal, err := restoreModifiers(ctx, op, nar, who)
	if err != nil || refusal != nil {
		return nil, refusedAs(v1alpha1.ReasonInvalidRestoreSpec, refusal), err
	}
	cfg := restorejudge.Config{Namespace: nar.Namespace, Spec: nar.AcceptedRestoreSpec(), Requester: who.user, Bound: bound, TenantRole: r.tenantRole,
		AdminOwned: r.adminOwned, BucketOnly: bucketOnly, Modifiers: mods, Backup: backupName, Lookup: rj.lookup}
	if rj.verified != nil {
		cfg.Verified = &rj.verified.set
	}
	rj.judge, err = restorejudge.New(cfg)
	return rj, nil, err
}

// refusedAs is the refusal err with reason (nil without err).
func refusedAs(reason string, err error) *judgeRefusal {
	if err == nil {
		return nil
	}
	return &judgeRefusal{reason: reason, err: err}
}

// unverifiedRefusal is the refusal of a restore of Velero Backup backup
// as who that needs a record of verified items and has none (why).
func unverifiedRefusal(backup string, who requesterVerdict, why string) *judgeRefusal {
	return &judgeRefusal{reason: v1alpha1.ReasonItemsExcluded, unverified: true, err: fmt.Errorf(
		"Velero Backup %s is kept in a bucket another editor of the namespace may write, and nacflow restores from such a bucket as %s only the items it verified: %s",
		backup, who.user.Username, why)}
}

// apiError marks a Lookup error: retried, not reported as unreadable contents.
type apiError struct{ err error }

func (e apiError) Error() string { return e.err.Error() }

// precheckLookup implements restorepolicy.Lookup for the pre-check and
// the preview: Roles and ClusterRoles live (and Roles of the backup that
// pass, added as the contents are walked), PersistentVolumes live; every
// namespaced object reads as absent (nacflow reads no tenant object).
type precheckLookup struct {
	op         *engine.Operation
	backupRole map[string][]rbacv1.PolicyRule
	// reviews asks the API server as the requester (nil: no requester).
	reviews *restorepolicy.Reviews
}

// May implements restorepolicy.Lookup with the restore's Reviews.
func (l precheckLookup) May(ctx context.Context, user authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
	if l.reviews == nil {
		return false, errors.New("no SubjectAccessReviews without a requester")
	}
	ok, err := l.reviews.May(ctx, user, a)
	if err != nil {
		return false, apiError{err}
	}
	return ok, nil
}

func (l precheckLookup) Exists(ctx context.Context, gr schema.GroupResource, _, name string) (bool, error) {
	if gr != (schema.GroupResource{Resource: "persistentvolumes"}) {
		return false, nil
	}
	err := l.op.APIReader.Get(ctx, client.ObjectKey{Name: name}, &corev1.PersistentVolume{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, apiError{fmt.Errorf("reading PersistentVolume %s: %w", name, err)}
}

func (l precheckLookup) RoleRules(ctx context.Context, kind, ns, name string) ([]rbacv1.PolicyRule, bool, error) {
	var err error
	var rules []rbacv1.PolicyRule
	switch kind {
	case "Role":
		r := &rbacv1.Role{}
		err = l.op.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r)
		if apierrors.IsNotFound(err) {
			rules, ok := l.backupRole[name]
			return rules, ok, nil
		}
		rules = r.Rules
	case "ClusterRole":
		r := &rbacv1.ClusterRole{}
		err = l.op.APIReader.Get(ctx, client.ObjectKey{Name: name}, r)
		rules = r.Rules
	default:
		return nil, false, fmt.Errorf("kind %q is neither Role nor ClusterRole", kind)
	}
	switch {
	case err == nil:
		return rules, true, nil
	case apierrors.IsNotFound(err):
		return nil, false, nil
	}
	return nil, false, apiError{fmt.Errorf("reading %s %s: %w", kind, name, err)}
}

// contentItem is one item of a backup's contents, judged.
type contentItem struct {
	// gr, ns and name locate it (ns is empty for a cluster-scoped item).
	gr       schema.GroupResource
	ns, name string
	// key is "<resource> <namespace/name>".
	key string
	// obj is the item as backed up (nil when it could not be read: the
	// verdict says why), raw its file's bytes.
	obj map[string]any
	raw []byte
	// verdict is the restore judge's (or why the item was not read).
	verdict restorejudge.Verdict
}

// walkContents downloads the backup tarball at url and calls visit with
// every item Velero would restore into the judge's namespace (and every
// PersistentVolume), judged by rj's judge; skip says which group-resources
// Velero would not restore (not visited). RoleBindings of the backup's own
// Roles are visited last, once those Roles are judged (Velero restores
// Roles first). It returns the number of items visited. Errors: the
// download, gzip and tar errors, a tarball over limit bytes (compressed; a
// *contentsTooLarge), more than maxCheckedItems items, visit's; a Lookup
// error comes wrapped in apiError.
func walkContents(ctx context.Context, hc *storeClient, url string, limit int64, rj *restoreJudgement, skip func(schema.GroupResource) bool, visit func(contentItem) error) (int, error) {
	return walkContentsDigesting(ctx, hc, url, limit, rj, skip, visit, nil)
}

// walkContentsDigesting is walkContents that also hands digested the key
// and bytes of every copy of every item it would visit (the plain and the
// preferred-version one: Velero may restore either), as the tarball holds
// them (nil for a file over maxDigestItemBytes, not read), before the item
// is judged; digested nil reads no copy.
func walkContentsDigesting(ctx context.Context, hc *storeClient, url string, limit int64, rj *restoreJudgement, skip func(schema.GroupResource) bool,
	visit func(contentItem) error, digested func(key string, raw []byte)) (int, error) {
	w := &contentsWalk{ctx: ctx, rj: rj, skip: skip, visit: visit, digested: digested, seen: map[string]bool{}}
	if err := contentFiles(ctx, hc, url, limit, w.file); err != nil {
		return 0, err
	}
	for _, it := range w.deferred {
		n, _ := dig(it.obj, "metadata", "name")
		it.key = "rolebindings.rbac.authorization.k8s.io " + path.Join(rj.judge.Namespace(), n)
		if err := w.judge(it); err != nil {
			return 0, err
		}
	}
	return w.total, nil
}

// contentsWalk is one walk of a backup's contents (walkContentsDigesting).
type contentsWalk struct {
	ctx      context.Context
	rj       *restoreJudgement
	skip     func(schema.GroupResource) bool
	visit    func(contentItem) error
	digested func(key string, raw []byte)
	// seen are the keys of the items visited (one per item, whichever
	// copy comes first).
	seen map[string]bool
	// deferred are the RoleBindings of the backup's own Roles.
	deferred []contentItem
	total    int
}

// file handles one entry of the tarball: an item file Velero would
// restore is digested (every copy) and, the first time its item is seen,
// read and judged.
func (w *contentsWalk) file(h *tar.Header, r io.Reader) error {
	it, ok := w.item(h)
	if !ok {
		return nil
	}
	copied := w.seen[it.key] // the plain and the preferred-version copy of one item
	if copied && w.digested == nil {
		return nil
	}
	raw, err := w.digest(it.key, h, r)
	if err != nil || copied {
		return err
	}
	w.seen[it.key] = true
	if w.total++; w.total > maxCheckedItems {
		return fmt.Errorf("more than %d items: not all checked", maxCheckedItems)
	}
	if h.Size > maxItemBytes {
		it.verdict.Reason = fmt.Sprintf("not read, larger than %d bytes", maxItemBytes)
		return w.visit(it)
	}
	if raw == nil {
		if raw, err = io.ReadAll(io.LimitReader(r, maxItemBytes+1)); err != nil {
			return err
		}
	}
	it.raw = raw
	if err := json.Unmarshal(raw, &it.obj); err != nil || it.obj == nil {
		it.obj, it.verdict.Reason = nil, "not a JSON object"
		return w.visit(it)
	}
	return w.route(it)
}

// item is the item whose file h is, when Velero would restore it into
// the judge's namespace (or it is a PersistentVolume).
func (w *contentsWalk) item(h *tar.Header) (contentItem, bool) {
	gr, ns, name, ok := itemPath(h.Name)
	if !ok || h.Typeflag != tar.TypeReg || w.skip(gr) || (ns == "" && gr.String() != "persistentvolumes") || (ns != "" && ns != w.rj.judge.Namespace()) {
		return contentItem{}, false
	}
	return contentItem{gr: gr, ns: ns, name: name, key: gr.String() + " " + path.Join(ns, name)}, true
}

// digest hands digested the copy of key that r holds (nil when over
// maxDigestItemBytes, not read), and returns the bytes read.
func (w *contentsWalk) digest(key string, h *tar.Header, r io.Reader) ([]byte, error) {
	if w.digested == nil {
		return nil, nil
	}
	if h.Size > maxDigestItemBytes {
		w.digested(key, nil)
		return nil, nil
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxDigestItemBytes+1))
	if err != nil {
		return nil, err
	}
	w.digested(key, raw)
	return raw, nil
}

// route judges it now, or defers a RoleBinding of a Role (of the backup,
// maybe) until the Roles are judged; a Role that passes is one the
// bindings may bind.
func (w *contentsWalk) route(it contentItem) error {
	switch it.gr.String() {
	case "rolebindings.rbac.authorization.k8s.io":
		if kind, _ := dig(it.obj, "roleRef", "kind"); kind == "Role" && len(w.deferred) < maxDeferredBindings {
			w.deferred = append(w.deferred, it)
			return nil
		}
	case "roles.rbac.authorization.k8s.io":
		v, err := w.rj.judge.Item(w.ctx, restorejudge.Item{Resource: it.gr, Object: it.obj, Raw: it.raw})
		if err != nil {
			return apiError{err}
		}
		if v.Allowed {
			var role rbacv1.Role
			if b, err := json.Marshal(v.Object); err == nil && json.Unmarshal(b, &role) == nil {
				w.rj.lookup.backupRole[role.Name] = role.Rules
			}
		}
		it.verdict = v
		return w.visit(it)
	}
	return w.judge(it)
}

// judge visits it with the restore judge's verdict.
func (w *contentsWalk) judge(it contentItem) error {
	v, err := w.rj.judge.Item(w.ctx, restorejudge.Item{Resource: it.gr, Object: it.obj, Raw: it.raw})
	if err != nil {
		return apiError{err}
	}
	it.verdict = v
	return w.visit(it)
}
