package phases

import (
	"context"
	"errors"
	"fmt"
	authorizationv1 "k8s.io/api/authorization/v1"
	"reflect"
	"slices"
	"sort"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/text"
)

// PreviewRestoreArgs are the args of PreviewRestore.
type PreviewRestoreArgs struct {
	// BackupName is the Velero Backup the restore would restore, usually
	// {{ .Phases.waitForBackup.Output.name }}.
	BackupName string `json:"backupName" doc:"the Velero Backup previewed, usually {{ .Phases.waitForBackup.Output.name }}"`
	// MaxContentsMiB bounds the contents read (compressed, MiB): a larger
	// backup is previewed from its resource list alone (default 256).
	MaxContentsMiB int64 `json:"maxContentsMiB,omitempty" doc:"contents larger than this (compressed, MiB) are previewed from the backup's resource list alone: item counts, no outcomes (default 256)"`
	ServeTimeoutArgs
}

// Bounds of a restore preview's status: items listed, and fields named per
// updated item.
const (
	maxPreviewItems    = 100
	maxPreviewFields   = 20
	maxPreviewFieldLen = 256
)

// previewKinds are the kinds a preview compares with live objects (nac's
// ClusterRole lets it get them, and no others).
var previewKinds = []schema.GroupKind{
	{Kind: "ConfigMap"}, {Kind: "Secret"}, {Kind: "Service"}, {Kind: "ServiceAccount"}, {Kind: "PersistentVolumeClaim"}, {Kind: "Pod"},
	{Kind: "LimitRange"}, {Kind: "ResourceQuota"}, {Kind: "Endpoints"},
	{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"}, {Group: "apps", Kind: "ReplicaSet"},
	{Group: "batch", Kind: "Job"}, {Group: "batch", Kind: "CronJob"},
	{Group: "networking.k8s.io", Kind: "Ingress"}, {Group: "networking.k8s.io", Kind: "NetworkPolicy"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, {Group: "policy", Kind: "PodDisruptionBudget"},
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"},
}

// PreviewRestore tells what a NonAdminRestore would do without restoring
// anything: nacflow's answer to Velero's long-standing requests for a
// restore dry-run (vmware-tanzu/velero#448, #6195). It reads the backup's
// contents through a Velero DownloadRequest BackupContents of its own in the
// OADP namespace (as CheckRestoreItems does: streamed, at most 256 MiB
// compressed, items of at most 1 MiB), and for every item Velero would
// restore into the namespace decides an outcome:
//   - excluded: the restore's filters (excludedResources, includedResources,
//     labelSelector, orLabelSelectors), nacflow's exclusions of every tenant
//     restore, or the restore's judge (restorejudge, built as
//     CheckRestoreItems builds it: what the tenant role and the verified
//     requester may create, as the resource modifiers make it, and from a
//     bucket a tenant writes only what nacflow verified), the rule named;
//   - create: no such object lives in the namespace;
//   - skip: it lives there and existingResourcePolicy is none (Velero's
//     default: it never overwrites), or nothing but metadata noise and
//     status differs;
//   - update: it lives there, differs, and existingResourcePolicy is update
//     (the fields named, as dotted paths);
//   - unknown: the live object could not be read (the reason named).
//
// Live objects are read from the API server through the operation's guarded
// client, in the NonAdminRestore's own namespace only. A backup whose
// contents are over args.maxContentsMiB (256 MiB compressed) is previewed
// from its resource list (a second DownloadRequest): the number of the
// namespace's items, and a message saying no outcome was computed.
//
// Sets status.preview (counts, the first 100 items: updates, creates,
// exclusions, unknowns, then skips, each by resource and name). Makes no
// Velero Restore; deletes its DownloadRequest once read.
//
// Outputs: total, create, skip, update, excluded. Errors: contents Velero
// did not serve in time or that could not be read, and a restore its judge
// refuses before any item (a forged requester record, modifiers other than
// asked, a restore from a tenant's bucket as its requester without
// nacflow's record of verified items), are terminal (the preview fails
// saying why); API errors are retryable.
type PreviewRestore struct {
	restoreRules
	tools tools
}

// SafetyExceptions implements engine.Excepted: the same cluster-scoped reads
// as CheckRestoreItems (the tenant role and the ClusterRoles a backup's
// RoleBindings bind; whether a backup's PersistentVolume exists).
func (*PreviewRestore) SafetyExceptions() []engine.Exception {
	out := (&CheckRestoreItems{}).SafetyExceptions()
	for _, gk := range previewKinds {
		out = append(out, engine.Exception{Verbs: []string{"get"}, Kind: gk, Scope: engine.InAnyNamespace,
			Why: "a preview into another namespace compares each item with the object there, once the requester may read it (SubjectAccessReview)"})
	}
	return out
}

// Run implements phaseFunc.
func (f *PreviewRestore) Run(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, a *PreviewRestoreArgs) (engine.Result, error) {
	if a.BackupName == "" {
		return engine.Result{}, engine.Terminalf("PreviewRestore: args.backupName is empty")
	}
	timeout := a.serveTimeout()
	dr, err := backupFileRequest(ctx, op, f.tools.recent, "preview", v1alpha1.NACObjectName(nar.Namespace, nar.Name, op.UUID),
		velerov1.DownloadTargetKindBackupContents, a.BackupName)
	if err != nil {
		return engine.Result{}, err
	}
	pr := &restorePreview{f: f, op: op, nar: nar, a: a, dr: dr}
	if wait, expired := awaitServed(dr, "the contents of Backup "+a.BackupName, timeout, f.tools.serving); expired {
		return pr.fail(ctx, fmt.Sprintf("Velero did not serve the contents of Backup %s within %s: nothing previewed", a.BackupName, timeout))
	} else if wait != nil {
		return *wait, nil
	}
	why, err := pr.judge(ctx)
	if err != nil {
		return engine.Result{}, err
	}
	if why != "" {
		return pr.fail(ctx, why)
	}
	items, err := pr.walk(ctx)
	var apiErr apiError
	var tooLarge *contentsTooLarge
	switch {
	case errors.As(err, &apiErr):
		return engine.Result{}, apiErr.err
	case errors.As(err, &tooLarge):
		if err := deleteOwn(ctx, op, dr); err != nil {
			return engine.Result{}, err
		}
		return f.fromResourceList(ctx, op, nar, a, timeout, tooLarge)
	case err != nil:
		return pr.fail(ctx, fmt.Sprintf("reading the contents of Backup %s: %v", a.BackupName, err))
	}
	if err := deleteOwn(ctx, op, dr); err != nil {
		return engine.Result{}, err
	}
	return pr.done(items), nil
}

// restorePreview is one run of PreviewRestore.
type restorePreview struct {
	f   *PreviewRestore
	op  *engine.Operation
	nar *v1alpha1.NonAdminRestore
	a   *PreviewRestoreArgs
	// dr is the DownloadRequest of the backup's contents.
	dr *velerov1.DownloadRequest
	// rj is the restore's judge; filtered names the restore filter that
	// leaves an item out ("" when none does).
	rj       *restoreJudgement
	filtered func(schema.GroupResource, map[string]any) string
	pv       *v1alpha1.RestorePreview
}

// fail deletes the DownloadRequest and fails the preview saying why.
func (pr *restorePreview) fail(ctx context.Context, why string) (engine.Result, error) {
	if err := deleteOwn(ctx, pr.op, pr.dr); err != nil {
		return engine.Result{}, err
	}
	pr.nar.Status.Preview = &v1alpha1.RestorePreview{BackupName: pr.a.BackupName, Message: text.Truncate(why, 1024)}
	return engine.Result{}, engine.Terminalf("%s", why)
}

// judge builds the restore's judge and filters, as the restore would
// have them; why says why the preview fails (a restore refused before
// any item, a preview into another namespace with no known requester, a
// malformed label selector). Errors: the API server's.
func (pr *restorePreview) judge(ctx context.Context) (why string, err error) {
	rj, refusal, err := pr.f.judgeRestore(ctx, pr.op, pr.nar, pr.a.BackupName)
	switch {
	case err != nil:
		return "", err
	case refusal != nil:
		return refusal.err.Error(), nil
	case rj.judge.Mapped() && (rj.who.user == nil || rj.lookup.reviews == nil):
		return "a preview into another namespace needs a known requester (condition RequesterVerified)", nil
	}
	spec := pr.nar.AcceptedRestoreSpec()
	if spec == nil {
		spec = &velerov1.RestoreSpec{}
	}
	if pr.filtered, err = restoreFilters(spec); err != nil {
		return err.Error(), nil
	}
	pr.rj = rj
	return "", nil
}

// walk previews every item of the contents (previewItem), counting
// outcomes in pr.pv. Errors: walkContents'.
func (pr *restorePreview) walk(ctx context.Context) ([]v1alpha1.RestorePreviewItem, error) {
	pr.pv = &v1alpha1.RestorePreview{BackupName: pr.a.BackupName, Source: v1alpha1.PreviewFromContents}
	var items []v1alpha1.RestorePreviewItem
	limit := int64(maxContents)
	if pr.a.MaxContentsMiB > 0 {
		limit = min(pr.a.MaxContentsMiB, 1<<20) << 20
	}
	_, err := walkContents(ctx, pr.f.tools.store, pr.dr.Status.DownloadURL, limit, pr.rj, neverRestored, func(it contentItem) error {
		item, err := pr.previewItem(ctx, it)
		if err != nil {
			return err
		}
		count(pr.pv, item.Outcome)
		items = append(items, item)
		return nil
	})
	return items, err
}

// previewItem is the outcome of it: Velero's filters first (what they
// leave out is never judged), then the judge's verdict, then the live
// object (read, in another namespace, only where the requester may read
// it). Errors: the API server's, wrapped in apiError.
func (pr *restorePreview) previewItem(ctx context.Context, it contentItem) (v1alpha1.RestorePreviewItem, error) {
	item := v1alpha1.RestorePreviewItem{Resource: text.Truncate(it.gr.String(), 253), Name: text.Truncate(it.name, 253)}
	why := ""
	if it.obj != nil {
		why = pr.filtered(it.gr, it.obj)
	}
	j := pr.rj.judge
	switch {
	case why != "":
		item.Outcome, item.Reason = v1alpha1.PreviewExcluded, why
	case it.obj == nil || !it.verdict.Allowed:
		item.Outcome, item.Reason = v1alpha1.PreviewExcluded, it.verdict.Reason
	case j.Mapped():
		// Another namespace: read only what the requester may read there.
		ok, err := j.RequesterMay(ctx, authorizationv1.ResourceAttributes{Namespace: j.Target(), Verb: "get",
			Group: it.gr.Group, Resource: it.gr.Resource, Name: it.name})
		if err != nil {
			return item, apiError{err}
		}
		if !ok {
			item.Outcome, item.Reason = v1alpha1.PreviewUnknown, fmt.Sprintf("allowed into namespace %s, where %s may not get %s %s", j.Target(), j.Requester().Username, it.gr, it.name)
			break
		}
		in := it
		in.ns = j.Target()
		if err := compareLive(ctx, pr.op, in, j.UpdateExisting(), &item); err != nil {
			return item, err
		}
	default:
		if err := compareLive(ctx, pr.op, it, j.UpdateExisting(), &item); err != nil {
			return item, err
		}
	}
	item.Reason = text.Truncate(item.Reason, 512)
	return item, nil
}

// done records the preview of items in status.preview.
func (pr *restorePreview) done(items []v1alpha1.RestorePreviewItem) engine.Result {
	pv := pr.pv
	pv.Items = firstItems(items)
	pv.Message = fmt.Sprintf("%d items of Velero Backup %s for namespace %s: %d create, %d skip, %d update, %d excluded",
		pv.Total, pr.a.BackupName, pr.rj.judge.Target(), pv.Create, pv.Skip, pv.Update, pv.Excluded)
	if pv.Unknown > 0 {
		pv.Message += fmt.Sprintf(", %d unknown", pv.Unknown)
	}
	if len(items) > len(pv.Items) {
		pv.Message += fmt.Sprintf(" (the first %d listed)", len(pv.Items))
	}
	pr.nar.Status.Preview = pv
	out := map[string]string{"total": fmt.Sprint(pv.Total), "create": fmt.Sprint(pv.Create), "skip": fmt.Sprint(pv.Skip),
		"update": fmt.Sprint(pv.Update), "excluded": fmt.Sprint(pv.Excluded)}
	return engine.Done("preview: "+pv.Message, out)
}

// fromResourceList previews a backup whose contents are over the limit
// from its resource list (a DownloadRequest BackupResourceList of its own):
// the number of the namespace's items, no outcome. Errors: as Run's.
func (f *PreviewRestore) fromResourceList(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, a *PreviewRestoreArgs,
	timeout time.Duration, tooLarge *contentsTooLarge) (engine.Result, error) {
	dr, err := backupFileRequest(ctx, op, f.tools.recent, "preview", v1alpha1.NACObjectName(nar.Namespace, nar.Name, op.UUID)+"-list",
		velerov1.DownloadTargetKindBackupResourceList, a.BackupName)
	if err != nil {
		return engine.Result{}, err
	}
	done := func(pv *v1alpha1.RestorePreview, failed bool) (engine.Result, error) {
		if err := deleteOwn(ctx, op, dr); err != nil {
			return engine.Result{}, err
		}
		nar.Status.Preview = pv
		if failed {
			return engine.Result{}, engine.Terminalf("%s", pv.Message)
		}
		return engine.Done("preview: "+pv.Message, map[string]string{"total": fmt.Sprint(pv.Total)}), nil
	}
	if wait, expired := awaitServed(dr, "the resource list of Backup "+a.BackupName, timeout, f.tools.serving); expired {
		return done(&v1alpha1.RestorePreview{BackupName: a.BackupName, Message: text.Truncate(fmt.Sprintf(
			"%s, and Velero did not serve its resource list within %s: nothing previewed", tooLarge, timeout), 1024)}, true)
	} else if wait != nil {
		return *wait, nil
	}
	list, err := downloadResourceList(ctx, f.tools.store, dr.Status.DownloadURL, nar.Namespace)
	if err != nil {
		return done(&v1alpha1.RestorePreview{BackupName: a.BackupName, Message: text.Truncate(fmt.Sprintf(
			"%s, and its resource list could not be read: %v", tooLarge, err), 1024)}, true)
	}
	n := max(list.total-list.foreign-list.clusterItems, 0)
	return done(&v1alpha1.RestorePreview{BackupName: a.BackupName, Source: v1alpha1.PreviewFromResourceList, Total: int32(min(n, 1<<30)),
		Message: text.Truncate(fmt.Sprintf("%s: its resource list holds %d items of namespace %s; outcomes are not computed (args.maxContentsMiB raises the bound)",
			tooLarge, n, nar.Namespace), 1024)}, false)
}

// neverRestored reports the group-resources Velero never restores: not
// worth an outcome.
func neverRestored(gr schema.GroupResource) bool {
	return slices.Contains(veleroNeverRestored, gr.String())
}

// restoreFilters returns what excludes an item from a restore of spec
// (nacflow's exclusions of every tenant restore, then the spec's resource
// and label filters, as Velero applies them), as a function naming the rule,
// "" when the item is restored. Errors: a malformed label selector.
func restoreFilters(spec *velerov1.RestoreSpec) (func(schema.GroupResource, map[string]any) string, error) {
	in := func(list []string, gr schema.GroupResource) bool {
		return slices.Contains(list, gr.String()) || slices.Contains(list, gr.Resource)
	}
	var selectors []labels.Selector
	for _, ls := range append([]*metav1.LabelSelector{spec.LabelSelector}, spec.OrLabelSelectors...) {
		if ls == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("spec.restoreSpec label selector: %w", err)
		}
		selectors = append(selectors, sel)
	}
	return func(gr schema.GroupResource, obj map[string]any) string {
		switch {
		case in(restoreExcluded, gr):
			return "nacflow leaves " + gr.String() + " out of every tenant restore"
		case in(spec.ExcludedResources, gr):
			return "spec.restoreSpec.excludedResources names " + gr.String()
		case len(spec.IncludedResources) > 0 && !slices.Contains(spec.IncludedResources, "*") && !in(spec.IncludedResources, gr):
			return "spec.restoreSpec.includedResources does not name " + gr.String()
		}
		if len(selectors) == 0 {
			return ""
		}
		set := labels.Set((&unstructured.Unstructured{Object: obj}).GetLabels())
		for _, sel := range selectors {
			if sel.Matches(set) {
				return ""
			}
		}
		if len(selectors) == 1 && spec.LabelSelector != nil {
			return "its labels do not match spec.restoreSpec.labelSelector"
		}
		return "its labels match neither spec.restoreSpec.labelSelector nor orLabelSelectors"
	}, nil
}

// compareLive sets item's outcome from the live object of it: create when
// absent; skip or, with update, update naming the changed fields when
// present; unknown when it cannot be read. The item comes from the tenant's
// bucket: only the object its place in the backup names (its resource, the
// NonAdminRestore's namespace, its name) is read, whatever kind it claims to
// be, so a forged item cannot make the preview an oracle on other objects.
// A cluster-scoped item (a PersistentVolume restorepolicy let through,
// hence absent) is create, read from nothing. Errors: API server errors other
// than NotFound, Forbidden and an unserved kind (retryable).
func compareLive(ctx context.Context, op *engine.Operation, it contentItem, update bool, item *v1alpha1.RestorePreviewItem) error {
	if it.ns == "" {
		item.Outcome = v1alpha1.PreviewCreate
		return nil
	}
	backedUp := &unstructured.Unstructured{Object: it.obj}
	gvk := backedUp.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		item.Outcome, item.Reason = v1alpha1.PreviewUnknown, "the backed-up item names no apiVersion and kind"
		return nil
	}
	mapping, err := op.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		item.Outcome, item.Reason = v1alpha1.PreviewUnknown, fmt.Sprintf("the cluster does not serve %s", gvk.GroupKind())
		return nil
	case err != nil:
		return apiError{fmt.Errorf("mapping %s: %w", gvk, err)}
	case mapping.Resource.GroupResource() != it.gr || mapping.Scope.Name() != meta.RESTScopeNameNamespace:
		item.Outcome, item.Reason = v1alpha1.PreviewUnknown, fmt.Sprintf("its apiVersion and kind (%s) are not those of its place in the backup (%s)", gvk, it.gr)
		return nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err = op.APIReader.Get(ctx, client.ObjectKey{Namespace: it.ns, Name: it.name}, live)
	switch {
	case apierrors.IsNotFound(err):
		item.Outcome = v1alpha1.PreviewCreate
		return nil
	case meta.IsNoMatchError(err):
		item.Outcome, item.Reason = v1alpha1.PreviewUnknown, fmt.Sprintf("the cluster does not serve %s", gvk.GroupKind())
		return nil
	case apierrors.IsForbidden(err) || errors.As(err, new(*engine.SafetyViolation)):
		item.Outcome, item.Reason = v1alpha1.PreviewUnknown, fmt.Sprintf("nacflow may not read %s: %v", it.gr, err)
		return nil
	case err != nil:
		return apiError{fmt.Errorf("reading %s %s: %w", it.gr, it.name, err)}
	}
	fields := changedFields(it.obj, live.Object)
	switch {
	case len(fields) == 0:
		item.Outcome, item.Reason = v1alpha1.PreviewSkip, "exists, as backed up"
	case update:
		item.Outcome, item.Fields = v1alpha1.PreviewUpdate, fields
	default:
		item.Outcome, item.Reason = v1alpha1.PreviewSkip, "exists and differs; existingResourcePolicy none leaves it as it is"
		item.Fields = fields
	}
	return nil
}

