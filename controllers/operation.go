package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/redact"
	"github.com/nacflow/nacflow/internal/runtime/events"
	"github.com/nacflow/nacflow/internal/runtime/loglevel"
	"github.com/nacflow/nacflow/internal/runtime/patch"
	"github.com/nacflow/nacflow/internal/runtime/staleness"
)

// Deps are what every NAC reconciler is given.
type Deps struct {
	// Client reads through the cache and writes to the API server.
	Client client.Client
	// APIReader reads straight from the API server, to confirm that an
	// object missing from the cache is really gone.
	APIReader client.Reader
	// Runner runs the phase plans.
	Runner *engine.Runner
	// Recorder emits events on NAC objects.
	Recorder record.EventRecorder
	// Blueprints resolves blueprint actions (admin overrides, built-ins).
	Blueprints *blueprints.Resolver
	// OADPNamespace is where Velero runs and Velero objects are made.
	OADPNamespace string
	// MinRetryDelay and MaxRetryDelay bound the backoff of an object whose
	// reconcile failed: MinRetryDelay·2^(failures−1), at most MaxRetryDelay
	// (0: DefaultMinRetryDelay, DefaultMaxRetryDelay).
	MinRetryDelay, MaxRetryDelay time.Duration
	// Plans, when set, keeps the kind's plans out of its status: its CRD
	// has no status.plan (OADP NAC's), Capabilities.Plan. nil: the plan is
	// status.plan (plans).
	Plans *PlanStore
	// Observe, when set, is called at the start of every reconcile of a NAC
	// object with the kind's name (NonAdminBackup, …) and the request.
	// controller-runtime's controller_runtime_reconcile_total counts per
	// controller, every object together; Observe lets a caller (the
	// integration tests) count the reconciles of one object. It must not
	// block. nil: nothing is called.
	Observe func(kind string, req ctrl.Request)
}

// Retry backoff defaults (--min-retry-delay, --max-retry-delay): a failed
// reconcile is retried after 250ms, 500ms, 1s, … and never waits more than a
// minute, so an operation resumes within a minute of the API server coming
// back from an outage of any length. controller-runtime's own default caps
// at 1000 s and adds an overall 10-per-second bucket that a thousand failing
// objects would queue behind.
const (
	DefaultMinRetryDelay = 250 * time.Millisecond
	DefaultMaxRetryDelay = time.Minute
)

// NewRateLimiter returns the per-object exponential backoff of failed
// reconciles: min·2^(failures−1), capped at max; a success resets it.
func NewRateLimiter(min, max time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	if min <= 0 {
		min = DefaultMinRetryDelay
	}
	if max <= 0 {
		max = DefaultMaxRetryDelay
	}
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](min, max)
}

// controllerOptions are the options of every NAC controller: the capped
// backoff; concurrency comes from the manager (--max-concurrent-reconciles).
func (d *Deps) controllerOptions() controller.Options {
	return controller.Options{RateLimiter: NewRateLimiter(d.MinRetryDelay, d.MaxRetryDelay)}
}

// kindReconciler is what one NAC kind's reconciler tells the shared loop
// (reconcileNAC), as a Knative reconciler's ReconcileKind does: the action
// the object's state calls for, the status fields naming its Velero
// objects, what follows a run, and the kind's fixed choices. What every
// kind shares comes from the kind registry (v1alpha1.KindOf: its name,
// finalizer, built-in blueprint, empty object) and from v1alpha1.Object
// (status.phase New before the first run, the observed generation after a
// successful one).
type kindReconciler[T v1alpha1.Object] interface {
	// Action picks the action obj's state calls for (v1alpha1.Action…;
	// the finalize action once obj is being deleted).
	Action(obj T) string
	// Refs returns the status fields naming the Velero objects of obj's
	// operation (operationIdentity derives the NACUUID and corrects them).
	Refs(obj T) []statusRef
	// AfterRun runs after each successful run of action (mirroring Velero
	// status); finished is true once the plan has ended. A positive
	// duration asks to look at obj again within it. Errors fail the
	// reconcile (retried with backoff).
	AfterRun(ctx context.Context, obj T, action string, finished bool) (time.Duration, error)
	// Policy returns the kind's fixed choices.
	Policy() kindPolicy[T]
}

