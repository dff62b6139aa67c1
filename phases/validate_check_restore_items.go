package phases

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

// veleroNeverRestored are the resources Velero never restores
// (pkg/restore/restore.go nonRestorableResources, Velero v1.18): not worth
// a word in the check.
var veleroNeverRestored = []string{"nodes", "events", "events.events.k8s.io", "backups.velero.io", "restores.velero.io",
	"resticrepositories.velero.io", "csinodes.storage.k8s.io", "volumeattachments.storage.k8s.io", "backuprepositories.velero.io"}

// CheckRestoreItemsArgs are the args of CheckRestoreItems.
type CheckRestoreItemsArgs struct {
	// BackupName is the Velero Backup to be restored, usually
	// {{ .Phases.waitForBackup.Output.name }}.
	BackupName string `json:"backupName" doc:"the Velero Backup to be restored, usually {{ .Phases.waitForBackup.Output.name }}"`
	// OnExcluded is what an item the tenant could not create does: exclude
	// (default: the restore goes on, Velero's plugin leaves the item out) or
	// refuse (the whole restore is refused, Accepted=False naming the items,
	// nothing created; so is a backup whose contents could not be read).
	OnExcluded string `json:"onExcluded,omitempty" doc:"exclude (default: the restore goes on without the items the tenant could not create) or refuse (the whole restore is refused naming them, as is a backup whose contents could not be read)"`
	ServeTimeoutArgs
}

// CheckRestoreItems runs before a NonAdminRestore's Velero Restore is
// created. It makes sure Velero runs nacflow's plugin (a Velero
// ServerStatusRequest in the OADP namespace lists status.plugins; without
// restorepolicy.PluginName as a RestoreItemAction the restore is refused,
// telling the admin to install velero-plugin-nacflow: nothing else would
// keep the restore within the tenant's rights), then reads the backup's
// contents (a Velero DownloadRequest BackupContents: the tarball, streamed,
// at most 256 MiB compressed, items of at most 1 MiB, 100,000 items) and
// applies restorepolicy.Decide to every item Velero would restore into the
// namespace (and to PersistentVolumes) with the tenant role of
// --tenant-role. It reads no object of the tenant: each item is judged as if
// absent (update rights and existing admin-owned objects are the plugin's to
// check at restore time), and a RoleBinding may bind a Role of the backup
// that passes itself (Velero restores Roles first).
//
// The plugin, not this phase, is the enforcement: the tenant may rewrite
// its bucket between this check and Velero's read. This phase tells the
// tenant in advance, and lets an admin refuse such restores outright.
//
// Restore only what was verified: when the backup is kept in a bucket a
// tenant writes (backupInTenantBucket) and the requester is known, the
// restore needs nacflow's record of the backup's items (the ConfigMap
// itemdigest.Name(backup) VerifyBackupContents wrote, for this Backup's
// UID and this namespace): without one (not verified by nacflow, verified
// before digests were recorded, over 60,000 items, contents unreadable
// then) the restore is refused (Accepted=False, ItemsExcluded, naming
// why), and so is a restore of which one item — either copy, plain or
// preferred-version — is not as recorded ("changed since nacflow verified
// it", naming the first 10): written into the bucket by someone other than
// the requester. The record's name is the output verifiedItems, for the
// Velero Restore's annotation itemdigest.RestoreAnnotation, with which the
// plugin restores only recorded items. Without a known requester nothing
// changes.
//
// Sets condition RestoreItemsChecked: True/ItemsAllowed with the count;
// False/ItemsExcluded naming the first 10 items and why, with a Warning
// event ItemsExcluded; Unknown/ItemsNotChecked when Velero did not serve the
// contents in time or they could not be read. With --restore-precheck=false
// it does nothing.
//
// Outputs: items, excluded (counts); verifiedItems (the record's
// ConfigMap, when the restore needs it). Errors: the plugin missing, a
// restore from a tenant's bucket without a usable record or with an item
// changed since, and with onExcluded refuse any excluded item or unread
// contents, are terminal (Accepted=False); API errors are retryable.
type CheckRestoreItems struct {
	restoreRules
	tools   tools
	enabled bool
}