// Fields a restore never compares: the API server's own metadata, and
// Velero's restore labels.
var (
	noiseTop      = []string{"status", "apiVersion", "kind"}
	noiseMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "selfLink", "ownerReferences", "namespace", "generateName"}
	noiseLabels      = []string{velerov1.BackupNameLabel, velerov1.RestoreNameLabel}
	noiseAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration"}
)

// withoutNoise returns obj without the noise fields, sharing what it keeps
// with obj (which is not changed); whatever obj holds, nothing panics.
func withoutNoise(obj map[string]any) map[string]any {
	without := func(m map[string]any, keys []string) map[string]any {
		c := make(map[string]any, len(m))
		for k, v := range m {
			if !slices.Contains(keys, k) {
				c[k] = v
			}
		}
		return c
	}
	c := without(obj, noiseTop)
	md, ok := c["metadata"].(map[string]any)
	if !ok {
		return c
	}
	md = without(md, noiseMetadata)
	for key, drop := range map[string][]string{"labels": noiseLabels, "annotations": noiseAnnotations} {
		if m, ok := md[key].(map[string]any); ok {
			if m = without(m, drop); len(m) > 0 {
				md[key] = m
			} else {
				delete(md, key)
			}
		}
	}
	c["metadata"] = md
	return c
}

