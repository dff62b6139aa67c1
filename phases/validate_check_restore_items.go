package phases

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
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
// asks the restore's judge (restorejudge.Judge, built by judgeRestore as
// the preview builds it; velero-plugin-nacflow builds the same from the
// Velero Restore) about every item Velero would restore into the namespace
// (and every PersistentVolume): restorepolicy.Decide with the tenant role
// of --tenant-role and the verified requester, on the item as the resource
// modifiers make it. It reads no object of the tenant: each item is judged as if
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
	c := &restoreCheck{f: f, op: op, nar: nar, a: a, timeout: a.serveTimeout(), name: v1alpha1.NACObjectName(nar.Namespace, nar.Name, op.UUID)}
	if err := c.request(ctx); err != nil {
		return engine.Result{}, err
	}
	if res, err := c.pluginListed(ctx); res != nil || err != nil {
		return orZero(res), err
	}
	if wait, expired := awaitServed(c.dr, "the contents of Backup "+a.BackupName, c.timeout, f.tools.serving); expired {
		return c.notChecked(ctx, fmt.Sprintf("Velero did not serve the contents of Backup %s within %s", a.BackupName, c.timeout))
	} else if wait != nil {
		return *wait, nil
	}
	rj, refusal, err := f.judgeRestore(ctx, op, nar, a.BackupName)
	if err != nil {
		return engine.Result{}, err
	}
	if refusal != nil {
		return c.refused(ctx, refusal)
	}
	c.verified = rj.verified
	total, excluded, changed, err := judgeContents(ctx, f.tools.store, c.dr.Status.DownloadURL, rj, restoreSkips(nar))
	var apiErr apiError
	if errors.As(err, &apiErr) {
		return engine.Result{}, apiErr.err
	}
	if err != nil {
		return c.notChecked(ctx, fmt.Sprintf("reading the contents of Backup %s: %v", a.BackupName, err))
	}
	if err := c.cleanup(ctx); err != nil {
		return engine.Result{}, err
	}
	if len(changed) > 0 {
		return c.changed(changed, rj)
	}
	return c.checked(total, excluded, rj)
}

// orZero is *r, or the zero Result.
func orZero(r *engine.Result) engine.Result {
	if r == nil {
		return engine.Result{}
	}
	return *r
}

// restoreCheck is one run of CheckRestoreItems.
type restoreCheck struct {
	f       *CheckRestoreItems
	op      *engine.Operation
	nar     *v1alpha1.NonAdminRestore
	a       *CheckRestoreItemsArgs
	timeout time.Duration
	// name is the requests': the NonAdminRestore's NAC object name.
	name string
	ssr  *velerov1.ServerStatusRequest
	dr   *velerov1.DownloadRequest
	// verified is the backup's record of verified items, once the
	// restore is known to need one.
	verified *verifiedItems
}

// request gets or makes the run's ServerStatusRequest (read straight
// from the API server: no cache of them is kept) and its DownloadRequest
// of the backup's contents. Errors: the API server's.
func (c *restoreCheck) request(ctx context.Context) error {
	c.ssr = &velerov1.ServerStatusRequest{}
	found, err := getOwned(ctx, c.op.APIReader, c.op, "check", "ServerStatusRequest", c.name, c.ssr)
	if err != nil {
		return err
	}
	if !found {
		want := &velerov1.ServerStatusRequest{ObjectMeta: c.op.ObjectMeta(c.name)}
		obj, _, err := createOrAdopt(ctx, c.op, c.f.tools.recent, "Velero ServerStatusRequest", want)
		if err != nil {
			return err
		}
		c.ssr = obj.(*velerov1.ServerStatusRequest)
	}
	c.dr, err = backupFileRequest(ctx, c.op, c.f.tools.recent, "check", c.name, velerov1.DownloadTargetKindBackupContents, c.a.BackupName)
	return err
}

