package phases

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/text"
)

// Defaults and names of restore tests.
const (
	// defaultMaxRestoreTests is how many restore tests may run at once in
	// the cluster, all tenants together, when args.maxConcurrent is unset.
	defaultMaxRestoreTests = 2
	// restoreTestRecheck is how often a test waiting for its turn (its
	// namespace's sandbox still in use, or the cluster's cap reached) looks
	// again: sandboxes are not watched.
	restoreTestRecheck = 10 * time.Second
	// SandboxQuotaName is the ResourceQuota that keeps the sandbox empty of
	// workloads.
	SandboxQuotaName = "nacflow-restore-test"
)

// DefaultRestoreTestResources are the resources a restore test restores
// when args.includedResources is unset (Velero's includedResources): an
// allow-list of Kubernetes' own kinds that do nothing by themselves once
// no Pod may run and no volume be claimed. Left out, and why: Pods and
// PersistentVolumeClaims (the sandbox's quota refuses them: nothing runs,
// nothing is provisioned); ResourceQuotas and LimitRanges (the admin's: a
// tenant's restore does not bring them back); RoleBindings (a tenant's binding would grant
// the tenant the sandbox); Services, Endpoints, EndpointSlices and
// Ingresses (they route traffic: a Service's externalIPs or an Ingress's
// host would take the tenant's live traffic, or another's); and every
// custom resource (an operator acts on it wherever it is: a database
// claim, a certificate order, a cloud bucket).
var DefaultRestoreTestResources = []string{
	"configmaps", "secrets", "serviceaccounts",
	"roles.rbac.authorization.k8s.io",
	"deployments.apps", "statefulsets.apps", "daemonsets.apps", "replicasets.apps",
	"jobs.batch", "cronjobs.batch",
	"horizontalpodautoscalers.autoscaling", "poddisruptionbudgets.policy",
	"networkpolicies.networking.k8s.io",
}

// sandboxQuota is the hard quota of a sandbox: no Pod, no claim, no
// storage, no Service exposed on nodes or a load balancer.
var sandboxQuota = corev1.ResourceList{
	corev1.ResourcePods:                   resource.MustParse("0"),
	corev1.ResourcePersistentVolumeClaims: resource.MustParse("0"),
	corev1.ResourceRequestsStorage:        resource.MustParse("0"),
	corev1.ResourceServicesLoadBalancers:  resource.MustParse("0"),
	corev1.ResourceServicesNodePorts:      resource.MustParse("0"),
}

// TestRestoreArgs are the args of TestRestore.
type TestRestoreArgs struct {
	// Every tests one completed backup of the namespace in every: 1 tests
	// each, 3 every third; 0 (the default) turns restore tests off.
	Every int `json:"every,omitempty" doc:"test one completed backup of the namespace in every N (1: each; 0, the default: restore tests are off)"`
	// Name is the Velero Backup, usually {{ .Phases.createBackup.Output.name }}.
	Name string `json:"name" doc:"the Velero Backup, usually {{ .Phases.createBackup.Output.name }}"`
	// IncludedResources replaces DefaultRestoreTestResources (Velero's
	// includedResources form: "configmaps", "deployments.apps").
	IncludedResources []string `json:"includedResources,omitempty" doc:"the resources restored into the sandbox, as Velero's includedResources (default: Kubernetes' own kinds that do nothing once no Pod runs; docs/admin-guide.md)"`
	// MaxConcurrent bounds the restore tests running at once in the cluster,
	// all tenants together (default 2).
	MaxConcurrent int `json:"maxConcurrent,omitempty" doc:"how many restore tests may run at once in the cluster, all tenants together (default 2)"`
	ServeTimeoutArgs
}

