// Package controllers holds nacflow's reconcilers: thin loops that fetch a NAC
// object, handle its finalizer, pick the blueprint action its state calls for
// and hand over to the engine (DESIGN.md §6).
package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/engine"
)

// Actions of the nonadminbackup blueprint.
const (
	// ActionBackup makes the Velero Backup of a new NonAdminBackup.
	ActionBackup = "backup"
)

// EventBlueprintInvalid is the Warning event reason when the blueprint action
// an operation needs cannot be compiled.
const EventBlueprintInvalid = "BlueprintInvalid"

// nacuuidSpace is the name space of NACUUIDs derived from a NAC object's UID.
var nacuuidSpace = uuid.MustParse("6f0d3a52-3c1e-4f8e-9a52-4b7a0d6c2e11")

// NACUUID returns the NACUUID of the operation for the NAC object with uid: a
// name-based (SHA-1) UUID of the UID. Deriving it, rather than drawing a
// random one as OADP NAC does, means it is known before anything is written,
// so a crash between creating a Velero object and recording it can never
// lead to a second object.
func NACUUID(uid types.UID) string {
	return uuid.NewSHA1(nacuuidSpace, []byte(uid)).String()
}

// NonAdminBackupReconciler runs the nonadminbackup blueprint for each
// NonAdminBackup and mirrors its Velero Backup.
type NonAdminBackupReconciler struct {
	// Client reads through the cache and writes to the API server.
	Client client.Client
	// Runner runs the phase plans.
	Runner *engine.Runner
	// Recorder emits events on NonAdminBackups.
	Recorder record.EventRecorder
	// OADPNamespace is where Velero runs and Velero Backups are made.
	OADPNamespace string

	reads readTracker
}

// staleRecheck is how soon a reconcile that found its cache behind its own
// last write looks again. Status patches do not wake the controller (they do
// not change metadata.generation), so it must requeue itself.
const staleRecheck = 100 * time.Millisecond

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups/status;nonadminbackups/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,resources=backups,verbs=get;list;watch;create;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile moves one NonAdminBackup forward: deletion goes to its own path;
// otherwise the finalizer is added (the first write), the backup action runs
// as far as it can, and the Velero Backup's status is mirrored. Status is
// written once, with a patch, on the way out.
func (r *NonAdminBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	nab := &v1alpha1.NonAdminBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, nab); err != nil {
		if apierrors.IsNotFound(err) {
			r.reads.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	readRV := nab.ResourceVersion
	if r.reads.isStale(req.NamespacedName, readRV) {
		return ctrl.Result{RequeueAfter: staleRecheck}, nil
	}
	defer func() {
		if nab.ResourceVersion != readRV {
			r.reads.wrote(req.NamespacedName, readRV)
		}
	}()
	if !nab.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, nab)
	}
	if !controllerutil.ContainsFinalizer(nab, v1alpha1.NonAdminBackupFinalizer) {
		before := nab.DeepCopy()
		controllerutil.AddFinalizer(nab, v1alpha1.NonAdminBackupFinalizer)
		if err := r.Client.Patch(ctx, nab, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to %s: %w", req.NamespacedName, err)
		}
	}

	before := nab.DeepCopy()
	defer func() {
		if err == nil {
			nab.Status.ObservedGeneration = nab.Generation
		}
		if perr := engine.PatchStatus(ctx, r.Client, nab, before); perr != nil {
			err = errors.Join(err, perr)
		}
	}()
	return r.reconcileBackup(ctx, nab)
}

