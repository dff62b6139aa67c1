package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchStatus writes obj's status with a JSON merge patch computed against
// before (a copy taken when the reconcile started), through the status
// subresource. It never sends a whole-object Update, so it cannot conflict
// with spec writes, and it sends nothing when the status did not change.
// It returns the API error, wrapped with the object's key.
func PatchStatus(ctx context.Context, c client.Client, obj, before client.Object) error {
	// Most reconciles change nothing: a reflective comparison is much cheaper
	// than marshalling both objects to compute an empty patch.
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	patch := client.MergeFrom(before)
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("computing status patch of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if string(data) == "{}" {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.RawPatch(patch.Type(), data)); err != nil {
		return fmt.Errorf("patching status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