// TestRestore tests that a NonAdminBackup's finished backup restores, and
// how long it takes (an admin's opt-in, args.every; KubeStash's
// BackupVerifier is the model, OADP NAC and Velero have none). For one
// Completed backup in every args.every of the namespace, it:
//
//  1. takes the namespace's sandbox, v1alpha1.RestoreTestSandbox(ns),
//     creating that Namespace labelled openshift.io/oadp-nacflow-restore-test
//     with a ResourceQuota of no Pods, claims, storage, NodePorts or load
//     balancers, and Pod Security "restricted". One name per namespace
//     means one test at a time per tenant; args.maxConcurrent bounds them
//     in the cluster. Tenants have no binding there, and none is restored.
//  2. creates a Velero Restore of the backup mapped into the sandbox, of
//     args.includedResources (DefaultRestoreTestResources), carrying the
//     NonAdminRestore labels velero-plugin-nacflow follows, so every item
//     is judged by the tenant's role as in a real restore of its namespace;
//  3. when Velero has finished, compares the items it created or updated
//     (the restore's resource list) with the backup's items of those kinds
//     (the backup's resource list, less what Kubernetes makes in every
//     namespace), and measures the RTO: the Restore's creation to its
//     completion;
//  4. records status.restoreTest and condition RestoreTested (True, or
//     False with a Warning event RestoreTestFailed naming what is missing),
//     then, on its next run, deletes the Velero Restore and the sandbox.
//
// A test never fails the plan: what goes wrong is its result (Unknown when
// it could not finish: Velero did not serve a list, a Namespace of the
// sandbox's name is not nacflow's). Backups synced from the bucket are not
// tested; a scheduled run is. Every step is idempotent: after a restart it
// finds its sandbox and Restore by name and label and goes on.
//
// Outputs: result, rto (seconds), itemsExpected, itemsRestored. Errors: API
// errors are retryable.
type TestRestore struct {
	restoreRules
	tools tools
	// starting serialises the cap check and the sandbox creation of this
	// process (the leader alone runs phases).
	starting *sync.Mutex
}

// SafetyExceptions implements engine.Excepted: the sandbox is a namespace
// of its own, and the cluster's cap counts every tenant's.
func (*TestRestore) SafetyExceptions() []engine.Exception {
	ns := schema.GroupKind{Kind: "Namespace"}
	out := []engine.Exception{
		{Verbs: []string{"get", "create", "delete"}, Kind: ns, Scope: engine.InRestoreTestSandbox,
			Why: "a restore test restores the backup into a sandbox namespace of its own, and deletes it after"},
		{Verbs: []string{"list"}, Kind: ns, Scope: engine.InAnyNamespace,
			Why: "the sandboxes of every tenant count against the cluster's cap on restore tests (label openshift.io/oadp-nacflow-restore-test)"},
		{Verbs: []string{"create"}, Kind: schema.GroupKind{Kind: "ResourceQuota"}, Scope: engine.InRestoreTestSandbox,
			Why: "the sandbox's quota lets no Pod run and no volume be claimed"},
		{Verbs: []string{"list"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminBackup").GroupKind(), Scope: engine.InOperationNamespace,
			Why: "one completed backup in every args.every of the namespace is tested"},
	}
	for _, k := range sandboxReadKinds {
		out = append(out, engine.Exception{Verbs: []string{"get"}, Kind: k, Scope: engine.InRestoreTestSandbox,
			Why: "an item Velero skipped counts as restored when it is in the sandbox all the same (made there by Kubernetes first)"})
	}
	return out
}

// Run implements phaseFunc.
func (f *TestRestore) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *TestRestoreArgs) (engine.Result, error) {
	if a.Every <= 0 {
		return engine.Done("restore tests are off (args.every is 0)", nil), nil
	}
	sandbox := v1alpha1.RestoreTestSandbox(nab.Namespace)
	restoreName := v1alpha1.NACObjectName(nab.Namespace+"-rt", nab.Name, op.UUID)
	if rt := nab.Status.RestoreTest; rt != nil && rt.VeleroRestore == restoreName {
		return f.cleanUp(ctx, op, nab, sandbox, restoreName)
	}
	if p := nab.Status.Plan; p != nil && p.Action != "backup" && nab.Labels[v1alpha1.NasOriginNACUUIDLabel] == "" {
		return engine.Done("a backup synced from object storage is not restore-tested", nil), nil
	}
	if a.Name == "" {
		return engine.Done("no Velero Backup to test", nil), nil
	}
	b := &velerov1.Backup{}
	found, err := getOwned(ctx, op.Client, op, "restore-test", "Backup", a.Name, b, linkedUUIDs(op)...)
	if err != nil || !found {
		return engine.Done(fmt.Sprintf("Velero Backup %s not found: nothing to test", a.Name), nil), err
	}
	if !v1alpha1.BackupFinished(b.Status.Phase) {
		return engine.WaitWatched(fmt.Sprintf("waiting for Velero Backup %s to finish before its restore test (%s)", b.Name, phaseOr(string(b.Status.Phase))), 0), nil
	}
	if b.Status.Phase != velerov1.BackupPhaseCompleted {
		return engine.Done(fmt.Sprintf("Velero Backup %s is %s: only Completed backups are restore-tested", b.Name, b.Status.Phase), nil), nil
	}
	if !meta.IsStatusConditionPresentAndEqual(nab.Status.Conditions, v1alpha1.ConditionRestoreTested, metav1.ConditionUnknown) {
		due, why, err := f.due(ctx, op, nab, a.Every)
		if err != nil {
			return engine.Result{}, err
		}
		if !due {
			return engine.Done(why, nil), nil
		}
	}
	vr := &velerov1.Restore{}
	found, err = getOwned(ctx, op.Client, op, "restore-test", "Restore", restoreName, vr)
	if err != nil {
		return engine.Result{}, err
	}
	if !found {
		res, err := f.start(ctx, op, nab, a, b, sandbox, restoreName)
		if err != nil || res != nil {
			return *orDone(res), err
		}
		if _, err := getOwned(ctx, op.APIReader, op, "restore-test", "Restore", restoreName, vr); err != nil {
			return engine.Result{}, err
		}
	}
	if !restoreFinished(vr.Status.Phase) {
		return engine.WaitWatched(fmt.Sprintf("restore test: Velero Restore %s of Velero Backup %s into sandbox %s is %s",
			restoreName, b.Name, sandbox, phaseOr(string(vr.Status.Phase))), 0), nil
	}
	return f.judge(ctx, op, nab, a, b, vr, sandbox)
}

