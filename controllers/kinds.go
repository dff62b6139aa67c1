package controllers

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// inOADP is the predicate of objects of the OADP namespace.
func (d *Deps) inOADP() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == d.OADPNamespace })
}

// madeForKind is the predicate of objects of the OADP namespace that carry
// the NACUUID label of the NAC kind T: those nacflow made for objects of T.
func madeForKind[T v1alpha1.Object](oadpNamespace string) predicate.Predicate {
	var kind T // OriginKeys depends on the kind alone
	label := kind.OriginKeys().Label
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == oadpNamespace && o.GetLabels()[label] != ""
	})
}

// originName returns the NAC object of kind T that obj, an object of the
// OADP namespace, was made for: the one its origin annotations (T's origin
// keys) name. ok is false when they are missing: obj was not made by
// nacflow.
func originName[T v1alpha1.Object](obj client.Object) (key types.NamespacedName, ok bool) {
	var kind T // OriginKeys depends on the kind alone
	keys := kind.OriginKeys()
	ns, name := obj.GetAnnotations()[keys.NamespaceAnnotation], obj.GetAnnotations()[keys.NameAnnotation]
	return types.NamespacedName{Namespace: ns, Name: name}, ns != "" && name != ""
}

// originOf returns the request of the NAC object of kind T that obj was made
// for (originName; none when unknown).
func originOf[T v1alpha1.Object](obj client.Object) []reconcile.Request {
	if key, ok := originName[T](obj); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

// toOrigin maps objects of the OADP namespace to the NAC object of kind T
// they were made for (originOf), in flight (inFlight: their changes go
// before new operations).
func toOrigin[T v1alpha1.Object]() handler.EventHandler {
	return inFlight(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		return originOf[T](obj)
	}))
}

// volumeToOrigin maps the node agent's volume work (a DataUpload,
// PodVolumeBackup, DataDownload or PodVolumeRestore of the OADP namespace)
// to the NAC object of kind T that the Velero object its label nameLabel
// names (a Backup, a Restore: newObject's kind) was made for: one carrying
// the OADP label and T's NACUUID label (none for an admin's).
func volumeToOrigin[T v1alpha1.Object](c client.Reader, oadpNamespace, nameLabel string, newObject func() client.Object) handler.EventHandler {
	var kind T // OriginKeys depends on the kind alone
	label := kind.OriginKeys().Label
	return inFlight(handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		name := obj.GetLabels()[nameLabel]
		if name == "" {
			return nil
		}
		v := newObject()
		if err := c.Get(ctx, client.ObjectKey{Namespace: oadpNamespace, Name: name}, v); err != nil ||
			v.GetLabels()[v1alpha1.OADPLabel] != v1alpha1.OADPLabelValue || v.GetLabels()[label] == "" {
			return nil
		}
		return originOf[T](v)
	}))
}

// requests is a controller's work queue.
type requests = workqueue.TypedRateLimitingInterface[reconcile.Request]

// freed maps the events of Velero objects of kind V (Backup, Restore) that
// free a place in Velero's queue — an unfinished one that finishes, or is
// deleted — to wake with the namespace it was made for (origin: "" for an
// admin's, which wakes no one).
func freed[V client.Object](finished func(V) bool, origin func(V) string, wake func(context.Context, requests, string)) handler.TypedEventHandler[client.Object, reconcile.Request] {
	call := func(ctx context.Context, q requests, v V) {
		if ns := origin(v); ns != "" {
			wake(ctx, q, ns)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q requests) {
			oldV, okOld := e.ObjectOld.(V)
			newV, okNew := e.ObjectNew.(V)
			if okOld && okNew && !finished(oldV) && finished(newV) {
				call(ctx, q, oldV)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q requests) {
			if v, ok := e.Object.(V); ok {
				call(ctx, q, v)
			}
		},
	}
}

// toWaiters maps an object of the OADP namespace made for a NAC object of
// kind Target to the objects of kind T in that NAC object's namespace that
// wait for it: those for which waits(waiter, name of the Target object)
// holds. A list that fails maps to nothing (the waiters' timed rechecks
// remain).
func toWaiters[T, Target v1alpha1.Object](c client.Reader, waits func(waiter T, target string) bool) handler.EventHandler {
	return inFlight(handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		target, ok := originName[Target](obj)
		if !ok {
			return nil
		}
		return waitersOf(ctx, c, target, waits)
	}))
}

// toUsers maps a NAC object to the objects of kind T in its namespace that
// wait for it: those for which waits(waiter, its name) holds (a
// NonAdminBackupStorageLocation approved or turned Available wakes the
// backups and schedules waiting to use it). A list that fails maps to
// nothing (the waiters' safety-net rechecks remain).
func toUsers[T v1alpha1.Object](c client.Reader, waits func(waiter T, target string) bool) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return waitersOf(ctx, c, client.ObjectKeyFromObject(obj), waits)
	})
}

// waitersOf returns the requests of the objects of kind T in target's
// namespace for which waits(waiter, target's name) holds.
func waitersOf[T v1alpha1.Object](ctx context.Context, c client.Reader, target types.NamespacedName, waits func(waiter T, target string) bool) []reconcile.Request {
	kind, err := v1alpha1.KindFor[T]()
	if err != nil {
		return nil
	}
	list := kind.NewList()
	if err := c.List(ctx, list, client.InNamespace(target.Namespace)); err != nil {
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, item := range items {
		if w, ok := item.(T); ok && waits(w, target.Name) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.GetNamespace(), Name: w.GetName()}})
		}
	}
	return reqs
}

// finalizeOr returns the action of an object whose kind runs action until
// the object is being deleted, and then finalize.
func finalizeOr(obj client.Object, action string) string {
	if !obj.GetDeletionTimestamp().IsZero() {
		return v1alpha1.ActionFinalize
	}
	return action
}

// veleroAnswered passes the updates of a Velero request (DownloadRequest,
// ServerStatusRequest) that change its status.phase: Velero answering it.
// Its creation (by the operation that waits on it), later updates and its
// deletion (Velero expiring it) wake no one; a controller that starts
// reconciles every NAC object anyway.
func veleroAnswered() predicate.Predicate {
	phase := func(o client.Object) string {
		switch r := o.(type) {
		case *velerov1.DownloadRequest:
			return string(r.Status.Phase)
		case *velerov1.ServerStatusRequest:
			return string(r.Status.Phase)
		}
		return ""
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return phase(e.ObjectOld) != phase(e.ObjectNew) },
	}
}
