package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/redact"
	"github.com/nacflow/nacflow/internal/runtime/events"
	"github.com/nacflow/nacflow/internal/runtime/loglevel"
	"github.com/nacflow/nacflow/internal/runtime/patch"
	"github.com/nacflow/nacflow/internal/runtime/planstore"
	"github.com/nacflow/nacflow/internal/runtime/staleness"
	"github.com/nacflow/nacflow/phases"
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
	Plans *planstore.PlanStore
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
// backoff, and controller-runtime's priority queue (newQueue), so that
// objects woken by the Velero objects they wait on go first (inFlight) and a
// restart's initial list goes last; concurrency comes from the manager
// (--max-concurrent-reconciles).
func (d *Deps) controllerOptions() controller.Options {
	return controller.Options{RateLimiter: NewRateLimiter(d.MinRetryDelay, d.MaxRetryDelay),
		UsePriorityQueue: ptr.To(true), NewQueue: newQueue}
}

// kindHooks are what one NAC kind's file tells the shared loop
// (nacReconciler), as a Knative reconciler's ReconcileKind does: the action
// the object's state calls for, the status fields naming its Velero
// objects, what follows a run, and what wakes its objects. What every kind
// shares comes from the kind registry (v1alpha1.KindOf: its name,
// finalizer, built-in blueprint, empty object) and from v1alpha1.Object
// (status.phase New before the first run, the observed generation after a
// successful one).
type kindHooks[T v1alpha1.Object] struct {
	// action picks the action obj's state calls for (v1alpha1.Action…;
	// the finalize action once obj is being deleted).
	action func(obj T) string
	// refs returns the status fields naming the Velero objects of obj's
	// operation (operationIdentity derives the NACUUID, correctRefs
	// corrects them).
	refs func(obj T) []statusRef
	// afterRun, when set, runs after each successful run, once the Velero
	// object the policy names is mirrored. A positive duration asks to look
	// at obj again within it. Errors fail the reconcile (retried with
	// backoff).
	afterRun func(ctx context.Context, obj T, run ran[T]) (time.Duration, error)
	// watches, when set, adds to the kind's controller (NAC objects of the
	// kind cluster-wide, spec changes only) the watches of what wakes its
	// objects: what the kind makes in the OADP namespace, mapped back by
	// toOrigin, and what its operations wait on.
	watches func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error)
}

// ran is what an afterRun hook learns of the run before it.
type ran[T v1alpha1.Object] struct {
	// action is the action that ran.
	action string
	// finished is true once the plan, deferPhase included, has ended.
	finished bool
	// mirrored is true when SyncStatus mirrored the Velero object the
	// policy names (found, and the operation's own).
	mirrored bool
	// before is the object as the reconcile read it, its plan loaded.
	before T
}

// kindPolicy is what a NAC kind chooses once; a zero field means no.
type kindPolicy[T v1alpha1.Object] struct {
	// adopts, when set, says which existing Velero objects obj's operation
	// may adopt (operationIdentity): the kinds whose objects OADP NAC may
	// have begun, and NonAdminBackups made for an existing Velero Backup
	// (backup sync's, a schedule's runs). nil: adoptNone.
	adopts func(obj T) adoption
	// mirror is the Velero kind (phases.SyncStatusArgs.Kind) of the status
	// reference (hooks.refs) whose object SyncStatus mirrors into obj after
	// each run of the actions mirrorAfter names.
	mirror      string
	mirrorAfter []string
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
	// followsPlan keeps the plan whole once it has ended
	// (engine.Request.KeepEndedPlan): the kind's hooks Follow one of its
	// phases afterwards. Other kinds' ended plans are compacted.
	followsPlan bool
}

// nacReconciler is the reconciler of the NAC kind T: one loop, in Flux's
// shape, for every kind, told by the kind's file its hooks and policy.
type nacReconciler[T v1alpha1.Object] struct {
	Deps
	kind   v1alpha1.Kind
	hooks  kindHooks[T]
	policy kindPolicy[T]
	// reads keeps the loop from acting on a cached object older than its
	// own last write.
	reads staleness.Tracker
}

