package phases

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// createOrAdopt creates want (a kind such as "Velero Backup", for messages)
// in the OADP namespace with op's guarded client, or, when an object of that
// name exists, adopts it if it carries op's origin label with op.UUID
// (openshift.io/oadp-<nab|nar|nabsl>-origin-nacuuid, by op's kind). It
// returns the object as it is in the cluster and "Created" or "Adopted", and
// records a creation in recent. An existing object without the label is
// never touched: that is a terminal error. API errors are returned as they
// are (retryable); the safety rule's refusals are terminal.
func createOrAdopt(ctx context.Context, op *engine.Operation, recent *recentCreates, kind string, want client.Object) (client.Object, string, error) {
	return createOrAdoptOwn(ctx, op, recent, kind, want, nil)
}

// createOrAdoptOwn is createOrAdopt for the kinds an operation makes one of
// (its Velero Backup, Restore, Schedule, BackupStorageLocation, credential
// copy, approval request): list, when set, is a new list of that kind. When
// op's NACUUID is not the one derived from its object's UID — it was
// adopted from status, the operation of another controller (OADP NAC names
// the object after its NACUUID, "<namespace>-<name>-<uuid>") or of backup
// sync — the object that already carries op's origin label and names op's
// object in its origin annotations (engine.Operation.Owns) is adopted under
// its own name before anything is created: an operation is never done
// twice. Secrets are listed from the API server (the manager caches none),
// the rest from the cache.
func createOrAdoptOwn(ctx context.Context, op *engine.Operation, recent *recentCreates, kind string, want client.Object, list client.ObjectList) (client.Object, string, error) {
	label := op.OriginLabel()
	if list != nil && op.UUID != v1alpha1.DerivedNACUUID(op.Object) {
		existing, err := findOwn(ctx, op, list)
		if err != nil {
			return nil, "", fmt.Errorf("looking for this operation's %s: %w", kind, err)
		}
		if existing != nil {
			return existing, "Adopted", nil
		}
	}
	got := want.DeepCopyObject().(client.Object)
	err := op.Client.Create(ctx, got)
	if err == nil {
		recent.add(kind, got)
		return got, "Created", nil
	}
	if apierrors.IsInvalid(err) {
		// The same object is refused again on every try: an input no
		// validation caught must end the plan with the API server's
		// reason, not leave it retrying.
		return nil, "", engine.Terminalf("the API server refused %s %s/%s: %v", kind, want.GetNamespace(), want.GetName(), err)
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, "", fmt.Errorf("creating %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	// The cache may not have it yet: read the API server.
	if err := op.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		return nil, "", fmt.Errorf("reading existing %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	if owner := got.GetLabels()[label]; owner != op.UUID {
		return nil, "", engine.Terminalf("%s %s/%s exists but does not belong to this operation (label %s is %q)",
			kind, want.GetNamespace(), want.GetName(), label, owner)
	}
	return got, "Adopted", nil
}

// findOwn returns the oldest object of list's kind in the OADP namespace
// that op owns — its origin label holds op's NACUUID and its origin
// namespace and name annotations name op's object — or nil.
func findOwn(ctx context.Context, op *engine.Operation, list client.ObjectList) (client.Object, error) {
	reader := client.Reader(op.Client)
	if _, secrets := list.(*corev1.SecretList); secrets {
		reader = op.APIReader
	}
	if err := listLabelled(ctx, reader, op, list, op.OriginLabel(), op.UUID); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	keys := op.Object.OriginKeys()
	var found client.Object
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || !op.Owns(obj) || obj.GetAnnotations()[keys.NameAnnotation] != op.Object.GetName() ||
			obj.GetAnnotations()[keys.NamespaceAnnotation] != op.Object.GetNamespace() {
			continue
		}
		if found == nil || obj.GetCreationTimestamp().Time.Before(found.GetCreationTimestamp().Time) {
			found = obj
		}
	}
	return found, nil
}
