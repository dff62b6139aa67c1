package restoreaction

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/velero/restorejudge"
)

// verifiedRecord is a restore's record of verified items, read once.
type verifiedRecord struct {
	set *itemdigest.Set
	// refusal, when set, refuses every item of the restore (the record
	// missing, unreadable, of another Backup, or without digests).
	refusal error
}

// verified returns the record of verified items restore r's judge
// restores by (docs/security.md, content written by someone else than
// the requester): for a restore nacflow made that carries
// itemdigest.RestoreAnnotation, the digests of the record that annotation
// names — the ConfigMap of the restore's namespace VerifyBackupContents
// wrote for the Velero Backup the restore names (its UID) —, with which
// the judge leaves out every item whose ItemFromBackup (as Velero read it
// from the tarball) it does not hold, or that has none. A record that
// cannot be used (missing, unreadable, of another Backup, holding no
// digests) refuses every item with an error. A restore that needs a
// record (needed: restorejudge.NeedsRecord, from a bucket a tenant writes
// and bounded by a requester) and carries no such annotation refuses
// every item with an error (fail closed: nacflow annotates every such
// restore). Any other restore has none: nil, nil. The record is read once
// per restore UID. Errors: the refusals, and the API server's.
func (a *Action) verified(ctx context.Context, c clusterClient, r *velerov1.Restore, needed bool) (*itemdigest.Set, error) {
	cmName, annotated := r.Annotations[itemdigest.RestoreAnnotation]
	if !annotated {
		if needed {
			return nil, fmt.Errorf("restore %s: its backup is kept in a bucket a tenant writes and it is restored as its requester, but it names no record of verified items (annotation %s): not restoring its items",
				r.Name, itemdigest.RestoreAnnotation)
		}
		return nil, nil
	}
	rec, err := a.verifiedRecordOf(ctx, c, r, cmName)
	if err != nil {
		return nil, err
	}
	return rec.set, rec.refusal
}

// verifiedRecordOf returns restore r's record of verified items, the
// ConfigMap cmName of r's namespace, read once per restore UID: its
// refusal when the ConfigMap is missing, when the Velero Backup r restores
// cannot be found (read as bucketOnly reads it), or when
// restorejudge.Record finds it unusable for that Backup. Errors are the
// API server's (not kept: the next item reads again).
func (a *Action) verifiedRecordOf(ctx context.Context, c clusterClient, r *velerov1.Restore, cmName string) (*verifiedRecord, error) {
	a.mu.Lock()
	rec, ok := a.verifiedRecords[r.UID]
	a.mu.Unlock()
	if ok {
		return rec, nil
	}
	rec, err := readRecord(ctx, c, r, cmName)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.verifiedRecords[r.UID] = rec
	a.mu.Unlock()
	return rec, nil
}

// readRecord reads the record cmName of restore r and the Velero Backup it
// restores, and words restorejudge.Record's verdict (verifiedRecordOf).
func readRecord(ctx context.Context, c clusterClient, r *velerov1.Restore, cmName string) (*verifiedRecord, error) {
	refuse := func(format string, args ...any) *verifiedRecord {
		return &verifiedRecord{refusal: fmt.Errorf("restore %s: "+format+": not restoring its items (nacflow restores only what it verified)", append([]any{r.Name}, args...)...)}
	}
	cm := &corev1.ConfigMap{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: cmName}, cm); {
	case apierrors.IsNotFound(err):
		return refuse("the record of verified items it names, ConfigMap %s/%s, does not exist", r.Namespace, cmName), nil
	case err != nil:
		return nil, fmt.Errorf("restore %s: reading its record of verified items, ConfigMap %s/%s: %w", r.Name, r.Namespace, cmName, err)
	}
	backup := &unstructured.Unstructured{}
	backup.SetGroupVersionKind(velerov1.SchemeGroupVersion.WithKind("Backup"))
	switch err := c.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Spec.BackupName}, backup); {
	case apierrors.IsNotFound(err):
		return refuse("Velero Backup %s/%s not found", r.Namespace, r.Spec.BackupName), nil
	case err != nil:
		return nil, fmt.Errorf("restore %s: reading Velero Backup %s/%s: %w", r.Name, r.Namespace, r.Spec.BackupName, err)
	}
	set, bad := restorejudge.Record(cm, backup.GetUID())
	if bad == nil {
		return &verifiedRecord{set: set}, nil
	}
	switch bad.Kind {
	case restorejudge.RecordUnreadable:
		return refuse("its record of verified items is unreadable: %v", bad.Err), nil
	case restorejudge.RecordOfOtherBackup:
		return refuse("ConfigMap %s/%s records the items of Velero Backup UID %s, not those of Velero Backup %s (UID %s)", r.Namespace, cmName, bad.RecordUID, r.Spec.BackupName, backup.GetUID()), nil
	case restorejudge.RecordWithoutDigests:
		return refuse("nacflow recorded no item digests for Velero Backup %s: %s", r.Spec.BackupName, bad.Why), nil
	}
	return refuse("the record of verified items it names, ConfigMap %s/%s, does not exist", r.Namespace, cmName), nil
}