// pluginListed returns nil, nil when Velero lists nacflow's plugin as a
// RestoreItemAction; else the wait for Velero to list its plugins, or the
// refusal (the requests deleted) when it did not in time or lacks it.
func (c *restoreCheck) pluginListed(ctx context.Context) (*engine.Result, error) {
	if c.ssr.Status.Phase != velerov1.ServerStatusRequestPhaseProcessed {
		if time.Since(c.ssr.CreationTimestamp.Time) > c.timeout {
			return nil, c.refuse(ctx, v1alpha1.ReasonRestorePluginMissing, fmt.Errorf(
				"Velero did not list its plugins within %s (ServerStatusRequest %s): is the Velero server running? A restore waits for it to show plugin %s", c.timeout, c.name, restorepolicy.PluginName))
		}
		wait := engine.WaitWatched(fmt.Sprintf("waiting for Velero to list its plugins (ServerStatusRequest %s is %s)", c.name, phaseOr(string(c.ssr.Status.Phase))),
			c.timeout-time.Since(c.ssr.CreationTimestamp.Time)+time.Second)
		return &wait, nil
	}
	if !slices.ContainsFunc(c.ssr.Status.Plugins, func(p velerov1.PluginInfo) bool {
		return p.Name == restorepolicy.PluginName && strings.HasPrefix(p.Kind, "RestoreItemAction")
	}) {
		return nil, c.refuse(ctx, v1alpha1.ReasonRestorePluginMissing, fmt.Errorf(
			"Velero does not run nacflow's plugin %s (velero-plugin-nacflow), which keeps a tenant's restore within the tenant's rights: refusing to restore; the cluster admin must install it (docs/admin-guide.md)", restorepolicy.PluginName))
	}
	return nil, nil
}

// cleanup deletes the run's requests.
func (c *restoreCheck) cleanup(ctx context.Context) error {
	for _, o := range []client.Object{c.ssr, c.dr} {
		if err := deleteOwn(ctx, c.op, o); err != nil {
			return err
		}
	}
	return nil
}

// refuse deletes the run's requests and refuses the restore with reason
// and err (Accepted=False); a cleanup error is returned instead.
func (c *restoreCheck) refuse(ctx context.Context, reason string, err error) error {
	if cerr := c.cleanup(ctx); cerr != nil {
		return cerr
	}
	return refuse(c.nar, reason, err)
}

// refused refuses the restore as the judge's builder said; a restore
// without the record of verified items it needs is named in
// RestoreItemsChecked too.
func (c *restoreCheck) refused(ctx context.Context, r *judgeRefusal) (engine.Result, error) {
	if !r.unverified {
		return engine.Result{}, c.refuse(ctx, r.reason, r.err)
	}
	if err := c.cleanup(ctx); err != nil {
		return engine.Result{}, err
	}
	setItemsChecked(c.nar, metav1.ConditionFalse, v1alpha1.ReasonItemsExcluded, r.err.Error())
	return engine.Result{}, refuse(c.nar, r.reason, errors.New(r.err.Error()+": refusing to restore"))
}

// notChecked ends the run without a verdict on the items (why), or
// refuses the restore with onExcluded: refuse.
func (c *restoreCheck) notChecked(ctx context.Context, why string) (engine.Result, error) {
	if err := c.cleanup(ctx); err != nil {
		return engine.Result{}, err
	}
	setItemsChecked(c.nar, metav1.ConditionUnknown, v1alpha1.ReasonItemsNotChecked, why)
	if c.a.OnExcluded == "refuse" {
		return engine.Result{}, refuse(c.nar, v1alpha1.ReasonItemsNotChecked, errors.New(why+": refusing to restore (onExcluded: refuse)"))
	}
	var out map[string]string
	if c.verified != nil {
		out = map[string]string{"verifiedItems": c.verified.name}
	}
	return engine.Done("not checked: "+why, out), nil
}

// warn sets RestoreItemsChecked False with msg, with a Warning event.
func (c *restoreCheck) warn(msg string) {
	setItemsChecked(c.nar, metav1.ConditionFalse, v1alpha1.ReasonItemsExcluded, msg)
	if c.f.tools.recorder != nil {
		c.f.tools.recorder.Event(c.op.Object, corev1.EventTypeWarning, v1alpha1.ReasonItemsExcluded, msg)
	}
}