// kindPolicy is what a NAC kind chooses once; a zero field means no.
type kindPolicy[T v1alpha1.Object] struct {
	// adopts is true for the kinds whose operations may adopt existing
	// Velero objects — a NonAdminBackup's from backup sync or a schedule,
	// and every kind's made by OADP NAC before nacflow ran: its NACUUID may
	// be one recorded in status, when an object of the OADP namespace
	// confirms it (operationIdentity).
	adopts bool
	// revision returns what a run is for; a change starts a new run (nil: the
	// action never re-runs).
	revision func(context.Context, T) (string, error)
	// decided names the spec field nacflow reads once (reportSpecChange
	// reports later changes of it).
	decided decidedSpec[T]
	// deleteWhenComplete names the actions after whose completion the
	// object itself is deleted.
	deleteWhenComplete []string
	// deleteWhenEnded names the actions after whose end, complete or
	// failed, the object itself is deleted (its finalize action then
	// removes what is left).
	deleteWhenEnded []string
	// logLevel returns the object's own log level (NonAdminBackup
	// spec.logLevel; nil or "": the controller's).
	logLevel func(T) string
	// expiresAt returns when the object itself is deleted once its action
	// has completed (zero: never; NonAdminDownloadRequest: its URL's
	// expiry, OADP NAC's behaviour). Until then it is requeued for that
	// moment.
	expiresAt func(T) time.Time
	// recheck is the longest an object that was looked at waits before
	// the next look, whatever its run asked (0: as the run asks): a
	// location's credential check, a schedule's run check.
	recheck time.Duration
}

// reconcileNAC is the one reconcile loop of every NAC kind, in Flux's shape:
// get the object; wait while the cache is behind our own last write; then
// the deletion path (finalize, remove the finalizer) or the normal one (add
// the finalizer, run the action, expire or delete the object when its
// action calls for it). Both run the action its state calls for as far as it
// can go and write status once, with a patch (runOnce).
func reconcileNAC[T v1alpha1.Object](ctx context.Context, d *Deps, reads *staleness.Tracker, r kindReconciler[T], req ctrl.Request) (res ctrl.Result, err error) {
	kind, err := v1alpha1.KindFor[T]()
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if d.Observe != nil {
		d.Observe(kind.Kind, req)
	}
	obj := kind.New().(T)
	if err := d.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			reads.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if stale, after := reads.IsStale(req.NamespacedName, obj.GetResourceVersion()); stale {
		return ctrl.Result{RequeueAfter: after}, nil
	}
	v := &versions{reads: reads, key: req.NamespacedName, passed: []string{obj.GetResourceVersion()}}
	defer v.done()
	p := r.Policy()
	// Whatever path the object takes, a successful look at it asks for the
	// next within the kind's recheck period.
	defer func() {
		if err == nil && p.recheck > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > p.recheck) {
			res.RequeueAfter = p.recheck
		}
	}()
	if !obj.GetDeletionTimestamp().IsZero() {
		return reconcileDelete(ctx, d, kind, r, p, obj, v)
	}
	if !controllerutil.ContainsFinalizer(obj, kind.Finalizer) {
		controllerutil.AddFinalizer(obj, kind.Finalizer)
		if err := patch.Finalizers(ctx, d.Client, obj); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to %s: %w", req.NamespacedName, err)
		}
		v.wrote(obj)
	}
	action := r.Action(obj)
	result, finished, err := runOnce(ctx, d, kind, r, p, obj, action, v)
	if err != nil || !finished {
		return result, err
	}
	return reconcileEnded(ctx, d, kind, p, obj, action, result)
}

// reconcileDelete is the deletion path: run the action the object's state
// calls for (its finalize action) and, once it has ended, forget the plan
// and remove the finalizer. An object without the finalizer is left alone.
func reconcileDelete[T v1alpha1.Object](ctx context.Context, d *Deps, kind v1alpha1.Kind, r kindReconciler[T], p kindPolicy[T], obj T, v *versions) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, kind.Finalizer) {
		return ctrl.Result{}, nil
	}
	action := r.Action(obj)
	result, finished, err := runOnce(ctx, d, kind, r, p, obj, action, v)
	if err != nil || !finished {
		return result, err
	}
	// Before the finalizer goes, so that no plan outlives its object;
	// should the removal fail, the finalize action starts again, and its
	// phases are idempotent.
	if err := d.plans().Forget(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(obj, kind.Finalizer)
	err = patch.Finalizers(ctx, d.Client, obj)
	if apierrors.IsNotFound(err) {
		return result, nil // an earlier reconcile removed it: it logged
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	log.FromContext(ctx).Info("finalized", "kind", kind.Kind, "action", action)
	return result, nil
}

// reconcileEnded handles an object whose action has ended: a complete one
// expires at p.expiresAt (requeued until then, deleted after), and the
// object is deleted after the actions p.deleteWhenComplete (complete) and
// p.deleteWhenEnded (complete or failed) name. Otherwise result stands.
func reconcileEnded[T v1alpha1.Object](ctx context.Context, d *Deps, kind v1alpha1.Kind, p kindPolicy[T], obj T, action string, result ctrl.Result) (ctrl.Result, error) {
	complete := obj.GetPlan() != nil && obj.GetPlan().State == v1alpha1.PlanComplete
	if p.expiresAt != nil && complete {
		if at := p.expiresAt(obj); !at.IsZero() {
			if wait := time.Until(at); wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, nil
			}
			if err := d.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("deleting %s/%s, expired: %w", obj.GetNamespace(), obj.GetName(), err)
			}
			log.FromContext(ctx).Info("deleted: expired", "kind", kind.Kind, "expiredAt", at)
			return ctrl.Result{}, nil
		}
	}
	if slices.Contains(p.deleteWhenComplete, action) && complete || slices.Contains(p.deleteWhenEnded, action) {
		if err := d.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting %s/%s after its %s action: %w", obj.GetNamespace(), obj.GetName(), action, err)
		}
	}
	return result, nil
}