// newNACReconciler returns the reconciler of the NAC kind T with d, the
// kind's hooks and its policy. T must be a kind of the registry:
// NewReconcilers makes no other, and a kind file that does is a build
// defect (it panics).
func newNACReconciler[T v1alpha1.Object](d Deps, hooks kindHooks[T], policy kindPolicy[T]) *nacReconciler[T] {
	kind, err := v1alpha1.KindFor[T]()
	if err != nil {
		panic(err)
	}
	return &nacReconciler[T]{Deps: d, kind: kind, hooks: hooks, policy: policy}
}

// SetupWithManager starts the controller of the kind: named for the kind in
// lower case (nonadminbackup, ...), with the capped backoff, watching
// objects of the kind cluster-wide on spec changes only, so that its own
// status patches do not retrigger it, plus the kind's own watches.
func (r *nacReconciler[T]) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(strings.ToLower(r.kind.Kind)).
		WithOptions(r.controllerOptions()).
		For(r.kind.New(), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	if r.hooks.watches != nil {
		var err error
		if b, err = r.hooks.watches(mgr, b); err != nil {
			return err
		}
	}
	return b.Complete(r)
}

// Reconcile moves one NAC object forward: get the object; wait while the
// cache is behind our own last write; then the deletion path (finalize,
// remove the finalizer) or the normal one (add the finalizer, run the
// action, expire or delete the object when its action calls for it). Both
// run the action its state calls for as far as it can go and write status
// once, with a patch (runOnce).
func (r *nacReconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	if r.Observe != nil {
		r.Observe(r.kind.Kind, req)
	}
	obj := r.kind.New().(T)
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.reads.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if stale, after := r.reads.IsStale(req.NamespacedName, obj.GetResourceVersion()); stale {
		return ctrl.Result{RequeueAfter: after}, nil
	}
	v := &versions{reads: &r.reads, key: req.NamespacedName, passed: []string{obj.GetResourceVersion()}}
	defer v.done()
	// Whatever path the object takes, a successful look at it asks for the
	// next within the kind's recheck period.
	defer func() {
		if p := r.policy.recheck; err == nil && p > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > p) {
			res.RequeueAfter = p
		}
	}()
	if !obj.GetDeletionTimestamp().IsZero() {
		return r.reconcileDelete(ctx, obj, v)
	}
	if !controllerutil.ContainsFinalizer(obj, r.kind.Finalizer) {
		controllerutil.AddFinalizer(obj, r.kind.Finalizer)
		if err := patch.Finalizers(ctx, r.Client, obj); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to %s: %w", req.NamespacedName, err)
		}
		v.wrote(obj)
	}
	action := r.hooks.action(obj)
	result, finished, err := r.runOnce(ctx, obj, action, v)
	if err != nil || !finished {
		return result, err
	}
	return r.reconcileEnded(ctx, obj, action, result)
}

