package phases

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
)

// maxListedItems is how many unexpected items a condition names.
const maxListedItems = 10

// VerifyBackupContentsArgs are the args of VerifyBackupContents.
type VerifyBackupContentsArgs struct {
	// Name is the Velero Backup, usually
	// {{ .Phases.createBackup.Output.name }}.
	Name string `json:"name" doc:"the Velero Backup, usually {{ .Phases.createBackup.Output.name }}"`
	// FailOnUnexpectedItems fails the phase, and so the plan, when the
	// backup holds an item that is not the tenant's (default: only
	// Verified=False, a Warning event and the metric).
	FailOnUnexpectedItems bool `json:"failOnUnexpectedItems,omitempty" doc:"fail the plan when the backup holds an item that is not the tenant's (default false: Verified=False, a Warning event and nacflow_backups_unverified only)"`
	// WaitToFinish waits for a Velero Backup that has not finished (a
	// NonAdminSchedule's run, linked by the adopt action while Velero runs
	// it) instead of leaving it unverified.
	WaitToFinish bool `json:"waitToFinish,omitempty" doc:"wait for a Velero Backup that has not finished (the adopt action: a schedule's run is linked while it runs) instead of leaving it unverified (default false)"`
	ServeTimeoutArgs
}

// VerifyBackupContents checks, after the fact, that a finished (Completed or
// PartiallyFailed) Velero Backup of a NonAdminBackup holds only the tenant's
// items — defence in depth against a Velero or plugin bug or a rule nacflow
// missed; neither OADP NAC nor Velero has such a check. It asks Velero for the
// backup's resource list with a DownloadRequest of its own in the OADP
// namespace (the NonAdminDownloadRequest machinery), downloads it through the
// pre-signed URL, and checks every item: namespaced items must be in the
// NonAdminBackup's namespace; cluster-scoped ones must be that Namespace, a
// PersistentVolume bound to one of its claims, or a CustomResourceDefinition
// of a custom resource backed up from it (the cluster-scoped items Velero
// adds for a namespace). Velero deletes the DownloadRequest when its URL expires.
//
// For a backup kept in a bucket a tenant writes (inTenantBucket), it also
// records what the backup holds (recordItems): a second DownloadRequest,
// BackupContents, asked for at once and deleted once read, brings the
// tarball (at most 256 MiB compressed), and the digest of every item file
// under resources/ (package itemdigest) goes in the immutable ConfigMap
// itemdigest.Name(backup) of the OADP namespace, owned by the Velero Backup
// (it goes with the Backup object); beyond itemdigest.MaxDigests (60,000) distinct items, or
// when the tarball cannot be read, the ConfigMap records why there are none.
// A restore of such a backup as its requester restores only the items it
// records (CheckRestoreItems, velero-plugin-nacflow): content another
// editor of the namespace wrote into the bucket afterwards is refused. The
// record is of the tarball as the bucket holds it when this phase reads it
// (for a backup linked by the adopt action: when nacflow first sees it).
//
// Sets condition Verified: True naming the number of items checked; False
// naming the unexpected items (the first 10), with a Warning event
// UnexpectedItems (counted by the nacflow_backups_unverified gauge); Unknown
// when Velero did not serve the list within args.timeout or the download
// failed. Its message adds, for a backup in a tenant's bucket, whether the
// digests were recorded and, when not, why. With args.waitToFinish a Velero
// Backup that has not finished is waited for (a schedule's run linked by
// the adopt action); a backup that did not finish Completed or
// PartiallyFailed is not checked.
//
// Outputs: items, unexpected (counts); verifiedItems (the ConfigMap) and
// digests (its count) when digests were recorded. Errors: unexpected items
// with args.failOnUnexpectedItems are terminal, as is a Backup that is not
// the operation's own; API errors are retryable.
type VerifyBackupContents struct {
	tools tools
}