// SafetyExceptions implements engine.Excepted: the tenant role and the
// ClusterRoles that the backup's RoleBindings bind are cluster-scoped, and
// a PersistentVolume of the backup must not exist already.
func (*CheckRestoreItems) SafetyExceptions() []engine.Exception {
	return []engine.Exception{
		{Verbs: []string{"get"}, Kind: rbacv1.SchemeGroupVersion.WithKind("ClusterRole").GroupKind(), Scope: engine.InAnyNamespace,
			Why: "the tenant role (--tenant-role) and the ClusterRoles a backup's RoleBindings bind, to apply Kubernetes' escalation rule"},
		{Verbs: []string{"get"}, Kind: corev1.SchemeGroupVersion.WithKind("PersistentVolume").GroupKind(), Scope: engine.InAnyNamespace,
			Why: "a restore made for a tenant never changes an existing PersistentVolume"},
		{Verbs: []string{"get"}, Kind: rbacv1.SchemeGroupVersion.WithKind("Role").GroupKind(), Scope: engine.InAnyNamespace,
			Why: "the Roles a backup's RoleBindings bind in the namespace a namespaceMapping restores into"},
	}
}

// Run implements phaseFunc.
func (f *CheckRestoreItems) Run(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, a *CheckRestoreItemsArgs) (engine.Result, error) {
	switch a.OnExcluded {
	case "", "exclude", "refuse":
	default:
		return engine.Result{}, engine.Terminalf("CheckRestoreItems: args.onExcluded %q is neither exclude nor refuse", a.OnExcluded)
	}
	if !f.enabled {
		return engine.Done("not checked: --restore-precheck=false", nil), nil
	}
	if a.BackupName == "" {
		return engine.Result{}, engine.Terminalf("CheckRestoreItems: args.backupName is empty")
	}
	timeout := a.serveTimeout()
	name := v1alpha1.NACObjectName(nar.Namespace, nar.Name, op.UUID)

	// Velero's plugins first: read straight from the API server (no cache
	// of ServerStatusRequests is kept).
	ssr := &velerov1.ServerStatusRequest{}
	found, err := getOwned(ctx, op.APIReader, op, "check", "ServerStatusRequest", name, ssr)
	if err != nil {
		return engine.Result{}, err
	}
	if !found {
		want := &velerov1.ServerStatusRequest{ObjectMeta: op.ObjectMeta(name)}
		obj, _, err := createOrAdopt(ctx, op, f.tools.recent, "Velero ServerStatusRequest", want)
		if err != nil {
			return engine.Result{}, err
		}
		ssr = obj.(*velerov1.ServerStatusRequest)
	}
	dr, err := backupFileRequest(ctx, op, f.tools.recent, "check", name, velerov1.DownloadTargetKindBackupContents, a.BackupName)
	if err != nil {
		return engine.Result{}, err
	}
	cleanup := func() error {
		for _, o := range []client.Object{ssr, dr} {
			if err := deleteOwn(ctx, op, o); err != nil {
				return err
			}
		}
		return nil
	}
	if ssr.Status.Phase != velerov1.ServerStatusRequestPhaseProcessed {
		if time.Since(ssr.CreationTimestamp.Time) > timeout {
			if err := cleanup(); err != nil {
				return engine.Result{}, err
			}
			return engine.Result{}, refuse(nar, v1alpha1.ReasonRestorePluginMissing, fmt.Errorf(
				"Velero did not list its plugins within %s (ServerStatusRequest %s): is the Velero server running? A restore waits for it to show plugin %s", timeout, name, restorepolicy.PluginName))
		}
		return engine.WaitWatched(fmt.Sprintf("waiting for Velero to list its plugins (ServerStatusRequest %s is %s)", name, phaseOr(string(ssr.Status.Phase))),
			timeout-time.Since(ssr.CreationTimestamp.Time)+time.Second), nil
	}
	if !slices.ContainsFunc(ssr.Status.Plugins, func(p velerov1.PluginInfo) bool {
		return p.Name == restorepolicy.PluginName && strings.HasPrefix(p.Kind, "RestoreItemAction")
	}) {
		if err := cleanup(); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{}, refuse(nar, v1alpha1.ReasonRestorePluginMissing, fmt.Errorf(
			"Velero does not run nacflow's plugin %s (velero-plugin-nacflow), which keeps a tenant's restore within the tenant's rights: refusing to restore; the cluster admin must install it (docs/admin-guide.md)", restorepolicy.PluginName))
	}

	// verified is the backup's record of verified items, when the restore
	// needs one (below).
	var verified *verifiedItems
	notChecked := func(why string) (engine.Result, error) {
		if err := cleanup(); err != nil {
			return engine.Result{}, err
		}
		setItemsChecked(nar, metav1.ConditionUnknown, v1alpha1.ReasonItemsNotChecked, why)
		if a.OnExcluded == "refuse" {
			return engine.Result{}, refuse(nar, v1alpha1.ReasonItemsNotChecked, errors.New(why+": refusing to restore (onExcluded: refuse)"))
		}
		var out map[string]string
		if verified != nil {
			out = map[string]string{"verifiedItems": verified.name}
		}
		return engine.Done("not checked: "+why, out), nil
	}
	if wait, expired := awaitServed(dr, "the contents of Backup "+a.BackupName, timeout, f.tools.serving); expired {
		return notChecked(fmt.Sprintf("Velero did not serve the contents of Backup %s within %s", a.BackupName, timeout))
	} else if wait != nil {
		return *wait, nil
	}

	bound, err := f.bound(ctx, op)
	if err != nil {
		return engine.Result{}, err
	}
	bucketOnly, err := backupInTenantBucket(ctx, op, a.BackupName)
	if err != nil {
		return engine.Result{}, err
	}
	who, err := f.requesters.verify(ctx, op, nar, f.tenantRoleName())
	if err != nil {
		return engine.Result{}, err
	}
	if who.forged != nil {
		if err := cleanup(); err != nil {
			return engine.Result{}, err
		}
		setRequesterCondition(nar, who)
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, who.forged)
	}
	// Restore only what was verified: from a bucket another editor of the
	// namespace may write, a restore as its requester needs nacflow's
	// record of the items (VerifyBackupContents), and every item must be
	// as recorded.
	if bucketOnly && who.user != nil {
		var why string
		if verified, why, err = verifiedItemsOf(ctx, op, a.BackupName); err != nil {
			return engine.Result{}, err
		}
		if verified == nil {
			if err := cleanup(); err != nil {
				return engine.Result{}, err
			}
			msg := fmt.Sprintf("Velero Backup %s is kept in a bucket another editor of the namespace may write, and nacflow restores from such a bucket as %s only the items it verified: %s",
				a.BackupName, who.user.Username, why)
			setItemsChecked(nar, metav1.ConditionFalse, v1alpha1.ReasonItemsExcluded, msg)
			return engine.Result{}, refuse(nar, v1alpha1.ReasonItemsExcluded, errors.New(msg+": refusing to restore"))
		}
	}
	spec := nar.AcceptedRestoreSpec()
	p := restorepolicy.Policy{Namespace: nar.Namespace, Bound: bound, AdminOwned: f.adminOwned, Requester: who.user,
		UpdateExisting: spec != nil && spec.ExistingResourcePolicy == velerov1.PolicyTypeUpdate, BucketOnly: bucketOnly}
	if spec != nil {
		p.Target = spec.NamespaceMapping[nar.Namespace]
	}
	within := fmt.Sprintf("ClusterRole %s allows in namespace %s", f.tenantRole, p.Target)
	if p.Target == "" {
		within = fmt.Sprintf("ClusterRole %s allows in namespace %s", f.tenantRole, nar.Namespace)
	}
	if who.user != nil {
		within += " and " + who.user.Username + " may do there"
	}
	mods, refusal, err := restoreModifiers(ctx, op, nar, who)
	if err != nil {
		return engine.Result{}, err
	}
	if refusal != nil {
		if err := cleanup(); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, refusal)
	}
	if mods != nil {
		within += ", as the resource modifiers make them"
	}
	skip := restoreSkips(nar)
	var set *itemdigest.Set
	if verified != nil {
		set = &verified.set
		within += ", each as nacflow verified it"
	}
	total, excluded, changed, err := checkContents(ctx, f.tools.store, dr.Status.DownloadURL, p, skip,
		precheckLookup{op: op, reviews: f.requesters.reviews(), modify: asCreated(mods)}, set)
	var apiErr apiError
	if errors.As(err, &apiErr) {
		return engine.Result{}, apiErr.err
	}
	if err != nil {
		return notChecked(fmt.Sprintf("reading the contents of Backup %s: %v", a.BackupName, err))
	}
	if err := cleanup(); err != nil {
		return engine.Result{}, err
	}
	if len(changed) > 0 {
		// Written into the bucket after nacflow verified the backup, by
		// someone other than the requester: all or nothing.
		shown := changed
		if len(shown) > maxListedItems {
			shown = shown[:maxListedItems]
		}
		msg := fmt.Sprintf("%d items of Velero Backup %s changed since nacflow verified it: %s", len(changed), a.BackupName, strings.Join(shown, "; "))
		if len(changed) > len(shown) {
			msg += fmt.Sprintf("; and %d more", len(changed)-len(shown))
		}
		setItemsChecked(nar, metav1.ConditionFalse, v1alpha1.ReasonItemsExcluded, msg)
		if f.tools.recorder != nil {
			f.tools.recorder.Event(op.Object, corev1.EventTypeWarning, v1alpha1.ReasonItemsExcluded, msg)
		}
		return engine.Result{}, refuse(nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf(
			"%s: refusing the whole restore (the backup is kept in a bucket another editor of the namespace may write, and nacflow restores from it as %s only what it verified)", msg, who.user.Username))
	}
	out := map[string]string{"items": fmt.Sprint(total), "excluded": fmt.Sprint(len(excluded))}
	if verified != nil {
		out["verifiedItems"] = verified.name
	}
	if len(excluded) == 0 {
		msg := fmt.Sprintf("%d items of Velero Backup %s checked: all within what %s", total, a.BackupName, within)
		setItemsChecked(nar, metav1.ConditionTrue, v1alpha1.ReasonItemsAllowed, msg)
		return engine.Done(msg, out), nil
	}
	shown := excluded
	if len(shown) > maxListedItems {
		shown = shown[:maxListedItems]
	}
	msg := fmt.Sprintf("%d of %d items of Velero Backup %s are beyond what %s and are not restored: %s",
		len(excluded), total, a.BackupName, within, strings.Join(shown, "; "))
	if len(excluded) > len(shown) {
		msg += fmt.Sprintf("; and %d more", len(excluded)-len(shown))
	}
	setItemsChecked(nar, metav1.ConditionFalse, v1alpha1.ReasonItemsExcluded, msg)
	if f.tools.recorder != nil {
		f.tools.recorder.Event(op.Object, corev1.EventTypeWarning, v1alpha1.ReasonItemsExcluded, msg)
	}
	if a.OnExcluded == "refuse" {
		return engine.Result{}, refuse(nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf("%s: refusing the whole restore (onExcluded: refuse)", msg))
	}
	if p.Target != "" && p.Target != nar.Namespace {
		// Into another namespace, all or nothing: the requester may create
		// every item there, or nothing is restored.
		return engine.Result{}, refuse(nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf("%s: refusing the whole restore into namespace %s", msg, p.Target))
	}
	if nar.Spec.RestoreSpec.ResourceModifier != nil {
		// The tenant's own transforms made these items: all or nothing too.
		return engine.Result{}, refuse(nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf("%s: refusing the whole restore (its resource modifiers make them)", msg))
	}
	return engine.Done(msg, out), nil
}