// runOnce runs action on obj as far as it can go and records the run: the
// object's own log level, its plan loaded from where its kind keeps plans,
// status.phase New before the first run, the spec-change report, the run
// (runAction), then one status write (redacted) with the plan, and the
// run's events once that write has landed. finished is true once the plan,
// deferPhase included, has ended. A run held at a brief wait on Velero
// (engine.WaitBriefly) writes nothing: its answer, or the next look, records
// its transitions with the wait's outcome in one status write and one event.
func runOnce[T v1alpha1.Object](ctx context.Context, d *Deps, kind v1alpha1.Kind, r kindReconciler[T], p kindPolicy[T], obj T, action string, v *versions) (ctrl.Result, bool, error) {
	// Every log line of this reconcile carries the action (controller-runtime
	// already adds the controller, namespace and name; the engine the phase).
	level := ""
	if p.logLevel != nil {
		level = p.logLevel(obj)
	}
	logger, storyLog := loglevel.Loggers(log.FromContext(ctx).WithValues("action", action), level)
	ctx = log.IntoContext(ctx, logger)
	plans := d.plans()
	stored, err := plans.Load(ctx, obj)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	before := obj.DeepCopyObject().(client.Object)
	if obj.GetPhase() == "" {
		obj.SetPhase(v1alpha1.NonAdminPhaseNew)
	}
	buffer := &events.Buffer{}
	if p.decided != nil {
		reportSpecChange(obj, p.decided, buffer)
	}
	result, finished, held, err := runAction(ctx, d, kind, r, p, obj, action, buffer)
	if held && err == nil {
		return result, false, nil
	}
	if err == nil {
		obj.SetObservedGeneration(obj.GetGeneration())
	}
	redactStatus(obj)
	if perr := plans.Write(ctx, d.Client, obj, before, stored); perr != nil {
		// What this run did is not recorded: neither are its events (the
		// retry, from a fresh read, tells the story once).
		return ctrl.Result{}, false, errors.Join(err, perr)
	}
	buffer.Each(func(eventType, reason, message string) {
		storyLog.Info(message, "event", reason, "type", eventType)
	})
	buffer.Flush(d.Recorder)
	v.wrote(obj)
	return result, finished && err == nil, err
}

// versions collects the resourceVersions of one object a reconcile reads
// and writes: every one but the last is behind the reconcile's own final
// write, and done tells the staleness tracker so.
type versions struct {
	reads  *staleness.Tracker
	key    types.NamespacedName
	passed []string
}

// wrote records obj's resourceVersion after a write (none when unchanged).
func (v *versions) wrote(obj client.Object) {
	if rv := obj.GetResourceVersion(); rv != v.passed[len(v.passed)-1] {
		v.passed = append(v.passed, rv)
	}
}

// done tells the tracker the versions passed before the last.
func (v *versions) done() {
	if last := len(v.passed) - 1; last > 0 {
		v.reads.Wrote(v.key, v.passed[:last]...)
	}
}

// redactStatus cleans every string of obj's status (redact.Strings) before
// it is written: tenants and `view` users read status, so no message may
// carry a pre-signed URL, a URL's user info or a token, whichever phase,
// Velero mirror or library error put it there. The one URL status holds on
// purpose — a NonAdminDownloadRequest's status.veleroDownloadRequest
// .status.downloadURL, readable only by edit and admin — is kept, and so are
// the records the engine compares, never shows (revisions, spec hashes):
// changed, they would never match again.
func redactStatus(obj v1alpha1.Object) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	if st := v.Elem().FieldByName("Status"); st.IsValid() && st.CanAddr() {
		redact.Strings(st.Addr().Interface(), "DownloadURL", "Revision", "SpecHash")
	}
}