// reconcileBackup runs the backup action and keeps status.veleroBackup current.
func (r *NonAdminBackupReconciler) reconcileBackup(ctx context.Context, nab *v1alpha1.NonAdminBackup) (ctrl.Result, error) {
	if nab.Status.Phase == "" {
		nab.Status.Phase = v1alpha1.NonAdminPhaseNew
	}
	plan, err := r.resolve(ActionBackup)
	if err != nil {
		r.Recorder.Event(nab, corev1.EventTypeWarning, EventBlueprintInvalid, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	out, err := r.Runner.Run(ctx, engine.Request{
		Object: nab, Plan: plan, UUID: r.nacuuid(nab), OADPNamespace: r.OADPNamespace,
	})
	if engine.IsTerminal(err) {
		r.Recorder.Event(nab, corev1.EventTypeWarning, EventBlueprintInvalid, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.mirror(ctx, nab); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, nil
}

// resolve returns the blueprint action to run. Today that is always the
// built-in nonadminbackup blueprint.
func (r *NonAdminBackupReconciler) resolve(action string) (engine.Plan, error) {
	bp, err := blueprints.BuiltIn(blueprints.NonAdminBackup)
	if err != nil {
		return engine.Plan{}, err
	}
	spec, err := blueprints.Action(bp, action)
	if err != nil {
		return engine.Plan{}, err
	}
	return engine.Plan{Action: action, Blueprint: bp.Name, BlueprintGeneration: v1alpha1.BuiltInGeneration, Spec: spec}, nil
}

// nacuuid returns the NACUUID recorded in status, or the one derived from the
// NAB's UID before anything was recorded.
func (r *NonAdminBackupReconciler) nacuuid(nab *v1alpha1.NonAdminBackup) string {
	if vb := nab.Status.VeleroBackup; vb != nil && vb.NACUUID != "" {
		return vb.NACUUID
	}
	return NACUUID(nab.UID)
}

// mirror copies the linked Velero Backup's spec and status into the NAB, so
// status.veleroBackup stays current while and after the plan runs.
func (r *NonAdminBackupReconciler) mirror(ctx context.Context, nab *v1alpha1.NonAdminBackup) error {
	vb := nab.Status.VeleroBackup
	if vb == nil || vb.Name == "" {
		return nil
	}
	b := &velerov1.Backup{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.OADPNamespace, Name: vb.Name}, b)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Velero Backup %s/%s: %w", r.OADPNamespace, vb.Name, err)
	}
	nab.MirrorBackup(b)
	return nil
}

// reconcileDelete removes the Velero Backup objects this NAB made (objects
// only: backup data stays in object storage) and then the finalizer.
func (r *NonAdminBackupReconciler) reconcileDelete(ctx context.Context, nab *v1alpha1.NonAdminBackup) error {
	if !controllerutil.ContainsFinalizer(nab, v1alpha1.NonAdminBackupFinalizer) {
		return nil
	}
	err := r.Client.DeleteAllOf(ctx, &velerov1.Backup{}, client.InNamespace(r.OADPNamespace),
		client.MatchingLabels{v1alpha1.NabOriginNACUUIDLabel: r.nacuuid(nab)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Velero Backup of %s/%s: %w", nab.Namespace, nab.Name, err)
	}
	before := nab.DeepCopy()
	controllerutil.RemoveFinalizer(nab, v1alpha1.NonAdminBackupFinalizer)
	if err := r.Client.Patch(ctx, nab, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing finalizer of %s/%s: %w", nab.Namespace, nab.Name, err))
	}
	log.FromContext(ctx).Info("removed Velero Backup object and finalizer; backup data stays in object storage")
	return nil
}

// SetupWithManager registers the reconciler: NonAdminBackups cluster-wide
// (spec changes only, so status patches do not retrigger it), and Velero
// Backups in the OADP namespace carrying the NAC labels, mapped back to
// their NAB by the origin annotations.
func (r *NonAdminBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nonadminbackup").
		For(&v1alpha1.NonAdminBackup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&velerov1.Backup{}, handler.EnqueueRequestsFromMapFunc(r.backupToNAB),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.isNACObject))).
		Complete(r)
}

// isNACObject reports whether obj lives in the OADP namespace and carries the
// NAC labels.
func (r *NonAdminBackupReconciler) isNACObject(obj client.Object) bool {
	return obj.GetNamespace() == r.OADPNamespace &&
		obj.GetLabels()[v1alpha1.OADPLabel] == v1alpha1.OADPLabelValue &&
		obj.GetLabels()[v1alpha1.NabOriginNACUUIDLabel] != ""
}

// backupToNAB maps a Velero Backup to the NonAdminBackup named by its origin
// annotations.
func (r *NonAdminBackupReconciler) backupToNAB(_ context.Context, obj client.Object) []reconcile.Request {
	ns, name := obj.GetAnnotations()[v1alpha1.NabOriginNamespaceAnnotation], obj.GetAnnotations()[v1alpha1.NabOriginNameAnnotation]
	if ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