// autoToken reports whether the Secret name is one Velero leaves to
// Kubernetes: "<account>-token-<suffix>" of a ServiceAccount of the backup
// (Velero's SecretAction skips the token Secrets Kubernetes made).
func autoToken(name string, accounts []string) bool {
	for _, sa := range accounts {
		if strings.HasPrefix(name, sa+"-token-") {
			return true
		}
	}
	return false
}

// inSandbox reports whether the item name of the resource list key is in
// the sandbox. An item of a kind the API server does not know, or that the
// safety rule or RBAC does not let the function read (a kind an admin added
// to includedResources), is reported absent.
func inSandbox(ctx context.Context, op *engine.Operation, key, sandbox, name string) (bool, error) {
	gv, kind := splitKey(key)
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gv.WithKind(kind))
	err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: sandbox, Name: name}, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err), engine.IsSafetyViolation(err):
		return false, nil
	}
	return false, fmt.Errorf("reading %s %s/%s: %w", key, sandbox, name, err)
}

// sandboxReadKinds are the kinds whose items TestRestore may look for in
// the sandbox: those of DefaultRestoreTestResources, and the claims,
// Services, quotas and limits an admin may add.
var sandboxReadKinds = []schema.GroupKind{
	{Kind: "ConfigMap"}, {Kind: "Secret"}, {Kind: "ServiceAccount"}, {Kind: "PersistentVolumeClaim"}, {Kind: "Service"},
	{Kind: "ResourceQuota"}, {Kind: "LimitRange"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"},
	{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"}, {Group: "apps", Kind: "ReplicaSet"},
	{Group: "batch", Kind: "Job"}, {Group: "batch", Kind: "CronJob"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, {Group: "policy", Kind: "PodDisruptionBudget"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"},
}

// orDone returns r, or an empty Result when r is nil.
func orDone(r *engine.Result) *engine.Result {
	if r == nil {
		return &engine.Result{}
	}
	return r
}

// restoreFinished reports whether Velero is done with a Restore in phase p.
func restoreFinished(p velerov1.RestorePhase) bool {
	switch p {
	case velerov1.RestorePhaseCompleted, velerov1.RestorePhasePartiallyFailed, velerov1.RestorePhaseFailed, velerov1.RestorePhaseFailedValidation:
		return true
	}
	return false
}

// due reports whether nab's backup is the one in every to test: its
// ordinal among the namespace's NonAdminBackups whose Velero Backup
// Completed, in order of creation, is a multiple of every. The ordinal
// depends on the NonAdminBackups alone, never on which tests ran or when,
// so a test decided is decided the same way after a restart; deleting an
// older NonAdminBackup shifts the ordinals of the newer ones.
func (f *TestRestore) due(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, every int) (bool, string, error) {
	if every == 1 {
		return true, "", nil
	}
	list := &v1alpha1.NonAdminBackupList{}
	if err := op.Client.List(ctx, list, client.InNamespace(nab.Namespace)); err != nil {
		return false, "", fmt.Errorf("listing the NonAdminBackups of %s: %w", nab.Namespace, err)
	}
	ordinal := 0
	for i := range list.Items {
		n := &list.Items[i]
		if n.UID == nab.UID || !createdBefore(n, nab) {
			continue
		}
		if vb := n.Status.VeleroBackup; vb != nil && vb.Status != nil && vb.Status.Phase == velerov1.BackupPhaseCompleted {
			ordinal++
		}
	}
	ordinal++ // nab's own, Completed
	if ordinal%every != 0 {
		return false, fmt.Sprintf("restore test not due: completed backup %d of the namespace, tested every %d", ordinal, every), nil
	}
	return true, "", nil
}

// createdBefore orders NonAdminBackups by creation, then name.
func createdBefore(a, b *v1alpha1.NonAdminBackup) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	return ta.Before(&tb) || ta.Equal(&tb) && a.Name < b.Name
}

// SandboxNamespace returns the Namespace a restore test of nab creates: named
// v1alpha1.RestoreTestSandbox(nab's namespace), labelled with the restore-test
// label (value uuid, the operation's NACUUID), nacflow's managed-by label and
// Pod Security `restricted`, annotated with nab's name and namespace. The
// admission policy config/admission/sandboxes.yaml lets nacflow's
// ServiceAccount create no other Namespace.
func SandboxNamespace(nab *v1alpha1.NonAdminBackup, uuid string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.RestoreTestSandbox(nab.Namespace),
		Labels: map[string]string{
			v1alpha1.RestoreTestLabel:            uuid,
			v1alpha1.ManagedByLabel:              v1alpha1.ManagedByLabelValue,
			"pod-security.kubernetes.io/enforce": "restricted",
		},
		Annotations: map[string]string{v1alpha1.NabOriginNameAnnotation: nab.Name, v1alpha1.NabOriginNamespaceAnnotation: nab.Namespace},
	}}
}

// start takes the sandbox and creates the Velero Restore into it. It
// returns a Result when the test cannot start now (its turn, or a verdict
// recorded), nil once the Restore exists.
func (f *TestRestore) start(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *TestRestoreArgs,
	b *velerov1.Backup, sandbox, restoreName string) (*engine.Result, error) {
	f.starting.Lock()
	defer f.starting.Unlock()
	ns := &corev1.Namespace{}
	found, err := read(ctx, op.APIReader, "", sandbox, ns)
	if err != nil {
		return nil, err
	}
	switch {
	case found && ns.Labels[v1alpha1.RestoreTestLabel] == "":
		r := f.record(op, nab, &v1alpha1.RestoreTest{Result: v1alpha1.RestoreTestUnknown, Sandbox: sandbox,
			Message: fmt.Sprintf("Namespace %s exists and is not a nacflow sandbox (no label %s): the restore test cannot use it", sandbox, v1alpha1.RestoreTestLabel)})
		return &r, nil
	case found && ns.Labels[v1alpha1.RestoreTestLabel] != op.UUID:
		setCondition(nab, v1alpha1.ConditionRestoreTested, metav1.ConditionUnknown, v1alpha1.ReasonRestoreTestUnavailable,
			fmt.Sprintf("waiting: sandbox %s is in use by the restore test of NonAdminBackup %s", sandbox, ns.Annotations[v1alpha1.NabOriginNameAnnotation]))
		r := engine.Wait(fmt.Sprintf("restore test waits for sandbox %s, in use by another restore test of the namespace", sandbox), restoreTestRecheck)
		return &r, nil
	case found && !ns.DeletionTimestamp.IsZero():
		r := engine.Wait(fmt.Sprintf("restore test waits for sandbox %s to finish terminating", sandbox), restoreTestRecheck)
		return &r, nil
	case !found:
		maxTests := a.MaxConcurrent
		if maxTests <= 0 {
			maxTests = defaultMaxRestoreTests
		}
		all := &corev1.NamespaceList{}
		if err := op.APIReader.List(ctx, all, client.HasLabels{v1alpha1.RestoreTestLabel}); err != nil {
			return nil, fmt.Errorf("listing restore-test sandboxes: %w", err)
		}
		// Sandboxes going already no longer run a test, and a labelled
		// Namespace not named as a sandbox is none of nacflow's: a
		// Namespace stuck terminating, or a label copied by hand, never
		// stops every tenant's tests.
		running := 0
		for i := range all.Items {
			o := &all.Items[i]
			if o.DeletionTimestamp.IsZero() && o.Name == v1alpha1.RestoreTestSandbox(o.Annotations[v1alpha1.NabOriginNamespaceAnnotation]) {
				running++
			}
		}
		if running >= maxTests {
			setCondition(nab, v1alpha1.ConditionRestoreTested, metav1.ConditionUnknown, v1alpha1.ReasonRestoreTestUnavailable,
				fmt.Sprintf("waiting: %d restore tests run in the cluster, the most args.maxConcurrent allows", running))
			r := engine.Wait(fmt.Sprintf("restore test waits: %d of at most %d restore tests run in the cluster", running, maxTests), restoreTestRecheck)
			return &r, nil
		}
		ns = SandboxNamespace(nab, op.UUID)
		if err := op.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating sandbox namespace %s: %w", sandbox, err)
		}
	}
	setCondition(nab, v1alpha1.ConditionRestoreTested, metav1.ConditionUnknown, v1alpha1.ReasonRestoreTestUnavailable,
		fmt.Sprintf("restore test running: Velero Backup %s is restored into sandbox %s", b.Name, sandbox))
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: sandbox, Name: SandboxQuotaName,
		Labels: map[string]string{v1alpha1.RestoreTestLabel: op.UUID}},
		Spec: corev1.ResourceQuotaSpec{Hard: sandboxQuota.DeepCopy()}}
	if err := op.Client.Create(ctx, quota); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ResourceQuota %s/%s: %w", sandbox, SandboxQuotaName, err)
	}
	included := a.IncludedResources
	if len(included) == 0 {
		included = DefaultRestoreTestResources
	}
	spec := velerov1.RestoreSpec{
		BackupName:         b.Name,
		IncludedNamespaces: []string{nab.Namespace},
		NamespaceMapping:   map[string]string{nab.Namespace: sandbox},
		IncludedResources:  slices.Clone(included),
		RestorePVs:         new(false),
	}
	for _, r := range restoreExcluded {
		spec.ExcludedResources = append(spec.ExcludedResources, r)
	}
	m := op.ObjectMeta(restoreName)
	m.Labels[v1alpha1.RestoreTestLabel] = op.UUID
	// velero-plugin-nacflow judges a restore carrying the NonAdminRestore
	// label: every item is held to the tenant role, as in a real restore.
	m.Labels[v1alpha1.NarOriginNACUUIDLabel] = op.UUID
	m.Annotations[v1alpha1.NarOriginNamespaceAnnotation] = nab.Namespace
	f.pluginSettings(m.Annotations)
	if _, _, err := createOrAdopt(ctx, op, f.tools.recent, "Velero Restore", &velerov1.Restore{ObjectMeta: m, Spec: spec}); err != nil {
		return nil, err
	}
	return nil, nil
}

