package phases

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
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
// Sets condition Verified: True naming the number of items checked; False
// naming the unexpected items (the first 10), with a Warning event
// UnexpectedItems (counted by the nacflow_backups_unverified gauge); Unknown
// when Velero did not serve the list within args.timeout or the download
// failed. A backup that did not finish Completed or PartiallyFailed is not
// checked.
//
// Outputs: items, unexpected (counts). Errors: unexpected items with
// args.failOnUnexpectedItems are terminal, as is a Backup that is not the
// operation's own; API errors are retryable.
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
	if p := b.Status.Phase; p != velerov1.BackupPhaseCompleted && p != velerov1.BackupPhasePartiallyFailed {
		return engine.Done(fmt.Sprintf("Velero Backup %s is %s: only Completed and PartiallyFailed backups are verified", a.Name, phaseOr(string(p))), nil), nil
	}
	dr, err := backupFileRequest(ctx, op, f.tools.recent, "verify", v1alpha1.NACObjectName(nab.Namespace, nab.Name, op.UUID),
		velerov1.DownloadTargetKindBackupResourceList, b.Name)
	if err != nil {
		return engine.Result{}, err
	}
	timeout := a.serveTimeout()
	// The DownloadRequest is left to Velero, which deletes a request once
	// its URL expires (10 minutes after serving it): deleting it here would
	// cost a write per backup for what Velero does anyway, and its URL stays
	// valid until then whoever deletes the object. A request Velero never
	// served goes with the NonAdminBackup (the finalize action's
	// DeleteObjects), or is served and expired when Velero runs again.
	unknown := func(why string) (engine.Result, error) {
		setVerified(nab, metav1.ConditionUnknown, v1alpha1.ReasonVerificationUnavailable, why)
		return engine.Done("not verified: "+why, nil), nil
	}
	if wait, expired := awaitServed(dr, "the resource list of Backup "+b.Name, timeout, f.tools.serving); expired {
		return unknown(fmt.Sprintf("Velero did not serve the resource list of Backup %s within %s (DownloadRequest %s is %s)",
			b.Name, timeout, dr.Name, phaseOr(string(dr.Status.Phase))))
	} else if wait != nil {
		return *wait, nil
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
	out := map[string]string{"items": fmt.Sprint(list.total), "unexpected": fmt.Sprint(unexpected)}
	if unexpected == 0 {
		msg := fmt.Sprintf("%d items of Velero Backup %s checked: all belong to namespace %s", list.total, b.Name, nab.Namespace)
		setVerified(nab, metav1.ConditionTrue, v1alpha1.ReasonContentsVerified, msg)
		return engine.Done(msg, out), nil
	}
	msg := fmt.Sprintf("%d of %d items of Velero Backup %s do not belong to namespace %s: %s", unexpected, list.total, b.Name, nab.Namespace, strings.Join(shown, ", "))
	if unexpected > len(shown) {
		msg += fmt.Sprintf(", and %d more", unexpected-len(shown))
	}
	setVerified(nab, metav1.ConditionFalse, v1alpha1.ReasonUnexpectedItems, msg)
	if f.tools.recorder != nil {
		f.tools.recorder.Event(op.Object, corev1.EventTypeWarning, v1alpha1.ReasonUnexpectedItems, msg)
	}
	if a.FailOnUnexpectedItems {
		return engine.Result{}, engine.Terminalf("%s", msg)
	}
	return engine.Done(msg, out), nil
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
		Summary: "After a Completed or PartiallyFailed backup, fetches its resource list through a Velero DownloadRequest and checks every item is the tenant's: in its namespace, or that Namespace, a PersistentVolume of its claims, a CRD of its custom resources. Sets Verified (True with the count; False naming the items, with a Warning event; Unknown when the list could not be read).",
		Outputs: []string{"items: items checked", "unexpected: items that are not the tenant's"},
		Errors:  "unexpected items with args.failOnUnexpectedItems are terminal; " + apiRetried,
		Waits:   true,
	}
}