// Run implements phaseFunc.
func (f *VerifyBackupContents) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *VerifyBackupContentsArgs) (engine.Result, error) {
	if a.Name == "" {
		return engine.Done("no Velero Backup to verify", nil), nil
	}
	b := &velerov1.Backup{}
	found, err := getOwned(ctx, op.Client, op, "verify", "Backup", a.Name, b, linkedUUIDs(op)...)
	if err != nil {
		return engine.Result{}, err
	}
	if !found {
		return engine.Done(fmt.Sprintf("Velero Backup %s not found: nothing to verify", a.Name), nil), nil
	}
	if a.WaitToFinish && !v1alpha1.BackupFinished(b.Status.Phase) {
		// A NonAdminSchedule's run is linked (the adopt action) while
		// Velero still runs it.
		return engine.WaitWatched(fmt.Sprintf("waiting for Velero Backup %s to finish before verifying it (%s)", b.Name, phaseOr(string(b.Status.Phase))), 0), nil
	}
	if p := b.Status.Phase; p != velerov1.BackupPhaseCompleted && p != velerov1.BackupPhasePartiallyFailed {
		return engine.Done(fmt.Sprintf("Velero Backup %s is %s: only Completed and PartiallyFailed backups are verified", a.Name, phaseOr(string(p))), nil), nil
	}
	base := v1alpha1.NACObjectName(nab.Namespace, nab.Name, op.UUID)
	dr, err := backupFileRequest(ctx, op, f.tools.recent, "verify", base, velerov1.DownloadTargetKindBackupResourceList, b.Name)
	if err != nil {
		return engine.Result{}, err
	}
	timeout := a.serveTimeout()
	// The record of the items (digests) is made from the contents tarball,
	// asked for at once, so that Velero serves both files in one go.
	rec, err := f.recordItems(ctx, op, b, base+"c", timeout)
	if err != nil {
		return engine.Result{}, err
	}
	// The DownloadRequest is left to Velero, which deletes a request once
	// its URL expires (10 minutes after serving it): deleting it here would
	// cost a write per backup for what Velero does anyway, and its URL stays
	// valid until then whoever deletes the object. A request Velero never
	// served goes with the NonAdminBackup (the finalize action's
	// DeleteObjects), or is served and expired when Velero runs again.
	unknown := func(why string) (engine.Result, error) {
		setVerified(nab, metav1.ConditionUnknown, v1alpha1.ReasonVerificationUnavailable, why+rec.note)
		return engine.Done("not verified: "+why+rec.note, rec.output(nil)), nil
	}
	wait, expired := awaitServed(dr, "the resource list of Backup "+b.Name, timeout, f.tools.serving)
	switch {
	case wait != nil:
		return *wait, nil
	case rec.wait != nil:
		return *rec.wait, nil
	case expired:
		return unknown(fmt.Sprintf("Velero did not serve the resource list of Backup %s within %s (DownloadRequest %s is %s)",
			b.Name, timeout, dr.Name, phaseOr(string(dr.Status.Phase))))
	}
	list, err := downloadResourceList(ctx, f.tools.store, dr.Status.DownloadURL, nab.Namespace)
	if err != nil {
		return unknown(fmt.Sprintf("downloading the resource list of Backup %s: %v", b.Name, err))
	}
	allowed, err := allowedClusterItems(ctx, op, list)
	if err != nil {
		return engine.Result{}, err
	}
	unexpected, shown := list.check(allowed)
	out := rec.output(map[string]string{"items": fmt.Sprint(list.total), "unexpected": fmt.Sprint(unexpected)})
	if unexpected == 0 {
		msg := fmt.Sprintf("%d items of Velero Backup %s checked: all belong to namespace %s", list.total, b.Name, nab.Namespace) + rec.note
		setVerified(nab, metav1.ConditionTrue, v1alpha1.ReasonContentsVerified, msg)
		return engine.Done(msg, out), nil
	}
	msg := fmt.Sprintf("%d of %d items of Velero Backup %s do not belong to namespace %s: %s", unexpected, list.total, b.Name, nab.Namespace, strings.Join(shown, ", "))
	if unexpected > len(shown) {
		msg += fmt.Sprintf(", and %d more", unexpected-len(shown))
	}
	msg += rec.note
	setVerified(nab, metav1.ConditionFalse, v1alpha1.ReasonUnexpectedItems, msg)
	if f.tools.recorder != nil {
		f.tools.recorder.Event(op.Object, corev1.EventTypeWarning, v1alpha1.ReasonUnexpectedItems, msg)
	}
	if a.FailOnUnexpectedItems {
		return engine.Result{}, engine.Terminalf("%s", msg)
	}
	return engine.Done(msg, out), nil
}

// itemsRecord is how far recordItems got.
type itemsRecord struct {
	// wait, when set, is the wait for Velero to serve the contents.
	wait *engine.Result
	// name is the ConfigMap of the record, when it holds digests.
	name string
	// digests is how many it holds.
	digests int
	// note is what the Verified condition adds about the record (starting
	// with a period; "" when no record is needed).
	note string
}

// output adds the record's outputs to out (verifiedItems: the ConfigMap,
// digests: their count, when it holds digests).
func (r itemsRecord) output(out map[string]string) map[string]string {
	if r.name == "" {
		return out
	}
	if out == nil {
		out = map[string]string{}
	}
	out["verifiedItems"], out["digests"] = r.name, fmt.Sprint(r.digests)
	return out
}