// judge compares what the finished Velero Restore vr brought back with the
// backup b and records the verdict.
func (f *TestRestore) judge(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *TestRestoreArgs,
	b *velerov1.Backup, vr *velerov1.Restore, sandbox string) (engine.Result, error) {
	rt := &v1alpha1.RestoreTest{VeleroRestore: vr.Name, Sandbox: sandbox}
	if c := vr.Status.CompletionTimestamp; c != nil {
		rt.RTO = &metav1.Duration{Duration: c.Sub(vr.CreationTimestamp.Time).Round(time.Second)}
	}
	if failed := restoreFailure(vr, b.Name); failed != "" {
		rt.Result, rt.Message = v1alpha1.RestoreTestFailed, failed
		return f.record(op, nab, rt), nil
	}
	lists, wait, err := f.resourceLists(ctx, op, nab, a, b, vr, sandbox)
	switch {
	case err != nil:
		return engine.Result{}, err
	case wait != nil:
		return *wait, nil
	case lists.unknown != "":
		rt.Result, rt.Message = v1alpha1.RestoreTestUnknown, lists.unknown
		return f.record(op, nab, rt), nil
	}
	missing, shown, err := lists.tally(ctx, op, a, sandbox, rt)
	if err != nil {
		return engine.Result{}, err
	}
	if rt.ItemsRestored == rt.ItemsExpected {
		rt.Result = v1alpha1.RestoreTestSucceeded
		rt.Message = fmt.Sprintf("Velero Backup %s restored into sandbox %s: %d of %d items", b.Name, sandbox, rt.ItemsRestored, rt.ItemsExpected)
		if rt.RTO != nil {
			rt.Message += fmt.Sprintf("; RTO %s", rt.RTO.Duration)
		}
		return f.record(op, nab, rt), nil
	}
	rt.Result = v1alpha1.RestoreTestFailed
	rt.Message = fmt.Sprintf("Velero Restore %s of Velero Backup %s is %s with %d of %d items restored; missing: %s", vr.Name, b.Name,
		vr.Status.Phase, rt.ItemsRestored, rt.ItemsExpected, strings.Join(missing, ", "))
	if len(shown) > 0 {
		rt.Message += "; not restored: " + strings.Join(shown, ", ")
	}
	rt.Message = text.Truncate(rt.Message, 1000)
	return f.record(op, nab, rt), nil
}