// bound reads the rules of the tenant role.
func (r restoreRules) bound(ctx context.Context, op *engine.Operation) ([]rbacv1.PolicyRule, error) {
	cr := &rbacv1.ClusterRole{}
	if err := op.APIReader.Get(ctx, client.ObjectKey{Name: r.tenantRole}, cr); err != nil {
		return nil, fmt.Errorf("reading the tenant role, ClusterRole %s: %w", r.tenantRole, err)
	}
	return cr.Rules, nil
}

// setItemsChecked sets nar's RestoreItemsChecked condition.
func setItemsChecked(nar *v1alpha1.NonAdminRestore, status metav1.ConditionStatus, reason, msg string) {
	setCondition(nar, v1alpha1.ConditionRestoreItemsChecked, status, reason, msg)
}

// restoreSkips reports the group-resources Velero will not restore for nar:
// what it never restores, what every tenant restore excludes
// (restoreExcluded) and the restore spec's own filters.
func restoreSkips(nar *v1alpha1.NonAdminRestore) func(schema.GroupResource) bool {
	var included, excluded []string
	if s := nar.AcceptedRestoreSpec(); s != nil {
		included, excluded = s.IncludedResources, s.ExcludedResources
	}
	in := func(list []string, gr schema.GroupResource) bool {
		return slices.Contains(list, gr.String()) || slices.Contains(list, gr.Resource)
	}
	return func(gr schema.GroupResource) bool {
		switch {
		case in(veleroNeverRestored, gr), in(restoreExcluded, gr), in(excluded, gr):
			return true
		case len(included) > 0 && !slices.Contains(included, "*") && !in(included, gr):
			return true
		}
		return false
	}
}