// runAction resolves (for a new operation) and runs action, then the kind's
// AfterRun (whose look-again time, when sooner, is the result's).
// The run's events go to buffer, sent once its status is written.
// finished is true once the plan, deferPhase included, has ended; held when
// the run stopped at a brief wait and need not be recorded
// (engine.Outcome.Held).
func runAction[T v1alpha1.Object](ctx context.Context, d *Deps, kind v1alpha1.Kind, r kindReconciler[T], p kindPolicy[T], obj T, action string, buffer *events.Buffer) (result ctrl.Result, finished, held bool, err error) {
	uuid, corrected, err := operationIdentity(ctx, d.Client, d.OADPNamespace, kind.Kind, obj, r.Refs(obj), p.adopts)
	if err != nil {
		return ctrl.Result{}, false, false, err
	}
	if len(corrected) > 0 {
		msg := correctedMessage(kind.Kind, corrected)
		log.FromContext(ctx).Info("corrected status references", "corrected", corrected)
		buffer.Event(obj, corev1.EventTypeWarning, EventStatusCorrected, msg)
	}
	revision := ""
	if p.revision != nil {
		var err error
		if revision, err = p.revision(ctx, obj); err != nil {
			return ctrl.Result{}, false, false, err
		}
	}
	ns := &corev1.Namespace{}
	if err := d.Client.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, false, false, fmt.Errorf("reading namespace %s: %w", obj.GetNamespace(), err)
	}
	plan := engine.ResolvedAction{Name: action}
	if engine.NeedsNewPlan(obj, action, revision) {
		// Only a new operation resolves its blueprint; a running one
		// continues from its snapshot.
		var err error
		if plan, err = resolveAction(ctx, d, obj, kind.Blueprint, kind.Kind, action, ns.Labels); err != nil {
			d.Recorder.Event(obj, corev1.EventTypeWarning, EventBlueprintInvalid, err.Error())
			return ctrl.Result{}, false, false, reconcile.TerminalError(err)
		}
	}
	out, err := d.Runner.Run(ctx, engine.Request{Object: obj, Action: plan, UUID: uuid, OADPNamespace: d.OADPNamespace,
		Revision: revision, NamespaceLabels: ns.Labels, Recorder: buffer})
	if engine.IsTerminal(err) {
		d.Recorder.Event(obj, corev1.EventTypeWarning, EventBlueprintInvalid, err.Error())
		return ctrl.Result{}, false, false, reconcile.TerminalError(err)
	}
	if err != nil {
		return ctrl.Result{}, false, false, err
	}
	if out.Held {
		return ctrl.Result{RequeueAfter: out.RequeueAfter}, false, true, nil
	}
	again, err := r.AfterRun(ctx, obj, action, out.Finished)
	if err != nil {
		return ctrl.Result{}, false, false, err
	}
	if again > 0 && (out.RequeueAfter == 0 || again < out.RequeueAfter) {
		out.RequeueAfter = again
	}
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, out.Finished, false, nil
}

// resolveAction returns the blueprint action to run (see blueprints.Resolver:
// per-tenant blueprints, the override, the built-in; only validated
// generations). When a blueprint was passed over, the reason is recorded in
// the plan (status.plan.blueprintMessage) and a Warning event on obj.
func resolveAction(ctx context.Context, d *Deps, obj engine.Object, name, kind, action string, nsLabels map[string]string) (engine.ResolvedAction, error) {
	res, err := d.Blueprints.Resolve(ctx, name, kind, action, nsLabels)
	if err != nil {
		return engine.ResolvedAction{}, err
	}
	if res.Message != "" {
		d.Recorder.Event(obj, corev1.EventTypeWarning, EventBlueprintInvalid, res.Message)
	}
	return engine.ResolvedAction{Name: action, Blueprint: res.Blueprint, BlueprintGeneration: res.Generation, Spec: res.Action, Message: res.Message}, nil
}

// mirrorVelero reads the Velero object called name (a kind such as
// "Restore", for messages) from the OADP namespace into obj and, when it is
// the operation's (madeFor owner, with the origin keys of owner's kind),
// hands it to apply, which mirrors it into the NAC
// object's status. No name yet, no such object, or another operation's
// object is not an error: there is nothing to mirror.
func mirrorVelero[T client.Object](ctx context.Context, d *Deps, kind, name string, obj T, owner v1alpha1.Object, nacuuid string, apply func(T)) error {
	if name == "" {
		return nil
	}
	err := d.Client.Get(ctx, client.ObjectKey{Namespace: d.OADPNamespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Velero %s %s/%s: %w", kind, d.OADPNamespace, name, err)
	}
	keys := owner.OriginKeys()
	if !madeFor(obj, owner, keys.Label, keys.NamespaceAnnotation, nacuuid) {
		return nil
	}
	apply(obj)
	return nil
}

// madeFor reports whether obj, an object of the OADP namespace, carries the
// NACUUID label label=nacuuid and the origin-namespace annotation
// nsAnnotation naming owner's namespace: made by owner's operation.
func madeFor(obj, owner client.Object, label, nsAnnotation, nacuuid string) bool {
	return nacuuid != "" && obj.GetLabels()[label] == nacuuid && obj.GetAnnotations()[nsAnnotation] == owner.GetNamespace()
}