// restoreFailure says how Velero Restore vr of Velero Backup backup
// failed ("" when it did not fail).
func restoreFailure(vr *velerov1.Restore, backup string) string {
	if vr.Status.Phase != velerov1.RestorePhaseFailed && vr.Status.Phase != velerov1.RestorePhaseFailedValidation {
		return ""
	}
	msg := fmt.Sprintf("Velero Restore %s of Velero Backup %s is %s", vr.Name, backup, vr.Status.Phase)
	if reason := vr.Status.FailureReason; reason != "" {
		msg += ": " + printable(text.Truncate(reason, 300))
	}
	if errs := vr.Status.ValidationErrors; len(errs) > 0 {
		msg += ": " + printable(text.Truncate(strings.Join(errs, "; "), 300))
	}
	return msg
}

// testLists are the resource lists a restore test compares: the backup's
// (expected) and the restore's (got).
type testLists struct {
	expected *resourceList
	got      *restoredItems
	// unknown says why they could not be read ("" when they were).
	unknown string
}

// resourceLists asks Velero for the resource lists of backup b and
// restore vr (DownloadRequests of their own) and reads them; the wait
// while Velero serves them. Errors: the API server's.
func (f *TestRestore) resourceLists(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *TestRestoreArgs,
	b *velerov1.Backup, vr *velerov1.Restore, sandbox string) (testLists, *engine.Result, error) {
	timeout := a.serveTimeout()
	base := v1alpha1.NACObjectName(nab.Namespace+"-rt", nab.Name, op.UUID)
	backupList, err := backupFileRequest(ctx, op, f.tools.recent, "restore-test", base+"b", velerov1.DownloadTargetKindBackupResourceList, b.Name)
	if err != nil {
		return testLists{}, nil, err
	}
	restoreList, err := backupFileRequest(ctx, op, f.tools.recent, "restore-test", base+"r", velerov1.DownloadTargetKindRestoreResourceList, vr.Name)
	if err != nil {
		return testLists{}, nil, err
	}
	for _, w := range []struct {
		dr   *velerov1.DownloadRequest
		file string
	}{{backupList, "the resource list of Backup " + b.Name}, {restoreList, "the resource list of Restore " + vr.Name}} {
		if wait, expired := awaitServed(w.dr, w.file, timeout, f.tools.serving); expired {
			return testLists{unknown: fmt.Sprintf("Velero did not serve %s within %s", w.file, timeout)}, nil, nil
		} else if wait != nil {
			return testLists{}, wait, nil
		}
	}
	expected, err := downloadResourceList(ctx, f.tools.store, backupList.Status.DownloadURL, nab.Namespace)
	if err != nil {
		return testLists{unknown: fmt.Sprintf("downloading the resource list of Backup %s: %v", b.Name, err)}, nil, nil
	}
	got, err := downloadRestoredItems(ctx, f.tools.store, restoreList.Status.DownloadURL, sandbox)
	if err != nil {
		return testLists{unknown: fmt.Sprintf("downloading the resource list of Restore %s: %v", vr.Name, err)}, nil, nil
	}
	return testLists{expected: expected, got: got}, nil, nil
}

