// Package patch writes a NAC object's status and finalizers, the only
// writes a reconciler makes to the object it reconciles, in one way (as
// cluster-api's util/patch does for its controllers):
//
//   - as patches, never a whole-object Update, so that a write never
//     carries a field it did not mean to change;
//   - each with the resourceVersion it was computed from as its
//     precondition (optimistic concurrency): a write based on a stale read
//     — the cache behind, or anyone's write since — fails with a Conflict
//     instead of overwriting what it did not see, and the reconcile is
//     retried from a fresh read (a conflict is transient:
//     engine.IsTransient);
//   - reading back only the object's new metadata.
package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Status writes obj's status through the status subresource, whole,
// with a JSON patch (RFC 6902) of two operations: replace
// metadata.resourceVersion with before's (the precondition, as
// client.MergeFromWithOptimisticLock), and add /status (which replaces it).
// before is obj as read. It sends nothing when the status did not change
// (metadata changes are not written: the status subresource ignores them).
//
// The status is sent whole because it is written by the controller alone,
// and as a whole (every NAC kind's status is +structType=atomic): there is
// nothing of anyone else's to merge with. A merge patch would have to be
// computed as a diff of the two objects — two marshals, two JSON decodes
// and a comparison per write, a large share of what the controller
// allocates — and the first status write, the most common, would send the
// whole status anyway.
//
// obj and before must be pointers to structs with a Status field (the NAC
// kinds). It returns an error when they are not, when before has no
// resourceVersion, and the API error, wrapped with the object's key.
func Status(ctx context.Context, c client.Client, obj, before client.Object) error {
	return StatusExcept(ctx, c, obj, before, "")
}

// StatusExcept is Status, but leaves the status field called keep (its JSON
// name) as the API server holds it: every other field is added or
// replaced, one operation each, and a field before had and obj has not is
// removed. For an object whose cached copy holds only a summary of keep (an
// ended plan, cut by the cache transform), which the write must not
// replace. keep "" writes the status whole, as Status does. Errors: as
// Status's.
func StatusExcept(ctx context.Context, c client.Client, obj, before client.Object, keep string) error {
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
	ops := []statusPatchOp{{Op: "replace", Path: "/metadata/resourceVersion", Value: rv}}
	if keep == "" {
		ops = append(ops, statusPatchOp{Op: "add", Path: "/status", Value: status})
	} else if ops, err = fieldOps(ops, status, old, keep); err != nil {
		return fmt.Errorf("encoding status patch of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding status patch of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if err := metadataOnly(ctx, c, obj, client.RawPatch(types.JSONPatchType, data), true); err != nil {
		return fmt.Errorf("patching status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// fieldOps appends to ops one add operation per top-level field of status
// but keep, and a remove operation per field of old that status lacks.
// The fields are JSON names without "/" or "~" (Go API types'), so they need
// no JSON pointer escaping.
func fieldOps(ops []statusPatchOp, status, old any, keep string) ([]statusPatchOp, error) {
	fields := func(v any) (map[string]json.RawMessage, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m := map[string]json.RawMessage{}
		return m, json.Unmarshal(b, &m)
	}
	now, err := fields(status)
	if err != nil {
		return nil, err
	}
	was, err := fields(old)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if k != keep {
			ops = append(ops, statusPatchOp{Op: "add", Path: "/status/" + k, Value: now[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(was)) {
		if _, ok := now[k]; !ok && k != keep {
			ops = append(ops, statusPatchOp{Op: "remove", Path: "/status/" + k})
		}
	}
	return ops, nil
}

// statusPatchOp is one operation of a JSON patch (RFC 6902).
type statusPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
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

// Finalizers writes obj's finalizers with a JSON merge patch (the list is
// replaced whole, as any merge patch of a list does) whose precondition is
// the resourceVersion obj was read at: when anyone changed the object since
// — another controller adding its finalizer, say — the API server refuses
// it with a Conflict instead of dropping or resurrecting a finalizer. obj
// takes the new resourceVersion. It returns the API error as is (NotFound
// when the object is gone).
func Finalizers(ctx context.Context, c client.Client, obj client.Object) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": obj.GetFinalizers(), "resourceVersion": obj.GetResourceVersion()}})
	if err != nil {
		return err
	}
	return metadataOnly(ctx, c, obj, client.RawPatch(types.MergePatchType, data), false)
}

// metadataOnly sends patch for obj through c (to the status subresource
// when status is true) but asks the API server to answer with the object's
// metadata only (PartialObjectMetadata), not the whole object: the caller
// already holds what it wrote, so only the new resourceVersion (and
// generation) is copied back into obj. Decoding the whole answer costs a
// tenth of the controller's CPU under load. It returns the API error as
// is, or an error when obj's kind is not in c's scheme.
func metadataOnly(ctx context.Context, c client.Client, obj client.Object, patch client.Patch, status bool) error {
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