// changed refuses the whole restore: items written into the bucket after
// nacflow verified the backup, by someone other than the requester.
func (c *restoreCheck) changed(changed []string, rj *restoreJudgement) (engine.Result, error) {
	msg := fmt.Sprintf("%d items of Velero Backup %s changed since nacflow verified it: %s", len(changed), c.a.BackupName, listed(changed))
	c.warn(msg)
	return engine.Result{}, refuse(c.nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf(
		"%s: refusing the whole restore (the backup is kept in a bucket another editor of the namespace may write, and nacflow restores from it as %s only what it verified)", msg, rj.who.user.Username))
}

// checked reports the verdicts: all items allowed, or the excluded ones
// named — refusing the whole restore with onExcluded: refuse, into
// another namespace, or with the tenant's resource modifiers (all or
// nothing: their own transforms made these items).
func (c *restoreCheck) checked(total int, excluded []string, rj *restoreJudgement) (engine.Result, error) {
	out := map[string]string{"items": fmt.Sprint(total), "excluded": fmt.Sprint(len(excluded))}
	if c.verified != nil {
		out["verifiedItems"] = c.verified.name
	}
	if len(excluded) == 0 {
		msg := fmt.Sprintf("%d items of Velero Backup %s checked: all within what %s", total, c.a.BackupName, rj.judge.Within())
		setItemsChecked(c.nar, metav1.ConditionTrue, v1alpha1.ReasonItemsAllowed, msg)
		return engine.Done(msg, out), nil
	}
	msg := fmt.Sprintf("%d of %d items of Velero Backup %s are beyond what %s and are not restored: %s",
		len(excluded), total, c.a.BackupName, rj.judge.Within(), listed(excluded))
	c.warn(msg)
	switch {
	case c.a.OnExcluded == "refuse":
		return engine.Result{}, refuse(c.nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf("%s: refusing the whole restore (onExcluded: refuse)", msg))
	case rj.judge.Mapped():
		return engine.Result{}, refuse(c.nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf("%s: refusing the whole restore into namespace %s", msg, rj.judge.Target()))
	case c.nar.Spec.RestoreSpec.ResourceModifier != nil:
		return engine.Result{}, refuse(c.nar, v1alpha1.ReasonItemsExcluded, fmt.Errorf("%s: refusing the whole restore (its resource modifiers make them)", msg))
	}
	return engine.Done(msg, out), nil
}

// listed joins the first maxListedItems of items with "; ", saying how
// many more there are.
func listed(items []string) string {
	shown := items[:min(len(items), maxListedItems)]
	s := strings.Join(shown, "; ")
	if len(items) > len(shown) {
		s += fmt.Sprintf("; and %d more", len(items)-len(shown))
	}
	return s
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

// judgeContents downloads the backup tarball at url and judges, with
// rj's judge, every item Velero would restore (skip says which
// group-resources it would not). It returns the items judged and the
// excluded ones, sorted, as "<resource> <namespace/name>: <reason>". When
// the judge restores only verified items, it also returns, sorted, the
// items ("<resource> <namespace/name>") one of whose copies (plain or
// preferred-version) is not as nacflow verified it
// (restorejudge.Judge.CopyChanged), or is over maxDigestItemBytes; the
// judge's own Unverified verdict is on the first of those copies, so such
// items are named here, not as excluded. Errors: walkContents'.
func judgeContents(ctx context.Context, hc *storeClient, url string, rj *restoreJudgement, skip func(schema.GroupResource) bool) (total int, excluded, changed []string, err error) {
	marked := map[string]bool{}
	mark := func(key, as string) {
		if !marked[key] {
			marked[key] = true
			changed = append(changed, as)
		}
	}
	var digested func(string, []byte)
	if rj.judge.Verifies() {
		digested = func(key string, raw []byte) {
			switch {
			case raw == nil:
				mark(key, fmt.Sprintf("%s (over %d bytes: not read)", key, maxDigestItemBytes))
			case rj.judge.CopyChanged(raw):
				mark(key, key)
			}
		}
	}
	total, err = walkContentsDigesting(ctx, hc, url, maxContents, rj, skip, func(it contentItem) error {
		if !it.verdict.Allowed && !it.verdict.Unverified {
			excluded = append(excluded, it.key+": "+it.verdict.Reason)
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
