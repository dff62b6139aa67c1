package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// PatchStatus writes obj's status through the status subresource, whole,
// with a JSON patch (RFC 6902) of two operations: replace
// metadata.resourceVersion with before's (the precondition: optimistic
// concurrency, as client.MergeFromWithOptimisticLock), and add /status
// (which replaces it). A write based on a stale read — the cache behind, or
// anyone's write since — fails with a Conflict instead of overwriting what
// it did not see; the caller retries from a fresh read (a conflict is
// transient: IsTransient). It never sends a whole-object Update, and sends
// nothing when the status did not change (metadata changes are not written:
// the status subresource ignores them).
//
// The status is sent whole because it is written by the controller alone,
// and as a whole (every NAC kind's status is +structType=atomic): there is
// nothing of anyone else's to merge with. A merge patch had to be computed
// as a diff of the two objects (two marshals, two JSON decodes and a
// comparison per write: a fifth of what the controller allocated at 10,000
// NonAdminBackups, make bench, issue 22); the first status write, the most
// common, sent the whole status anyway.
//
// obj and before must be pointers to structs with a Status field (the NAC
// kinds). It returns an error when they are not, when before has no
// resourceVersion, and the API error, wrapped with the object's key.
func PatchStatus(ctx context.Context, c client.Client, obj, before client.Object) error {
	status, err := statusOf(obj)
	if err != nil {
		return err
	}
	old, err := statusOf(before)
	if err != nil {
		return err
	}
	// Most reconciles change nothing: a reflective comparison is much
	// cheaper than marshalling.
	if equality.Semantic.DeepEqual(old, status) {
		return nil
	}
	rv := before.GetResourceVersion()
	if rv == "" {
		return fmt.Errorf("patching status of %s/%s: the object has no resourceVersion to lock on", obj.GetNamespace(), obj.GetName())
	}
	data, err := json.Marshal([]statusPatchOp{
		{Op: "replace", Path: "/metadata/resourceVersion", Value: rv},
		{Op: "add", Path: "/status", Value: status},
	})
	if err != nil {
		return fmt.Errorf("encoding status patch of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if err := PatchMetadataOnly(ctx, c, obj, client.RawPatch(types.JSONPatchType, data), true); err != nil {
		return fmt.Errorf("patching status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// statusPatchOp is one operation of a JSON patch (RFC 6902).
type statusPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// statusOf returns the Status field of obj (a pointer to a struct), as an
// interface holding a pointer to it; an error when obj has none.
func statusOf(obj client.Object) (any, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		if f := v.Elem().FieldByName("Status"); f.IsValid() && f.CanAddr() {
			return f.Addr().Interface(), nil
		}
	}
	return nil, fmt.Errorf("patching status of %s/%s: %T has no Status field", obj.GetNamespace(), obj.GetName(), obj)
}

// PatchMetadataOnly sends patch for obj through c (to the status subresource
// when status is true) but asks the API server to answer with the object's metadata only
// (PartialObjectMetadata), not the whole object: the caller already holds
// what it wrote, so only the new resourceVersion (and generation) is copied
// back into obj. Decoding the whole answer was about a tenth of the
// controller's CPU at 1,000 NABs (make bench). It returns the API error as
// is, or an error when obj's kind is not in c's scheme.
func PatchMetadataOnly(ctx context.Context, c client.Client, obj client.Object, patch client.Patch, status bool) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	m.SetNamespace(obj.GetNamespace())
	m.SetName(obj.GetName())
	if status {
		err = c.Status().Patch(ctx, m, patch)
	} else {
		err = c.Patch(ctx, m, patch)
	}
	if err != nil {
		return err
	}
	obj.SetResourceVersion(m.GetResourceVersion())
	obj.SetGeneration(m.GetGeneration())
	return nil
}
