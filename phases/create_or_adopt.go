package phases

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	label := op.OriginLabel()
	got := want.DeepCopyObject().(client.Object)
	err := op.Client.Create(ctx, got)
	if err == nil {
		recent.add(kind, got)
		return got, "Created", nil
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
