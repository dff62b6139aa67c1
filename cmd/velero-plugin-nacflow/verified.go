package main

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

// verifiedRecord is a restore's record of verified items, read once.
type verifiedRecord struct {
	// backup names the Velero Backup, for log lines.
	backup string
	set    itemdigest.Set
	// refusal, when set, refuses every item of the restore (the record
	// missing, unreadable, of another Backup, or without digests).
	refusal error
}

// verified restores only what nacflow verified (docs/security.md, content
// written by someone else than the requester). For a restore nacflow made
// that carries itemdigest.RestoreAnnotation, the item from the backup
// (ItemFromBackup, as Velero read it from the tarball) must have its
// digest in the record that annotation names — the ConfigMap of the
// restore's namespace VerifyBackupContents wrote for the Velero Backup the
// restore names (its UID) —, or it is left out (the returned output skips
// it) with a Warning line naming it; an item without ItemFromBackup is
// left out too. A record that cannot be used (missing, unreadable, of
// another Backup, holding no digests) refuses every item with an error. A
// restore from a bucket a tenant writes (bucketOnly) that is bounded by a
// requester (restorepolicy.RequesterAnnotation) and carries no such
// annotation refuses every item with an error (fail closed: nacflow
// annotates every such restore). Any other restore is not concerned: nil,
// nil, and Execute goes on. The record is read once per restore UID.
// Errors: the refusals, and the API server's.
func (a *action) verified(ctx context.Context, c clusterClient, in *velero.RestoreItemActionExecuteInput, bucketOnly bool) (*velero.RestoreItemActionExecuteOutput, error) {
	r := in.Restore
	cmName, annotated := r.Annotations[itemdigest.RestoreAnnotation]
	if !annotated {
		if _, bounded := r.Annotations[restorepolicy.RequesterAnnotation]; bounded && bucketOnly {
			return nil, fmt.Errorf("restore %s: its backup is kept in a bucket a tenant writes and it is restored as its requester, but it names no record of verified items (annotation %s): not restoring its items",
				r.Name, itemdigest.RestoreAnnotation)
		}
		return nil, nil
	}
	rec, err := a.verifiedRecordOf(ctx, c, r, cmName)
	if err != nil {
		return nil, err
	}
	if rec.refusal != nil {
		return nil, rec.refusal
	}
	obj := in.Item.UnstructuredContent()
	log := a.log.WithFields(logrus.Fields{"kind": str(obj["kind"]), "name": name(obj), "tenantNamespace": r.Annotations[v1alpha1.NarOriginNamespaceAnnotation]})
	if in.ItemFromBackup == nil {
		log.Warnf("nacflow: not restoring %s %s: Velero gave no item from the backup to check against what nacflow verified of backup %s", str(obj["kind"]), name(obj), rec.backup)
		return velero.NewRestoreItemActionExecuteOutput(in.Item).WithoutRestore(), nil
	}
	d, err := itemdigest.OfObject(in.ItemFromBackup.UnstructuredContent())
	if err != nil || !rec.set.Contains(d) {
		log.Warnf("nacflow: not restoring %s %s: changed since nacflow verified backup %s", str(obj["kind"]), name(obj), rec.backup)
		return velero.NewRestoreItemActionExecuteOutput(in.Item).WithoutRestore(), nil
	}
	return nil, nil
}

// verifiedRecordOf returns restore r's record of verified items, the
// ConfigMap cmName of r's namespace, read once per restore UID: its
// refusal when the ConfigMap is missing or unreadable, names another
// Velero Backup than the one r restores (by UID, read as bucketOnly reads
// it: a Backup that cannot be found refuses), or records no digests.
// Errors are the API server's (not kept: the next item reads again).
func (a *action) verifiedRecordOf(ctx context.Context, c clusterClient, r *velerov1.Restore, cmName string) (*verifiedRecord, error) {
	a.mu.Lock()
	rec, ok := a.verifiedRecords[r.UID]
	a.mu.Unlock()
	if ok {
		return rec, nil
	}
	refuse := func(format string, args ...any) *verifiedRecord {
		return &verifiedRecord{backup: r.Spec.BackupName, refusal: fmt.Errorf("restore %s: "+format+": not restoring its items (nacflow restores only what it verified)", append([]any{r.Name}, args...)...)}
	}
	cm := &corev1.ConfigMap{}
	backup := &unstructured.Unstructured{}
	backup.SetGroupVersionKind(velerov1.SchemeGroupVersion.WithKind("Backup"))
	switch err := c.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: cmName}, cm); {
	case apierrors.IsNotFound(err):
		rec = refuse("the record of verified items it names, ConfigMap %s/%s, does not exist", r.Namespace, cmName)
	case err != nil:
		return nil, fmt.Errorf("restore %s: reading its record of verified items, ConfigMap %s/%s: %w", r.Name, r.Namespace, cmName, err)
	default:
		m, err := itemdigest.FromConfigMap(cm)
		if err != nil {
			rec = refuse("its record of verified items is unreadable: %v", err)
			break
		}
		switch err := c.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Spec.BackupName}, backup); {
		case apierrors.IsNotFound(err):
			rec = refuse("Velero Backup %s/%s not found", r.Namespace, r.Spec.BackupName)
		case err != nil:
			return nil, fmt.Errorf("restore %s: reading Velero Backup %s/%s: %w", r.Name, r.Namespace, r.Spec.BackupName, err)
		case backup.GetUID() != m.BackupUID:
			rec = refuse("ConfigMap %s/%s records the items of Velero Backup UID %s, not those of Velero Backup %s (UID %s)", r.Namespace, cmName, m.BackupUID, r.Spec.BackupName, backup.GetUID())
		case m.Unrecorded != "":
			rec = refuse("nacflow recorded no item digests for Velero Backup %s: %s", r.Spec.BackupName, m.Unrecorded)
		default:
			rec = &verifiedRecord{backup: r.Spec.BackupName, set: m.Set}
		}
	}
	a.mu.Lock()
	a.verifiedRecords[r.UID] = rec
	a.mu.Unlock()
	return rec, nil
}