// changedFields returns the dotted paths (sorted, the first
// maxPreviewFields) where backedUp and live differ, noise left out. Maps are
// compared key by key; lists and scalars whole.
func changedFields(backedUp, live map[string]any) []string {
	var out []string
	diffInto(&out, "", withoutNoise(backedUp), withoutNoise(live))
	sort.Strings(out)
	if len(out) > maxPreviewFields {
		out = out[:maxPreviewFields]
	}
	for i := range out {
		out[i] = text.Truncate(out[i], maxPreviewFieldLen)
	}
	return out
}

// diffInto appends to out the paths under prefix where a and b differ.
func diffInto(out *[]string, prefix string, a, b any) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, prefix)
		}
		return
	}
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	for k := range keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		diffInto(out, p, am[k], bm[k])
	}
}

// count adds an item of outcome to pv's counts.
func count(pv *v1alpha1.RestorePreview, outcome string) {
	pv.Total++
	switch outcome {
	case v1alpha1.PreviewCreate:
		pv.Create++
	case v1alpha1.PreviewSkip:
		pv.Skip++
	case v1alpha1.PreviewUpdate:
		pv.Update++
	case v1alpha1.PreviewExcluded:
		pv.Excluded++
	default:
		pv.Unknown++
	}
}

// previewOrder ranks outcomes in the listed items: what changes first.
var previewOrder = map[string]int{v1alpha1.PreviewUpdate: 0, v1alpha1.PreviewCreate: 1, v1alpha1.PreviewExcluded: 2, v1alpha1.PreviewUnknown: 3, v1alpha1.PreviewSkip: 4}