// apiError marks a Lookup error: retried, not reported as unreadable contents.
type apiError struct{ err error }

func (e apiError) Error() string { return e.err.Error() }

// precheckLookup implements restorepolicy.Lookup for the pre-check: Roles
// and ClusterRoles live (and Roles of the backup that pass, added by
// checkContents), PersistentVolumes live; every namespaced object reads as
// absent (nacflow reads no tenant object).
type precheckLookup struct {
	op         *engine.Operation
	backupRole map[string][]rbacv1.PolicyRule
	// reviews asks the API server as the requester (nil: no requester).
	reviews *restorepolicy.Reviews
	// modify, when set, returns an item as Velero creates it after the
	// restore's resource modifiers, or why it must not be restored.
	modify func(schema.GroupResource, map[string]any) (map[string]any, schema.GroupResource, string)
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

// checkContents downloads the backup tarball at url and decides every item
// Velero would restore (skip says which group-resources it would not).
// It returns the items decided and the excluded ones, sorted, as
// "<resource> <namespace/name>: <reason>". With verified, it also returns,
// sorted, the items ("<resource> <namespace/name>") one of whose copies
// (plain or preferred-version) has a digest verified does not hold, or is
// over maxDigestItemBytes; a copy Velero could not decode is no item it
// restores. Errors: walkContents'.
func checkContents(ctx context.Context, hc *storeClient, url string, p restorepolicy.Policy, skip func(schema.GroupResource) bool, lk precheckLookup,
	verified *itemdigest.Set) (total int, excluded, changed []string, err error) {
	var digested func(string, []byte)
	if verified != nil {
		marked := map[string]bool{}
		digested = func(key string, raw []byte) {
			if marked[key] {
				return
			}
			if raw == nil {
				marked[key] = true
				changed = append(changed, fmt.Sprintf("%s (over %d bytes: not read)", key, maxDigestItemBytes))
				return
			}
			d, err := itemdigest.Of(raw)
			if err != nil || verified.Contains(d) {
				return
			}
			marked[key] = true
			changed = append(changed, key)
		}
	}
	total, err = walkContentsDigesting(ctx, hc, url, maxContents, p, skip, lk, func(it contentItem) error {
		if !it.decision.Allowed {
			excluded = append(excluded, it.key+": "+it.decision.Reason)
		}
		return nil
	}, digested)
	if err != nil {
		return 0, nil, nil, err
	}
	sort.Strings(excluded)
	sort.Strings(changed)
	return total, excluded, changed, nil
}

// verifiedItemsOf reads the Velero Backup name of the OADP namespace and
// its record of verified items (readVerifiedItems): the record, or nil and
// why there is none. Errors are the API server's.
func verifiedItemsOf(ctx context.Context, op *engine.Operation, name string) (*verifiedItems, string, error) {
	backup := &velerov1.Backup{}
	found, err := read(ctx, op.APIReader, op.OADPNamespace, name, backup)
	if err != nil || !found {
		return nil, fmt.Sprintf("Velero Backup %s/%s not found", op.OADPNamespace, name), err
	}
	return readVerifiedItems(ctx, op, backup)
}

// contentItem is one item of a backup's contents, decided.
type contentItem struct {
	// gr, ns and name locate it (ns is empty for a cluster-scoped item).
	gr       schema.GroupResource
	ns, name string
	// key is "<resource> <namespace/name>".
	key string
	// obj is the item as backed up (nil when it could not be read: the
	// decision says why).
	obj map[string]any
	// decision is restorepolicy's (or why the item was not read).
	decision restorepolicy.Decision
}

// walkContents downloads the backup tarball at url and calls visit with
// every item Velero would restore into p.Namespace (and every
// PersistentVolume), decided by restorepolicy with lk; skip says which
// group-resources Velero would not restore (not visited). RoleBindings of
// the backup's own Roles are visited last, once those Roles are decided
// (Velero restores Roles first). It returns the number of items visited.
// Errors: the download, gzip and tar errors, a tarball over limit bytes
// (compressed; a *contentsTooLarge),
// more than maxCheckedItems items, visit's; a Lookup error comes wrapped in
// apiError.
func walkContents(ctx context.Context, hc *storeClient, url string, limit int64, p restorepolicy.Policy, skip func(schema.GroupResource) bool, lk precheckLookup, visit func(contentItem) error) (int, error) {
	return walkContentsDigesting(ctx, hc, url, limit, p, skip, lk, visit, nil)
}

// walkContentsDigesting is walkContents that also hands digested the key
// and bytes of every copy of every item it would visit (the plain and the
// preferred-version one: Velero may restore either), as the tarball holds
// them (nil for a file over maxDigestItemBytes, not read), before the item
// is decided; digested nil reads no copy.
func walkContentsDigesting(ctx context.Context, hc *storeClient, url string, limit int64, p restorepolicy.Policy, skip func(schema.GroupResource) bool, lk precheckLookup,
	visit func(contentItem) error, digested func(key string, raw []byte)) (int, error) {
	seen := map[string]bool{}
	lk.backupRole = map[string][]rbacv1.PolicyRule{}
	var deferred []contentItem
	total := 0
	decide := func(it contentItem) error {
		obj, gr := it.obj, it.gr
		if lk.modify != nil {
			var why string
			if obj, gr, why = lk.modify(it.gr, it.obj); why != "" {
				it.decision = restorepolicy.Decision{Reason: why}
				return visit(it)
			}
		}
		d, err := restorepolicy.Decide(ctx, p, restorepolicy.Item{Resource: gr, Object: obj}, lk)
		if err != nil {
			return apiError{err}
		}
		it.decision = d
		return visit(it)
	}
	err := contentFiles(ctx, hc, url, limit, func(h *tar.Header, r io.Reader) error {
		gr, ns, name, ok := itemPath(h.Name)
		if !ok || h.Typeflag != tar.TypeReg || skip(gr) || (ns == "" && gr.String() != "persistentvolumes") || (ns != "" && ns != p.Namespace) {
			return nil
		}
		it := contentItem{gr: gr, ns: ns, name: name, key: gr.String() + " " + path.Join(ns, name)}
		copied := seen[it.key] // the plain and the preferred-version copy of one item
		if copied && digested == nil {
			return nil
		}
		var raw []byte
		if digested != nil {
			if h.Size > maxDigestItemBytes {
				digested(it.key, nil)
			} else {
				var err error
				if raw, err = io.ReadAll(io.LimitReader(r, maxDigestItemBytes+1)); err != nil {
					return err
				}
				digested(it.key, raw)
			}
		}
		if copied {
			return nil
		}
		seen[it.key] = true
		if total++; total > maxCheckedItems {
			return fmt.Errorf("more than %d items: not all checked", maxCheckedItems)
		}
		if h.Size > maxItemBytes {
			it.decision.Reason = fmt.Sprintf("not read, larger than %d bytes", maxItemBytes)
			return visit(it)
		}
		if raw == nil {
			var err error
			if raw, err = io.ReadAll(io.LimitReader(r, maxItemBytes+1)); err != nil {
				return err
			}
		}
		if err := json.Unmarshal(raw, &it.obj); err != nil || it.obj == nil {
			it.obj, it.decision.Reason = nil, "not a JSON object"
			return visit(it)
		}
		switch gr.String() {
		case "rolebindings.rbac.authorization.k8s.io":
			if kind, _ := dig(it.obj, "roleRef", "kind"); kind == "Role" && len(deferred) < maxDeferredBindings {
				deferred = append(deferred, it)
				return nil
			}
		case "roles.rbac.authorization.k8s.io":
			d, err := restorepolicy.Decide(ctx, p, restorepolicy.Item{Resource: gr, Object: it.obj}, lk)
			if err != nil {
				return apiError{err}
			}
			if d.Allowed {
				var role rbacv1.Role
				if json.Unmarshal(raw, &role) == nil {
					lk.backupRole[role.Name] = role.Rules
				}
			}
			it.decision = d
			return visit(it)
		}
		return decide(it)
	})
	if err != nil {
		return 0, err
	}
	for _, it := range deferred {
		n, _ := dig(it.obj, "metadata", "name")
		it.key = "rolebindings.rbac.authorization.k8s.io " + path.Join(p.Namespace, n)
		if err := decide(it); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// contentFiles downloads the backup tarball at url (getBackupFile, within
// contentsDownloadTimeout, at most limit bytes compressed) and calls each
// with every entry of the tar, in order, and a reader of its data. Errors:
// the download, gzip and tar errors, a tarball over limit bytes (a
// *contentsTooLarge), each's.
func contentFiles(ctx context.Context, hc *storeClient, url string, limit int64, each func(h *tar.Header, r io.Reader) error) error {
	ctx, cancel := context.WithTimeout(ctx, contentsDownloadTimeout)
	defer cancel()
	body, err := getBackupFile(ctx, hc, url)
	if err != nil {
		return err
	}
	defer body.Close()
	gz, err := gzip.NewReader(&limitedReader{r: body, left: limit, limit: limit})
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := each(h, tr); err != nil {
			return err
		}
	}
}

// itemPath parses a tarball path of Velero's layout (pkg/archive):
// resources/<group-resource>[/<version>-preferredversion]/namespaces/<ns>/<name>.json
// or .../cluster/<name>.json.
func itemPath(p string) (gr schema.GroupResource, ns, name string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(p, "./"), "/")
	if len(parts) < 4 || parts[0] != "resources" || !strings.HasSuffix(parts[len(parts)-1], ".json") {
		return gr, "", "", false
	}
	gr = schema.ParseGroupResource(parts[1])
	rest := parts[2:]
	if strings.HasSuffix(rest[0], "-preferredversion") {
		rest = rest[1:]
	}
	name = strings.TrimSuffix(rest[len(rest)-1], ".json")
	switch {
	case len(rest) == 3 && rest[0] == "namespaces" && rest[1] != "":
		return gr, rest[1], name, name != ""
	case len(rest) == 2 && rest[0] == "cluster":
		return gr, "", name, name != ""
	}
	return gr, "", "", false
}

// dig reads a string field of obj.
func dig(obj map[string]any, keys ...string) (string, bool) {
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		cur = m[k]
	}
	s, ok := cur.(string)
	return s, ok
}