// tally counts, into rt, the items of the test's kinds the backup holds
// and those in the sandbox, and returns the kinds missing ("<n> <key>",
// sorted) and the first items Velero did not restore. An item Velero did
// not create or update counts when it is in the sandbox all the same
// (Kubernetes or the platform made it in every new namespace first: the
// default ServiceAccount, the root CA ConfigMap), or when Velero leaves it
// to Kubernetes by design (the token Secrets Kubernetes made for a
// ServiceAccount). Errors: the API server's.
func (l testLists) tally(ctx context.Context, op *engine.Operation, a *TestRestoreArgs, sandbox string, rt *v1alpha1.RestoreTest) (missing, shown []string, err error) {
	inScope := testScope(op, a)
	present, leftToKubernetes := map[string]int{}, map[string]int{}
	for _, it := range l.got.notRestored {
		if !inScope(it.key) {
			continue
		}
		if it.key == "v1/Secret" && autoToken(it.name, l.expected.serviceAccounts) {
			leftToKubernetes[it.key]++
			continue
		}
		found, err := inSandbox(ctx, op, it.key, sandbox, it.name)
		if err != nil {
			return nil, nil, err
		}
		if found {
			present[it.key]++
			continue
		}
		shown = keepSmallest(shown, printable(fmt.Sprintf("%s %s (%s)", it.key, it.name, it.result)), maxListedItems)
	}
	for key, n := range l.expected.counts {
		if !inScope(key) {
			continue
		}
		n -= min(leftToKubernetes[key], n)
		rt.ItemsExpected += int32(n)
		r := min(l.got.restored[key]+present[key], n)
		rt.ItemsRestored += int32(r)
		if r < n {
			missing = append(missing, fmt.Sprintf("%d %s", n-r, key))
		}
	}
	sort.Strings(missing)
	return missing, shown, nil
}

