package phases

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/restorejudge"
)

// The record of what a backup held when nacflow verified it (package
// itemdigest; docs/security.md, content written by someone else than the
// requester): VerifyBackupContents writes it for a backup kept in a bucket
// a tenant writes, CheckRestoreItems and velero-plugin-nacflow read it, and
// a restore of such a backup as its requester restores only the items it
// holds.

// maxDigestItemBytes bounds one item file read for its digest. A
// Kubernetes object is at most about 1.5 MiB (etcd's limit): a larger file
// is none Velero wrote, is not recorded, and is refused at restore.
const maxDigestItemBytes = 8 << 20

// verifiedItems is a usable record of a backup's item digests.
type verifiedItems struct {
	// name is the ConfigMap in the OADP namespace (itemdigest.Name).
	name string
	set  itemdigest.Set
}

// verifiedItemsFor returns the name of the ConfigMap of the OADP namespace
// that records the digests of the items of Velero Backup backup as nacflow
// verified them (itemdigest.Name(backup.Name)), and found true, when it
// was made for op's namespace, names that very Backup (its UID) and holds
// a set of digests; found false when there is no such record (none, or one
// that says why no digests were recorded: readVerifiedItems tells why).
// CreateVeleroRestore puts the name in the Velero Restore's annotation
// itemdigest.RestoreAnnotation, which velero-plugin-nacflow reads. The
// ConfigMap is read from the API server. Errors are the API server's
// (retryable).
func verifiedItemsFor(ctx context.Context, op *engine.Operation, backup *velerov1.Backup) (name string, found bool, err error) {
	v, _, err := readVerifiedItems(ctx, op, backup)
	if err != nil || v == nil {
		return "", false, err
	}
	return v.name, true, nil
}

// readVerifiedItems reads the record of backup's item digests (see
// verifiedItemsFor): the record, or nil and why there is no usable one —
// none, one not made for op's namespace, or one restorejudge.Record finds
// unusable for this Backup. Errors are the API server's.
func readVerifiedItems(ctx context.Context, op *engine.Operation, backup *velerov1.Backup) (*verifiedItems, string, error) {
	name := itemdigest.Name(backup.Name)
	cm := &corev1.ConfigMap{}
	found, err := read(ctx, op.APIReader, op.OADPNamespace, name, cm)
	if err != nil {
		return nil, "", err
	}
	if !found {
		cm = nil
	} else if ns := cm.Annotations[v1alpha1.NabOriginNamespaceAnnotation]; ns != op.Object.GetNamespace() {
		return nil, fmt.Sprintf("ConfigMap %s/%s, the record of the items of Velero Backup %s, was not made for namespace %s (annotation %s is %q)",
			op.OADPNamespace, name, backup.Name, op.Object.GetNamespace(), v1alpha1.NabOriginNamespaceAnnotation, ns), nil
	}
	set, bad := restorejudge.Record(cm, backup.UID)
	if bad == nil {
		return &verifiedItems{name: name, set: *set}, "", nil
	}
	switch bad.Kind {
	case restorejudge.RecordUnreadable:
		return nil, fmt.Sprintf("the record of the items of Velero Backup %s is unreadable: %v", backup.Name, bad.Err), nil
	case restorejudge.RecordOfOtherBackup:
		return nil, fmt.Sprintf("ConfigMap %s/%s records the items of another Velero Backup %s (UID %s, not %s)",
			op.OADPNamespace, name, backup.Name, bad.RecordUID, backup.UID), nil
	case restorejudge.RecordWithoutDigests:
		return nil, fmt.Sprintf("nacflow recorded no item digests for Velero Backup %s when it verified it: %s", backup.Name, bad.Why), nil
	}
	return nil, fmt.Sprintf("nacflow holds no record of the items of Velero Backup %s (no ConfigMap %s/%s): it was not verified by nacflow, or was verified before nacflow recorded item digests",
		backup.Name, op.OADPNamespace, name), nil
}