// contentsTooLarge is the error of a backup's contents over the limit read.
type contentsTooLarge struct{ limit int64 }

func (e *contentsTooLarge) Error() string {
	return fmt.Sprintf("the backup contents are larger than %d bytes", e.limit)
}

// limitedReader fails once more than left bytes (of limit) were read.
type limitedReader struct {
	r           io.Reader
	left, limit int64
}

func (l *limitedReader) Read(b []byte) (int, error) {
	if l.left < 0 {
		return 0, &contentsTooLarge{l.limit}
	}
	if int64(len(b)) > l.left+1 {
		b = b[:l.left+1]
	}
	n, err := l.r.Read(b)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, &contentsTooLarge{l.limit}
	}
	return n, err
}

// Doc implements engine.Documented.
func (*CheckRestoreItems) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Before a NonAdminRestore's Velero Restore: checks that Velero runs nacflow's plugin nacflow.io/restore-as-tenant (a ServerStatusRequest; refused without it), then streams the backup's contents (a DownloadRequest BackupContents; at most 256 MiB, items of 1 MiB, 100,000 items) and judges every item Velero would restore against the tenant role (--tenant-role): create rights, Kubernetes' escalation rule for Roles and RoleBindings, PersistentVolume sources. Sets RestoreItemsChecked (True with the count; False naming the items left out, with a Warning event ItemsExcluded; Unknown when the contents could not be read). The plugin enforces the same rules on what Velero really restores. From a bucket a tenant writes, with a known requester, restores only what nacflow verified: refused without the backup's record of item digests (VerifyBackupContents) or when an item changed since. Does nothing with --restore-precheck=false.",
		Outputs: []string{"items: items checked", "excluded: items the tenant could not create", "verifiedItems: the ConfigMap of the backup's verified item digests, when the restore needs it"},
		Errors:  "Velero without the plugin, a restore from a tenant's bucket without a record of verified items or with an item changed since, and with args.onExcluded refuse an excluded item or unread contents, are terminal (Accepted=False); " + apiRetried,
		Waits:   true,
	}
}