// testScope reports whether an item of key ("<group/version>/<Kind>")
// is of the kinds a restore test restores (args.includedResources, less
// what every tenant restore excludes).
func testScope(op *engine.Operation, a *TestRestoreArgs) func(key string) bool {
	included := a.IncludedResources
	if len(included) == 0 {
		included = DefaultRestoreTestResources
	}
	return func(key string) bool {
		gv, kind := splitKey(key)
		mapping, err := op.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
		if err != nil {
			return false
		}
		gr := mapping.Resource.GroupResource()
		return slices.Contains(included, gr.String()) && !slices.Contains(restoreExcluded, gr.String())
	}
}

// record writes rt (its time now) and the RestoreTested condition on nab,
// with a Warning event unless it succeeded, and returns the Result that
// has the runner write them and come back at once to clean up.
func (f *TestRestore) record(op *engine.Operation, nab *v1alpha1.NonAdminBackup, rt *v1alpha1.RestoreTest) engine.Result {
	rt.Time = metav1.Now()
	nab.Status.RestoreTest = rt
	status, reason := metav1.ConditionUnknown, v1alpha1.ReasonRestoreTestUnavailable
	switch rt.Result {
	case v1alpha1.RestoreTestSucceeded:
		status, reason = metav1.ConditionTrue, v1alpha1.ReasonRestoreTestSucceeded
	case v1alpha1.RestoreTestFailed:
		status, reason = metav1.ConditionFalse, v1alpha1.ReasonRestoreTestFailed
	}
	setCondition(nab, v1alpha1.ConditionRestoreTested, status, reason, rt.Message)
	if status != metav1.ConditionTrue && f.tools.recorder != nil {
		f.tools.recorder.Event(op.Object, corev1.EventTypeWarning, reasonOf(rt.Result), rt.Message)
	}
	if rt.VeleroRestore == "" {
		return engine.Done("restore test: "+rt.Message, testOutput(rt))
	}
	return engine.Wait("restore test "+strings.ToLower(rt.Result)+": deleting the sandbox", time.Second)
}

// reasonOf is the event reason of a restore test's result.
func reasonOf(result string) string {
	if result == v1alpha1.RestoreTestFailed {
		return v1alpha1.ReasonRestoreTestFailed
	}
	return v1alpha1.ReasonRestoreTestUnavailable
}

// testOutput is the phase output of a recorded restore test.
func testOutput(rt *v1alpha1.RestoreTest) map[string]string {
	out := map[string]string{"result": rt.Result, "itemsExpected": fmt.Sprint(rt.ItemsExpected), "itemsRestored": fmt.Sprint(rt.ItemsRestored)}
	if rt.RTO != nil {
		out["rto"] = fmt.Sprint(int64(rt.RTO.Seconds()))
	}
	return out
}

// cleanUp deletes the recorded test's Velero Restore and sandbox (each one
// already gone is fine) and ends the phase with the recorded verdict.
func (f *TestRestore) cleanUp(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, sandbox, restoreName string) (engine.Result, error) {
	if err := RemoveRestoreTestObjects(ctx, op, sandbox, restoreName); err != nil {
		return engine.Result{}, err
	}
	rt := nab.Status.RestoreTest
	return engine.Done("restore test "+strings.ToLower(rt.Result)+", sandbox deleted: "+rt.Message, testOutput(rt)), nil
}

