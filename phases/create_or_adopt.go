package phases

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// createOrAdopt creates want (a kind such as "Velero Backup", for messages) in the OADP namespace, or, when an object of
// that name exists, adopts it if it carries nacuuid as its origin label
// (openshift.io/oadp-nar- or -nabsl-origin-nacuuid when want has it, else
// openshift.io/oadp-nab-origin-nacuuid). It returns the object as it is
// in the cluster and "Created" or "Adopted". An existing object without
// the label is never touched: that is a terminal error. API errors are
// returned as they are (retryable).
func createOrAdopt(ctx context.Context, c Clients, kind string, want client.Object, nacuuid string) (client.Object, string, error) {
	label := v1alpha1.NabOriginNACUUIDLabel
	for _, l := range []string{v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NabslOriginNACUUIDLabel} {
		if _, ok := want.GetLabels()[l]; ok {
			label = l
		}
	}
	got := want.DeepCopyObject().(client.Object)
	err := c.Client.Create(ctx, got)
	if err == nil {
		c.recent.add(kind, got)
		return got, "Created", nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, "", fmt.Errorf("creating %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	// The cache may not have it yet: read the API server.
	if err := c.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		return nil, "", fmt.Errorf("reading existing %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	if owner := got.GetLabels()[label]; owner != nacuuid {
		return nil, "", engine.Terminalf("%s %s/%s exists but does not belong to this operation (label %s is %q)",
			kind, want.GetNamespace(), want.GetName(), label, owner)
	}
	return got, "Adopted", nil
}