// inTenantBucket reports whether the Velero Backup is kept in a bucket a
// tenant writes (restorepolicy.TenantBucket): its location carries OADP's
// NABSL origin label, or it names none or one that does not exist. The
// location is read from the API server (the cache holds tenants' locations
// only). Errors are the API server's.
func inTenantBucket(ctx context.Context, op *engine.Operation, backup *velerov1.Backup) (bool, error) {
	name := backup.Spec.StorageLocation
	if name == "" {
		return true, nil
	}
	bsl := &velerov1.BackupStorageLocation{}
	err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: name}, bsl)
	switch {
	case err == nil:
		return restorepolicy.TenantBucket(bsl.Labels, true), nil
	case apierrors.IsNotFound(err):
		return true, nil
	default:
		return false, fmt.Errorf("reading Velero BackupStorageLocation %s/%s: %w", op.OADPNamespace, name, err)
	}
}

// backupInTenantBucket is inTenantBucket of the Velero Backup name of the
// OADP namespace, read from the API server; a Backup that cannot be found
// counts as kept in a tenant's bucket, as velero-plugin-nacflow decides
// it. Errors are the API server's.
func backupInTenantBucket(ctx context.Context, op *engine.Operation, name string) (bool, error) {
	backup := &velerov1.Backup{}
	switch err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: name}, backup); {
	case err == nil:
		return inTenantBucket(ctx, op, backup)
	case apierrors.IsNotFound(err):
		return true, nil
	default:
		return false, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, name, err)
	}
}

// Doc implements engine.Documented.
func (*CreateVeleroRestore) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates (or adopts) the Velero Restore in the OADP namespace from the accepted spec: backupName = args.backupName (which must belong to the tenant's namespace), includedNamespaces = the tenant's, NAC kinds and volumesnapshotclasses excluded (and persistentvolumes, for a backup kept in a bucket the tenant writes: its volumes come back only from data in the bucket, never from a snapshot ID it names), OADP nar labels plus args.labels/annotations.",
		Outputs: []string{"name: the Velero Restore"},
		Errors:  "a backup of another namespace, a name held by another operation's object are terminal; " + apiRetried,
	}
}

// errStopDigesting ends digestContents' read at the bound.
var errStopDigesting = errors.New("stop")

// digestContents reads the backup tarball at url and returns the set of
// the digests of its item files (itemdigest.Of of every regular file under
// resources/ ending in .json: the plain, preferred-version and other
// version copies; a file Velero could not decode is no item it restores
// and has none), and how many files were over maxDigestItemBytes (not
// recorded). unrecorded, when not empty, says why no set could be made:
// the tarball unreadable, over maxContents, or holding more than
// itemdigest.MaxDigests distinct items (read no further).
func digestContents(ctx context.Context, hc *storeClient, url string) (set itemdigest.Set, large int, unrecorded string) {
	seen := map[itemdigest.Digest]struct{}{}
	err := contentFiles(ctx, hc, url, maxContents, func(h *tar.Header, r io.Reader) error {
		p := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(p, "resources/") || !strings.HasSuffix(p, ".json") {
			return nil
		}
		if h.Size > maxDigestItemBytes {
			large++
			return nil
		}
		raw, err := io.ReadAll(io.LimitReader(r, maxDigestItemBytes+1))
		if err != nil {
			return err
		}
		d, err := itemdigest.Of(raw)
		if err != nil {
			return nil
		}
		seen[d] = struct{}{}
		if len(seen) > itemdigest.MaxDigests {
			return errStopDigesting
		}
		return nil
	})
	switch {
	case errors.Is(err, errStopDigesting):
		return itemdigest.Set{}, 0, fmt.Sprintf("the backup holds %s: nacflow records the digests of at most %d", itemdigest.ErrTooMany, itemdigest.MaxDigests)
	case err != nil:
		return itemdigest.Set{}, 0, fmt.Sprintf("reading its contents: %v", err)
	}
	ds := make([]itemdigest.Digest, 0, len(seen))
	for d := range seen {
		ds = append(ds, d)
	}
	set, err = itemdigest.NewSet(ds)
	if err != nil {
		return itemdigest.Set{}, 0, err.Error()
	}
	return set, large, ""
}
