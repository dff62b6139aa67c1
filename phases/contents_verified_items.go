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

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
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
// verifiedItemsFor): the record, or nil and why there is no usable one.
// Errors are the API server's.
func readVerifiedItems(ctx context.Context, op *engine.Operation, backup *velerov1.Backup) (*verifiedItems, string, error) {
	name := itemdigest.Name(backup.Name)
	cm := &corev1.ConfigMap{}
	found, err := read(ctx, op.APIReader, op.OADPNamespace, name, cm)
	if err != nil {
		return nil, "", err
	}
	if !found {
		return nil, fmt.Sprintf("nacflow holds no record of the items of Velero Backup %s (no ConfigMap %s/%s): it was not verified by nacflow, or was verified before nacflow recorded item digests",
			backup.Name, op.OADPNamespace, name), nil
	}
	if ns := cm.Annotations[v1alpha1.NabOriginNamespaceAnnotation]; ns != op.Object.GetNamespace() {
		return nil, fmt.Sprintf("ConfigMap %s/%s, the record of the items of Velero Backup %s, was not made for namespace %s (annotation %s is %q)",
			op.OADPNamespace, name, backup.Name, op.Object.GetNamespace(), v1alpha1.NabOriginNamespaceAnnotation, ns), nil
	}
	m, err := itemdigest.FromConfigMap(cm)
	if err != nil {
		return nil, fmt.Sprintf("the record of the items of Velero Backup %s is unreadable: %v", backup.Name, err), nil
	}
	if m.BackupUID != backup.UID {
		return nil, fmt.Sprintf("ConfigMap %s/%s records the items of another Velero Backup %s (UID %s, not %s)",
			op.OADPNamespace, name, backup.Name, m.BackupUID, backup.UID), nil
	}
	if m.Unrecorded != "" {
		return nil, fmt.Sprintf("nacflow recorded no item digests for Velero Backup %s when it verified it: %s", backup.Name, m.Unrecorded), nil
	}
	return &verifiedItems{name: name, set: m.Set}, "", nil
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