// reconcileDelete is the deletion path: run the action the object's state
// calls for (its finalize action) and, once it has ended, forget the plan
// and remove the finalizer. An object without the finalizer is left alone.
func (r *nacReconciler[T]) reconcileDelete(ctx context.Context, obj T, v *versions) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, r.kind.Finalizer) {
		return ctrl.Result{}, nil
	}
	action := r.hooks.action(obj)
	result, finished, err := r.runOnce(ctx, obj, action, v)
	if err != nil || !finished {
		return result, err
	}
	// Before the finalizer goes, so that no plan outlives its object;
	// should the removal fail, the finalize action starts again, and its
	// phases are idempotent.
	if err := r.plans().Forget(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(obj, r.kind.Finalizer)
	err = patch.Finalizers(ctx, r.Client, obj)
	if apierrors.IsNotFound(err) {
		return result, nil // an earlier reconcile removed it: it logged
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	log.FromContext(ctx).Info("finalized", "kind", r.kind.Kind, "action", action)
	return result, nil
}

// reconcileEnded handles an object whose action has ended: a complete one
// expires at policy.expiresAt (requeued until then, deleted after), and the
// object is deleted after the actions policy.deleteWhenComplete (complete)
// and policy.deleteWhenEnded (complete or failed) name. Otherwise result
// stands.
func (r *nacReconciler[T]) reconcileEnded(ctx context.Context, obj T, action string, result ctrl.Result) (ctrl.Result, error) {
	p := r.policy
	complete := obj.GetPlan() != nil && obj.GetPlan().State == v1alpha1.PlanComplete
	if p.expiresAt != nil && complete {
		if at := p.expiresAt(obj); !at.IsZero() {
			if wait := time.Until(at); wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, nil
			}
			if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("deleting %s/%s, expired: %w", obj.GetNamespace(), obj.GetName(), err)
			}
			log.FromContext(ctx).Info("deleted: expired", "kind", r.kind.Kind, "expiredAt", at)
			return ctrl.Result{}, nil
		}
	}
	if slices.Contains(p.deleteWhenComplete, action) && complete || slices.Contains(p.deleteWhenEnded, action) {
		if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
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
func (r *nacReconciler[T]) runOnce(ctx context.Context, obj T, action string, v *versions) (ctrl.Result, bool, error) {
	// Every log line of this reconcile carries the action (controller-runtime
	// already adds the controller, namespace and name; the engine the phase).
	level := ""
	if r.policy.logLevel != nil {
		level = r.policy.logLevel(obj)
	}
	logger, storyLog := loglevel.Loggers(log.FromContext(ctx).WithValues("action", action), level)
	ctx = log.IntoContext(ctx, logger)
	plans := r.plans()
	stored, err := plans.Load(ctx, obj)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	before := obj.DeepCopyObject().(T)
	if obj.GetPhase() == "" {
		obj.SetPhase(v1alpha1.NonAdminPhaseNew)
	}
	buffer := &events.Buffer{}
	if r.policy.decided != nil {
		reportSpecChange(obj, r.policy.decided, buffer)
	}
	result, finished, held, err := r.runAction(ctx, obj, before, action, buffer)
	if held && err == nil {
		return result, false, nil
	}
	if err == nil {
		obj.SetObservedGeneration(obj.GetGeneration())
	}
	redactStatus(obj)
	if perr := plans.Write(ctx, r.Client, obj, before, stored); perr != nil {
		// What this run did is not recorded: neither are its events (the
		// retry, from a fresh read, tells the story once).
		return ctrl.Result{}, false, errors.Join(err, perr)
	}
	buffer.Each(func(eventType, reason, message string) {
		storyLog.Info(message, "event", reason, "type", eventType)
	})
	buffer.Flush(r.Recorder)
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

// runAction resolves (for a new operation) and runs action, then mirrors
// the kind's Velero object and runs its afterRun hook (whose look-again
// time, when sooner, is the result's). The run's events go to buffer, sent
// once its status is written. finished is true once the plan, deferPhase
// included, has ended; held when the run stopped at a brief wait and need
// not be recorded (engine.Outcome.Held).
func (r *nacReconciler[T]) runAction(ctx context.Context, obj, before T, action string, buffer *events.Buffer) (result ctrl.Result, finished, held bool, err error) {
	uuid, err := r.identity(ctx, obj, buffer)
	if err != nil {
		return ctrl.Result{}, false, false, err
	}
	revision := ""
	if r.policy.revision != nil {
		if revision, err = r.policy.revision(ctx, obj); err != nil {
			return ctrl.Result{}, false, false, err
		}
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, false, false, fmt.Errorf("reading namespace %s: %w", obj.GetNamespace(), err)
	}
	plan := engine.ResolvedAction{Name: action}
	if engine.NeedsNewPlan(obj, action, revision) {
		// Only a new operation resolves its blueprint; a running one
		// continues from its snapshot.
		if plan, err = r.resolveAction(ctx, obj, action, ns.Labels); err != nil {
			r.Recorder.Event(obj, corev1.EventTypeWarning, EventBlueprintInvalid, err.Error())
			return ctrl.Result{}, false, false, reconcile.TerminalError(err)
		}
	}
	out, err := r.Runner.Run(ctx, engine.Request{Object: obj, Action: plan, UUID: uuid, OADPNamespace: r.OADPNamespace,
		Revision: revision, NamespaceLabels: ns.Labels, Recorder: buffer, KeepEndedPlan: r.policy.followsPlan})
	if engine.IsTerminal(err) {
		r.Recorder.Event(obj, corev1.EventTypeWarning, EventBlueprintInvalid, err.Error())
		return ctrl.Result{}, false, false, reconcile.TerminalError(err)
	}
	if err != nil {
		return ctrl.Result{}, false, false, err
	}
	if out.Held {
		return ctrl.Result{RequeueAfter: out.RequeueAfter}, false, true, nil
	}
	again, err := r.afterRun(ctx, obj, uuid, ran[T]{action: action, finished: out.Finished, before: before})
	if err != nil {
		return ctrl.Result{}, false, false, err
	}
	if again > 0 && (out.RequeueAfter == 0 || again < out.RequeueAfter) {
		out.RequeueAfter = again
	}
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, out.Finished, false, nil
}

// identity returns the NACUUID of obj's operation (operationIdentity) and
// corrects the status references that disagree with it, with a Warning
// event StatusCorrected in buffer. Errors are the cache's.
func (r *nacReconciler[T]) identity(ctx context.Context, obj T, buffer *events.Buffer) (string, error) {
	adopts := adoptNone
	if r.policy.adopts != nil {
		adopts = r.policy.adopts(obj)
	}
	uuid, corrected, err := correctRefs(operationIdentity(ctx, r.Client, r.OADPNamespace, r.kind.Kind, obj, r.hooks.refs(obj), adopts))
	if err != nil {
		return "", err
	}
	if len(corrected) > 0 {
		log.FromContext(ctx).Info("corrected status references", "corrected", corrected)
		buffer.Event(obj, corev1.EventTypeWarning, EventStatusCorrected, correctedMessage(r.kind.Kind, corrected))
	}
	return uuid, nil
}

// resolveAction returns the blueprint action to run (see blueprints.Resolver:
// per-tenant blueprints, the override, the built-in; only validated
// generations). When a blueprint was passed over, the reason is recorded in
// the plan (status.plan.blueprintMessage) and a Warning event on obj.
func (r *nacReconciler[T]) resolveAction(ctx context.Context, obj T, action string, nsLabels map[string]string) (engine.ResolvedAction, error) {
	res, err := r.Blueprints.Resolve(ctx, r.kind.Blueprint, r.kind.Kind, action, nsLabels)
	if err != nil {
		return engine.ResolvedAction{}, err
	}
	if res.Message != "" {
		r.Recorder.Event(obj, corev1.EventTypeWarning, EventBlueprintInvalid, res.Message)
	}
	return engine.ResolvedAction{Name: action, Blueprint: res.Blueprint, BlueprintGeneration: res.Generation, Spec: res.Action, Message: res.Message}, nil
}

// afterRun mirrors the Velero object the policy names (after the actions
// policy.mirrorAfter names), then runs the kind's afterRun hook.
func (r *nacReconciler[T]) afterRun(ctx context.Context, obj T, uuid string, run ran[T]) (time.Duration, error) {
	if slices.Contains(r.policy.mirrorAfter, run.action) {
		var err error
		if run.mirrored, err = r.mirror(ctx, obj, uuid); err != nil {
			return 0, err
		}
	}
	if r.hooks.afterRun == nil {
		return 0, nil
	}
	return r.hooks.afterRun(ctx, obj, run)
}

// syncStatusFunc is the phase function through which, alone, a Velero
// object's status reaches its NAC object (docs/architecture.md,
// Controllers).
const syncStatusFunc = "SyncStatus"

// mirror runs SyncStatus, outside the plan, on the Velero object of the
// status reference the policy names (policy.mirror), with the guarded
// clients of obj's operation (uuid): Velero goes on changing it while the
// plan waits and after the plan has ended, when no phase runs. mirrored is
// false when there was nothing to mirror: no name yet, no such object, or
// one that is not the operation's (the safety rule's refusal, terminal: the
// identity step corrected status to name the operation's own objects, so
// such a name is a record of the past, never followed). Errors: the API
// server's.
func (r *nacReconciler[T]) mirror(ctx context.Context, obj T, uuid string) (bool, error) {
	name := ""
	for _, ref := range r.hooks.refs(obj) {
		if ref.kind == r.policy.mirror {
			name = *ref.name
		}
	}
	fn, ok := r.Runner.Registry.Get(syncStatusFunc)
	if name == "" || !ok {
		return false, nil
	}
	op := &engine.Operation{Object: obj, OADPNamespace: r.OADPNamespace, UUID: uuid, Phase: "mirror"}
	res, err := fn.Run(ctx, op, &phases.SyncStatusArgs{Kind: r.policy.mirror, Name: name})
	if engine.IsTerminal(err) {
		return false, nil
	}
	_, mirrored := res.Output["phase"]
	return mirrored, err
}