// RemoveRestoreTestObjects deletes, with op's guarded client, the Velero
// Restore restoreName of op's restore test (when it is op's) and its
// sandbox Namespace (when it carries op's restore-test label); either
// already gone is fine. Velero deletes the Restore's files from object
// storage with it. Errors: the API server's.
func RemoveRestoreTestObjects(ctx context.Context, op *engine.Operation, sandbox, restoreName string) error {
	vr := &velerov1.Restore{}
	found, err := read(ctx, op.APIReader, op.OADPNamespace, restoreName, vr)
	if err != nil {
		return err
	}
	if found && op.Owns(vr) {
		if err := deleteOwn(ctx, op, vr); err != nil {
			return err
		}
	}
	ns := &corev1.Namespace{}
	found, err = read(ctx, op.APIReader, "", sandbox, ns)
	if err != nil || !found || ns.Labels[v1alpha1.RestoreTestLabel] != op.UUID || !ns.DeletionTimestamp.IsZero() {
		return err
	}
	return deleteOwn(ctx, op, ns)
}

// RemoveRestoreTestArgs are the args of RemoveRestoreTest.
type RemoveRestoreTestArgs struct{}

// RemoveRestoreTest removes what a NonAdminBackup's restore test left when
// the NonAdminBackup goes (its finalize and delete actions): the Velero
// Restore of the test and the sandbox Namespace, once Velero has finished
// the Restore — deleting the sandbox while Velero still restores into it
// would let Velero create the namespace again, without its quota. Nothing
// to remove is not an error.
//
// Errors: API errors are retryable.
type RemoveRestoreTest struct{}

// SafetyExceptions implements engine.Excepted: TestRestore's sandbox.
func (*RemoveRestoreTest) SafetyExceptions() []engine.Exception {
	return []engine.Exception{{Verbs: []string{"get", "delete"}, Kind: schema.GroupKind{Kind: "Namespace"}, Scope: engine.InRestoreTestSandbox,
		Why: "the sandbox of the NonAdminBackup's restore test goes with it"}}
}

// Run implements phaseFunc.
func (f *RemoveRestoreTest) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, _ *RemoveRestoreTestArgs) (engine.Result, error) {
	sandbox := v1alpha1.RestoreTestSandbox(nab.Namespace)
	restoreName := v1alpha1.NACObjectName(nab.Namespace+"-rt", nab.Name, op.UUID)
	vr := &velerov1.Restore{}
	found, err := read(ctx, op.APIReader, op.OADPNamespace, restoreName, vr)
	if err != nil {
		return engine.Result{}, err
	}
	if found && op.Owns(vr) && !restoreFinished(vr.Status.Phase) && vr.DeletionTimestamp.IsZero() {
		return engine.WaitWatched(fmt.Sprintf("waiting for Velero to finish restore test %s before deleting sandbox %s (%s)",
			restoreName, sandbox, phaseOr(string(vr.Status.Phase))), 0), nil
	}
	if err := RemoveRestoreTestObjects(ctx, op, sandbox, restoreName); err != nil {
		return engine.Result{}, err
	}
	return engine.Done(fmt.Sprintf("no restore test left: Velero Restore %s and sandbox %s deleted or absent", restoreName, sandbox), nil), nil
}

// Doc implements engine.Documented.
func (*TestRestore) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "An admin's opt-in (args.every > 0): for one Completed backup in every args.every of the namespace, restores it with Velero into the namespace's sandbox <ns>-rt-<hash> (created with a ResourceQuota of no Pods, claims, storage, NodePorts or load balancers; no tenant binding), only the kinds of args.includedResources, judged by velero-plugin-nacflow as the tenant's restore; compares the items Velero created with the backup's resource list, measures the RTO (Restore created to completed), records status.restoreTest and condition RestoreTested (a Warning event unless it succeeded), then deletes the Restore and the sandbox. One test at a time per namespace, args.maxConcurrent (default 2) in the cluster.",
		Outputs: []string{"result: Succeeded, Failed or Unknown", "rto: seconds", "itemsExpected, itemsRestored: counts"},
		Errors:  "a test that fails or cannot finish is its result, never the plan's; " + apiRetried,
		Waits:   true,
	}
}

// Doc implements engine.Documented.
func (*RemoveRestoreTest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Deletes the Velero Restore and the sandbox namespace of the NonAdminBackup's restore test, once Velero has finished the Restore. Nothing to delete is not an error.",
		Errors:  apiRetried,
		Waits:   true,
	}
}