// recordItems records, for Velero Backup b kept in a bucket a tenant
// writes (inTenantBucket: no restore from another bucket needs it), the
// digests of the items of its contents tarball as the bucket holds them
// now, in the immutable ConfigMap itemdigest.Name(b.Name) of the OADP
// namespace, made with op's metadata, owned by b (Kubernetes' garbage
// collector deletes it with the Backup object) and annotated with b's name
// and UID. The tarball comes through op's DownloadRequest drName of kind
// BackupContents, deleted once read. A record that exists already is
// kept. When no digests can be recorded — Velero did not serve the
// contents within timeout, they could not be read, more than
// itemdigest.MaxDigests distinct items — the ConfigMap says why
// (itemdigest.UnrecordedAnnotation), and so does the note: a restore of the
// backup as its requester is then refused (CheckRestoreItems,
// velero-plugin-nacflow). A ConfigMap of that name that is not op's own,
// one the API server refuses, and ConfigMaps nacflow may not read or write
// (OADP NAC's RBAC) are told in the note, never a failure of the
// verification. Errors are the API server's.
func (f *VerifyBackupContents) recordItems(ctx context.Context, op *engine.Operation, b *velerov1.Backup, drName string, timeout time.Duration) (itemsRecord, error) {
	tenant, err := inTenantBucket(ctx, op, b)
	if err != nil || !tenant {
		return itemsRecord{}, err
	}
	name := itemdigest.Name(b.Name)
	none := func(why string) itemsRecord {
		why = strings.ReplaceAll(why, ";", ",")
		return itemsRecord{note: fmt.Sprintf(". No item digests recorded (%s): nacflow refuses to restore the backup as its requester from a bucket a tenant writes", why)}
	}
	recorded := func(m itemdigest.Manifest, large int) itemsRecord {
		if m.Unrecorded != "" {
			return none(m.Unrecorded)
		}
		note := fmt.Sprintf(". The digests of its %d distinct items are recorded (ConfigMap %s): a restore as its requester restores only those", m.Set.Len(), name)
		if large > 0 {
			note += fmt.Sprintf(", and none of the %d item files over %d bytes", large, maxDigestItemBytes)
		}
		return itemsRecord{name: name, digests: m.Set.Len(), note: note}
	}
	existing := &corev1.ConfigMap{}
	found, err := read(ctx, op.APIReader, op.OADPNamespace, name, existing)
	if apierrors.IsForbidden(err) {
		// nacflow in OADP's image, with OADP NAC's RBAC.
		return none(fmt.Sprintf("nacflow may not read ConfigMaps in the OADP namespace %s", op.OADPNamespace)), nil
	}
	if err != nil {
		return itemsRecord{}, err
	}
	if found {
		m, err := itemdigest.FromConfigMap(existing)
		switch {
		case err != nil:
			return none(err.Error()), nil
		case m.BackupUID != b.UID:
			return none(fmt.Sprintf("ConfigMap %s/%s records another Backup, UID %s", op.OADPNamespace, name, m.BackupUID)), nil
		}
		return recorded(m, 0), nil
	}
	dr, err := backupFileRequest(ctx, op, f.tools.recent, "verify", drName, velerov1.DownloadTargetKindBackupContents, b.Name)
	if err != nil {
		return itemsRecord{}, err
	}
	m := itemdigest.Manifest{Backup: b.Name, BackupUID: b.UID}
	var large int
	wait, expired := awaitServed(dr, "the contents of Backup "+b.Name, timeout, f.tools.serving)
	switch {
	case wait != nil:
		return itemsRecord{wait: wait}, nil
	case expired:
		m.Unrecorded = fmt.Sprintf("Velero did not serve the contents of Backup %s within %s", b.Name, timeout)
	default:
		m.Set, large, m.Unrecorded = digestContents(ctx, f.tools.store, dr.Status.DownloadURL)
	}
	meta := op.ObjectMeta(name)
	// Kubernetes' garbage collector deletes the record with its Backup
	// object, however that goes (the NonAdminBackup's delete, forceDelete
	// or finalize action, Velero's expiry, an admin).
	meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Backup", Name: b.Name, UID: b.UID}}
	if _, _, err := createOrAdopt(ctx, op, f.tools.recent, "ConfigMap", m.ConfigMap(meta)); err != nil {
		if !engine.IsTerminal(err) && !apierrors.IsForbidden(err) {
			return itemsRecord{}, err
		}
		return none(err.Error()), nil
	}
	// The contents request is deleted once read: unlike the resource
	// list's, nothing shows it, and its URL opens the whole backup.
	if err := deleteOwn(ctx, op, dr); err != nil {
		return itemsRecord{}, err
	}
	return recorded(m, large), nil
}