// firstItems returns the first maxPreviewItems of items by outcome
// (previewOrder), resource and name.
func firstItems(items []v1alpha1.RestorePreviewItem) []v1alpha1.RestorePreviewItem {
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if previewOrder[a.Outcome] != previewOrder[b.Outcome] {
			return previewOrder[a.Outcome] < previewOrder[b.Outcome]
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Name < b.Name
	})
	return items[:min(len(items), maxPreviewItems)]
}

// Doc implements engine.Documented.
func (*PreviewRestore) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "For a NonAdminRestore with spec.preview: streams the backup's contents (a DownloadRequest BackupContents; at most 256 MiB, items of 1 MiB) and tells, for every item Velero would restore into the namespace, what the restore would do: create (absent), skip (exists; existingResourcePolicy none, or identical), update (exists and differs, with existingResourcePolicy update: the changed fields named), excluded (the restore's filters, nacflow's exclusions, the tenant role, the requester's rights, or an item changed since nacflow verified a backup in a tenant's bucket: the rule named; the restore judge the pre-check and Velero's restore item action ask too) or unknown (the live object could not be read). Live objects are read in the NonAdminRestore's namespace only. Writes status.preview (counts and the first 100 items); makes no Velero Restore.",
		Outputs: []string{"total: items previewed", "create, skip, update, excluded: items by outcome"},
		Errors:  "contents Velero did not serve in time or that could not be read are terminal (the preview fails saying why); " + apiRetried,
		Waits:   true,
	}
}