// setVerified sets nab's Verified condition.
func setVerified(nab *v1alpha1.NonAdminBackup, status metav1.ConditionStatus, reason, msg string) {
	setCondition(nab, v1alpha1.ConditionVerified, status, reason, msg)
}

// downloadResourceList reads Velero's gzipped resource list of namespace
// ns's backup from url (readResourceList). Errors: downloadGzipped's and
// readResourceList's.
func downloadResourceList(ctx context.Context, hc *storeClient, url, ns string) (*resourceList, error) {
	return downloadGzipped(ctx, hc, url, func(r io.Reader) (*resourceList, error) { return readResourceList(r, ns) })
}

// downloadGzipped GETs the gzipped file of a backup or restore at url
// (getBackupFile), within resourceListDownloadTimeout, and hands it to read
// uncompressed. Errors: the HTTP status when not 200, gzip errors, and
// read's.
func downloadGzipped[T any](ctx context.Context, hc *storeClient, url string, read func(io.Reader) (T, error)) (T, error) {
	var zero T
	ctx, cancel := context.WithTimeout(ctx, resourceListDownloadTimeout)
	defer cancel()
	body, err := getBackupFile(ctx, hc, url)
	if err != nil {
		return zero, err
	}
	defer body.Close()
	gz, err := gzip.NewReader(body)
	if err != nil {
		return zero, err
	}
	return read(gz)
}

// Resource list keys of the cluster-scoped kinds Velero adds for a
// namespace.
const (
	namespaceKey = "v1/Namespace"
	pvKey        = "v1/PersistentVolume"
	crdGroup     = "apiextensions.k8s.io"
)

// allowedClusterItems returns the names of the PersistentVolumes and
// CustomResourceDefinitions a backup of op's namespace may hold: the volumes
// its claims are bound to now, and the definitions of the custom resources
// list holds from that namespace ("<plural>.<group>", from the API server's
// RESTMapper; a kind it no longer knows allows every definition of its
// group). The list bounds its kinds (maxListKinds), and so the lookups.
func allowedClusterItems(ctx context.Context, op *engine.Operation, list *resourceList) (map[string]bool, error) {
	ns := op.Object.GetNamespace()
	allowed := map[string]bool{}
	if len(list.cluster[pvKey]) > 0 {
		pvcs := &corev1.PersistentVolumeClaimList{}
		if err := op.APIReader.List(ctx, pvcs, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing the PersistentVolumeClaims of %s: %w", ns, err)
		}
		for _, pvc := range pvcs.Items {
			if pvc.Spec.VolumeName != "" {
				allowed[pvKey+" "+pvc.Spec.VolumeName] = true
			}
		}
	}
	for key, inNamespace := range list.kinds {
		gv, kind := splitKey(key)
		if gv.Group == "" || !inNamespace {
			continue
		}
		mapping, err := op.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
		if err != nil {
			allowed["group "+gv.Group] = true
			continue
		}
		allowed["crd "+mapping.Resource.Resource+"."+gv.Group] = true
	}
	return allowed, nil
}

// splitKey splits a resource list key into its group/version and kind.
func splitKey(key string) (schema.GroupVersion, string) {
	i := strings.LastIndex(key, "/")
	if i < 0 {
		return schema.GroupVersion{}, key
	}
	gv, err := schema.ParseGroupVersion(key[:i])
	if err != nil {
		return schema.GroupVersion{}, key[i+1:]
	}
	return gv, key[i+1:]
}

// crdAllowed reports whether the CustomResourceDefinition name
// ("<plural>.<group>") is allowed.
func crdAllowed(allowed map[string]bool, name string) bool {
	_, group, _ := strings.Cut(name, ".")
	return allowed["crd "+name] || allowed["group "+group]
}

// Doc implements engine.Documented.
func (*VerifyBackupContents) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "After a Completed or PartiallyFailed backup (with args.waitToFinish, waiting for one not finished), fetches its resource list through a Velero DownloadRequest and checks every item is the tenant's: in its namespace, or that Namespace, a PersistentVolume of its claims, a CRD of its custom resources. For a backup in a bucket a tenant writes, also records the digest of every item of its contents tarball (at most 60,000) in the immutable ConfigMap <backup>-verified-items of the OADP namespace: a restore as its requester restores only those. Sets Verified (True with the count; False naming the items, with a Warning event; Unknown when the list could not be read; whether digests were recorded).",
		Outputs: []string{"items: items checked", "unexpected: items that are not the tenant's", "verifiedItems: the ConfigMap of the item digests (when recorded)", "digests: how many it holds"},
		Errors:  "unexpected items with args.failOnUnexpectedItems are terminal; " + apiRetried,
		Waits:   true,
	}
}
