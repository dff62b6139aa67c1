package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nacv1alpha1 "github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/redact"
	"github.com/nacflow/nacflow/internal/text"
)

// Event reasons the runner emits on the NAC object, on transitions only.
// kubectl describe reads them as a phase-by-phase story:
// one event per phase — how it ended (with its function and duration),
// or that it started waiting (the start of a wait), or why it failed — plus
// the action's start and end. A phase's start has no event of its own (the
// event that ends it, or starts its wait, says it ran): each event is an
// API write, and a NAB reaches "waiting" with 4 events, not 7.
const (
	EventStartedAction   = "StartedAction"
	EventPhaseWaiting    = "PhaseWaiting"
	EventPhaseTimedOut   = "PhaseTimedOut"
	EventEndedPhase      = "EndedPhase"
	EventPhaseFailed     = "PhaseFailed"
	EventPhaseRetrying   = "PhaseRetrying"
	EventEndedDeferPhase = "EndedDeferPhase"
	EventEndedAction     = "EndedAction"
	EventActionFailed    = "ActionFailed"
)

const (
	// DefaultRetries is how many more attempts a phase gets after a retryable
	// error when its blueprint sets no retries.
	DefaultRetries = 3
	// DefaultWaitTimeout is the wait timeout of a phase whose blueprint sets
	// none, unless the controller's --wait-timeout says otherwise.
	DefaultWaitTimeout = 10 * time.Minute
	// maxMessage bounds phase messages kept in status (bytes).
	maxMessage = 1024
)

// Runner runs plans. It holds no per-operation state: everything it needs to
// resume is in the object's status.plan.
type Runner struct {
	// Registry resolves phase functions by name.
	Registry *Registry
	// Recorder receives the transition events.
	Recorder record.EventRecorder
	// WaitTimeout is the default timeout of a waiting phase; 0 means
	// DefaultWaitTimeout.
	WaitTimeout time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Observer is told of actions and phases starting and ending (metrics);
	// nil: nobody.
	Observer Observer
}

// Observer is told of the transitions Run makes, as it makes them in memory:
// a transition whose status write then fails is made, and told, again on the
// retry, so counts may run slightly high after API errors, never low.
// Durations are measured from the recorded start times (seconds precision).
type Observer interface {
	// ActionStarted: a new plan for action started on obj.
	ActionStarted(obj Object, action string)
	// ActionEnded: the plan of action ended, failed or complete, after d.
	ActionEnded(obj Object, action string, failed bool, d time.Duration)
	// PhaseEnded: a phase (or the deferPhase) running fn ended after d.
	PhaseEnded(obj Object, fn string, failed bool, d time.Duration)
}

// Request is one call to Run: the object, which operation, and the resolved
// blueprint action used if the operation has not started yet.
type Request struct {
	// Object is the NAC object; Run changes its status in memory only: the
	// caller persists it with a status patch.
	Object Object
	// Action names the action to run and, for a new operation, resolves
	// it. When the object's plan is for another action or revision, or it
	// has none, Action is compiled and snapshotted as the new plan.
	Action ResolvedAction
	// UUID is the operation's NACUUID.
	UUID string
	// OADPNamespace is the namespace Velero runs in.
	OADPNamespace string
	// NamespaceLabels are the labels of the NAC object's Namespace (templates
	// see them as .NamespaceLabels), e.g. a cost centre.
	NamespaceLabels map[string]string
	// Revision is what the operation is for (e.g. the object's generation and
	// its inputs' versions). When the recorded plan has another revision, a
	// new run of the action starts. "" for kinds that never re-run.
	Revision string
	// Recorder, when set, receives this run's events instead of the
	// Runner's (a buffer the caller flushes once the status is
	// written).
	Recorder record.EventRecorder
	// KeepEndedPlan keeps the plan whole once it has ended, for a caller
	// that Follows one of its phases afterwards (a schedule's runs): by
	// default a plan that ends complete or failed is compacted (Compact).
	KeepEndedPlan bool
}

// NeedsNewPlan reports whether Run would start a new plan for req: the
// object has none, or one of another action or revision.
func NeedsNewPlan(obj Object, action, revision string) bool {
	p := obj.GetPlan()
	return p == nil || p.Action != action || p.Revision != revision
}

// Outcome says what the caller should do after Run.
type Outcome struct {
	// RequeueAfter is when to run again while a phase waits (0: not waiting).
	RequeueAfter time.Duration
	// Finished is true once the plan, deferPhase included, has ended.
	Finished bool
	// Held is true when the run stopped at a brief wait (WaitBriefly) that
	// was not recorded yet: the object's status changes and the run's
	// events need not be written (the next run makes them again), and the
	// Observer was not told of the run's transitions.
	Held bool
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Run continues the object's plan as far as it can go now: completed phases
// are never run again, a running or waiting phase is re-entered, and the
// next phase starts in the same call after one completes. The deferPhase runs
// once the main phases end, whether they completed or failed.
//
// It returns an error only for a retryable phase error that still has
// attempts left (the caller returns it so the workqueue backs off) or when a
// new plan cannot be compiled (a broken blueprint: the plan is not started).
func (r *Runner) Run(ctx context.Context, req Request) (Outcome, error) {
	rr := *r // the Runner holds no state: a copy with the run's recorder and observer
	if req.Recorder != nil {
		rr.Recorder = req.Recorder
	}
	// The Observer hears of the run's transitions once the run is over, and
	// not at all when it is held back (they will be made again).
	told := &observerBuffer{}
	if r.Observer != nil {
		rr.Observer = told
	}
	out, err := rr.run(ctx, req)
	if r.Observer != nil && !out.Held {
		told.replay(r.Observer)
	}
	return out, err
}

// run is Run with the run's recorder and buffered observer.
func (r *Runner) run(ctx context.Context, req Request) (Outcome, error) {
	obj := req.Object
	if NeedsNewPlan(obj, req.Action.Name, req.Revision) {
		if out, err := r.startPlan(ctx, req); err != nil || !out.Finished {
			return out, err
		}
	}
	plan := obj.GetPlan()
	if ended(plan) {
		return Outcome{Finished: true}, nil
	}
	if err := consistent(plan); err != nil {
		// A damaged record cannot be resumed safely: the plan fails, once,
		// saying why (not a blueprint problem, and nothing to retry).
		plan.Message = bounded(err.Error())
		r.endPlan(req, plan, nacv1alpha1.PlanFailed, fmt.Sprintf("Action %s failed: %v", plan.Action, err))
		return Outcome{Finished: true}, nil
	}
	plan.State = nacv1alpha1.PlanRunning
	op := &Operation{Object: obj, OADPNamespace: req.OADPNamespace, UUID: req.UUID, NamespaceLabels: req.NamespaceLabels}
	failed, out, err := r.runPhases(ctx, op, plan)
	if err != nil || out.RequeueAfter > 0 {
		return out, err
	}
	if out, err := r.runDeferPhase(ctx, op, plan); err != nil || out.RequeueAfter > 0 {
		return out, err
	}
	if failed || (plan.DeferPhase != nil && plan.DeferPhase.State == nacv1alpha1.PhaseFailed) {
		r.endPlan(req, plan, nacv1alpha1.PlanFailed, fmt.Sprintf("Action %s failed", plan.Action))
	} else {
		r.endPlan(req, plan, nacv1alpha1.PlanComplete, fmt.Sprintf("Ended action %s", plan.Action))
	}
	return Outcome{Finished: true}, nil
}

// Compact cuts plan, which has ended complete or failed, to what a reader of
// status needs, and marks it compacted: the spec snapshot (nothing resumes
// an ended plan), the phases' outputs (later phases of the same plan were
// their only readers) and start times (a phase of an ended plan started
// when the one before it ended, the first at the plan's start: a reader
// derives them), an attempt count of 1 (0 for a phase that ran once), and
// the message of a phase that completed at its first attempt unless
// keeps(func, message) says it holds what nothing else does (MessageKeeper;
// nil keeps every message). What such a phase did is in the object's
// conditions and Velero references, and in its events while they live.
// Names, functions, states and completion times stay, and so do the
// messages of phases that failed, were skipped, retried or timed out:
// kubectl describe's story of what went wrong. A plan that completed with
// every phase plain (completed at its first attempt, no message kept)
// keeps no phase list at all: its summary (allPlain). Every NAC object keeps its
// last plan for its life, in etcd and in the controller's cache, so this is
// most of what an object costs once its operation is over
// (docs/performance.md). A plan that has not ended, or was superseded, is
// left as it is.
func Compact(plan *nacv1alpha1.PlanStatus, keeps func(fn, message string) bool) {
	if plan == nil || (plan.State != nacv1alpha1.PlanComplete && plan.State != nacv1alpha1.PlanFailed) {
		return
	}
	plan.Spec, plan.Compacted = nil, true
	compactPhase := func(ps *nacv1alpha1.PhaseStatus) {
		ps.StartTime, ps.Output = nil, nil
		if ps.Attempts == 1 {
			ps.Attempts = 0
		}
		plain := ps.State == nacv1alpha1.PhaseComplete && ps.Attempts == 0 && !strings.HasSuffix(ps.Message, timedOutContinued)
		if plain && keeps != nil && !keeps(ps.Func, ps.Message) {
			ps.Message = ""
		}
	}
	for i := range plan.Phases {
		compactPhase(&plan.Phases[i])
	}
	if plan.DeferPhase != nil {
		compactPhase(plan.DeferPhase)
	}
	if plan.State == nacv1alpha1.PlanComplete && allPlain(plan) {
		plan.Phases, plan.DeferPhase = nil, nil
	}
}

// allPlain reports whether every phase of a compacted plan, its deferPhase
// included, completed at its first attempt and kept no message: such a
// plan's phase list tells nothing its state, current phase and times do
// not (the blueprint names the phases), so Compact keeps only that summary
// (IsSummary), as Tekton's minimal embedded status keeps child references
// rather than every TaskRun's status, for the same reason: etcd's bytes.
func allPlain(plan *nacv1alpha1.PlanStatus) bool {
	plain := func(ps *nacv1alpha1.PhaseStatus) bool {
		return ps.State == nacv1alpha1.PhaseComplete && ps.Attempts == 0 && ps.Message == ""
	}
	for i := range plan.Phases {
		if !plain(&plan.Phases[i]) {
			return false
		}
	}
	return plan.DeferPhase == nil || plain(plan.DeferPhase)
}

// timedOutContinued ends the message of a phase that timed out and
// completed (onTimeout: continue); Compact keeps such a message.
const timedOutContinued = "; continued (onTimeout: continue)"

// startPlan ends a plan still running for another action or revision
// (supersede; Finished is false while its deferPhase waits), then compiles
// and records req's plan with a StartedAction event. A blueprint that does
// not compile is a terminal error: nothing starts.
func (r *Runner) startPlan(ctx context.Context, req Request) (Outcome, error) {
	obj := req.Object
	var previous *nacv1alpha1.SupersededPlan
	if old := obj.GetPlan(); old != nil && !ended(old) {
		if out, err := r.supersede(ctx, req, old); err != nil || !out.Finished {
			return out, err
		}
		previous = supersededRecord(old)
	}
	plan, err := Compile(req.Action, r.Registry, r.now())
	if err != nil {
		return Outcome{}, Terminal(err)
	}
	plan.Revision, plan.Superseded = req.Revision, previous
	obj.SetPlan(plan)
	r.event(obj, corev1.EventTypeNormal, EventStartedAction, "Started action %s of blueprint %s", plan.Action, plan.Blueprint)
	if r.Observer != nil {
		r.Observer.ActionStarted(obj, plan.Action)
	}
	return Outcome{Finished: true}, nil
}

// runPhases runs the plan's main phases from where the record stands, in
// order, until one waits or returns a retryable error (out, err), or all
// have ended; failed says whether one failed (the rest are then skipped). A
// phase reached after the plan's deadline fails without running.
func (r *Runner) runPhases(ctx context.Context, op *Operation, plan *nacv1alpha1.PlanStatus) (failed bool, out Outcome, err error) {
	left := r.deadlineLeft(plan)
	for i := range plan.Phases {
		ps := &plan.Phases[i]
		switch {
		case failed:
			if ps.State == nacv1alpha1.PhasePending {
				ps.State = nacv1alpha1.PhaseSkipped
				ps.Message = "skipped: an earlier phase failed"
			}
			continue
		case ps.State == nacv1alpha1.PhaseComplete, ps.State == nacv1alpha1.PhaseSkipped:
			continue
		case ps.State == nacv1alpha1.PhaseFailed:
			failed = true
			continue
		case left == 0:
			if ps.StartTime == nil {
				start := metav1.NewTime(r.now())
				ps.StartTime = &start
			}
			r.fail(op.Object, ps, fmt.Sprintf("plan deadline of %s exceeded", plan.Spec.Deadline.Duration))
			plan.Current = ps.Name + ": " + string(ps.State)
			failed = true
			continue
		}
		out, err := r.step(ctx, op, plan, ps, plan.Spec.Phases[i], false)
		if err != nil || out.RequeueAfter > 0 {
			if left > 0 && out.RequeueAfter > left {
				out.RequeueAfter = left
			}
			return false, out, err
		}
		failed = ps.State == nacv1alpha1.PhaseFailed
	}
	return failed, Outcome{}, nil
}

// deadlineLeft returns the time left before the plan's deadline: 0 once it
// passed, -1 when none is set.
func (r *Runner) deadlineLeft(plan *nacv1alpha1.PlanStatus) time.Duration {
	d := plan.Spec.Deadline
	if d == nil || plan.StartTime == nil {
		return -1
	}
	return max(d.Duration-r.now().Sub(plan.StartTime.Time), 0)
}

// runDeferPhase runs the plan's deferPhase, if it has one that has not ended.
func (r *Runner) runDeferPhase(ctx context.Context, op *Operation, plan *nacv1alpha1.PlanStatus) (Outcome, error) {
	d := plan.DeferPhase
	if d == nil || d.State == nacv1alpha1.PhaseComplete || d.State == nacv1alpha1.PhaseFailed {
		return Outcome{}, nil
	}
	return r.step(ctx, op, plan, d, *plan.Spec.DeferPhase, true)
}

// endPlan records that plan ended in state (now), with an EndedAction event
// — ActionFailed (Warning) for a failed plan — saying msg, tells the
// Observer (a plan that did not complete counts as failed), then compacts
// it unless req.KeepEndedPlan (Compact leaves a superseded plan whole).
func (r *Runner) endPlan(req Request, plan *nacv1alpha1.PlanStatus, state nacv1alpha1.PlanState, msg string) {
	obj := req.Object
	end := metav1.NewTime(r.now())
	plan.State, plan.CompletionTime = state, &end
	if state == nacv1alpha1.PlanFailed {
		r.event(obj, corev1.EventTypeWarning, EventActionFailed, "%s", msg)
	} else {
		r.event(obj, corev1.EventTypeNormal, EventEndedAction, "%s", msg)
	}
	if r.Observer != nil {
		r.Observer.ActionEnded(obj, plan.Action, state != nacv1alpha1.PlanComplete, since(plan.StartTime, end))
	}
	if !req.KeepEndedPlan {
		Compact(plan, r.Registry.KeepsMessage)
	}
}

// ended reports whether plan has ended, its deferPhase included: complete,
// failed, or superseded with its deferPhase run.
func ended(plan *nacv1alpha1.PlanStatus) bool {
	switch plan.State {
	case nacv1alpha1.PlanComplete, nacv1alpha1.PlanFailed:
		return true
	case nacv1alpha1.PlanSuperseded:
		return plan.CompletionTime != nil
	}
	return false
}

// supersede ends plan, which was running when req asked for another action
// or revision (the deferPhase always runs, as Kanister's does): its pending
// and running phases are skipped with the reason, its deferPhase runs (over
// as many calls as it needs: Outcome.Finished is false while it waits), then
// the plan is marked superseded with an EndedAction event and the Observer
// told (as not complete). A plan whose record is damaged is only marked.
func (r *Runner) supersede(ctx context.Context, req Request, plan *nacv1alpha1.PlanStatus) (Outcome, error) {
	obj := req.Object
	if plan.State != nacv1alpha1.PlanSuperseded {
		why := fmt.Sprintf("superseded by a new run of action %s (revision changed)", req.Action.Name)
		if plan.Action != req.Action.Name {
			why = fmt.Sprintf("superseded by action %s", req.Action.Name)
		}
		plan.State, plan.Message = nacv1alpha1.PlanSuperseded, why
		now := metav1.NewTime(r.now())
		for i := range plan.Phases {
			ps := &plan.Phases[i]
			switch ps.State {
			case nacv1alpha1.PhasePending, nacv1alpha1.PhaseRunning, nacv1alpha1.PhaseWaiting:
				ps.State, ps.Message, ps.CompletionTime = nacv1alpha1.PhaseSkipped, bounded("skipped: the plan was "+why), &now
			}
		}
		log.FromContext(ctx).Info("plan superseded", "oldAction", plan.Action, "reason", why)
	}
	if consistent(plan) == nil {
		op := &Operation{Object: obj, OADPNamespace: req.OADPNamespace, UUID: req.UUID, NamespaceLabels: req.NamespaceLabels}
		if out, err := r.runDeferPhase(ctx, op, plan); err != nil || out.RequeueAfter > 0 {
			return out, err
		}
	}
	r.endPlan(req, plan, nacv1alpha1.PlanSuperseded, fmt.Sprintf("Ended action %s: %s", plan.Action, plan.Message))
	return Outcome{Finished: true}, nil
}

// supersededRecord summarises a superseded plan for its successor's status.
func supersededRecord(plan *nacv1alpha1.PlanStatus) *nacv1alpha1.SupersededPlan {
	rec := &nacv1alpha1.SupersededPlan{Action: plan.Action, Revision: plan.Revision, Reason: plan.Message,
		Current: plan.Current, StartTime: plan.StartTime, CompletionTime: plan.CompletionTime}
	if plan.DeferPhase != nil {
		rec.DeferPhaseState = plan.DeferPhase.State
	}
	return rec
}

// consistent checks that a recorded plan matches its own snapshot, so that a
// damaged status can never make the runner index past the phases.
func consistent(plan *nacv1alpha1.PlanStatus) error {
	if plan.Spec == nil || len(plan.Spec.Phases) != len(plan.Phases) ||
		(plan.Spec.DeferPhase == nil) != (plan.DeferPhase == nil) {
		return fmt.Errorf("status.plan of action %q does not match its spec snapshot: the plan cannot be resumed", plan.Action)
	}
	for i := range plan.Phases {
		if plan.Phases[i].Name != plan.Spec.Phases[i].Name {
			return fmt.Errorf("status.plan.phases[%d] is %q but the spec snapshot says %q: the plan cannot be resumed",
				i, plan.Phases[i].Name, plan.Spec.Phases[i].Name)
		}
	}
	return nil
}

// step runs one phase once and records the transition in ps. It returns a
// RequeueAfter when the phase waits, and an error when a retryable error has
// attempts left; otherwise the phase has completed or failed.
func (r *Runner) step(ctx context.Context, op *Operation, plan *nacv1alpha1.PlanStatus, ps *nacv1alpha1.PhaseStatus, spec nacv1alpha1.BlueprintPhase, isDefer bool) (Outcome, error) {
	obj := op.Object
	now := r.now()
	defer func() { plan.Current = ps.Name + ": " + string(ps.State) }()
	if ps.StartTime == nil && ps.State != nacv1alpha1.PhasePending {
		// A damaged record: restart the phase's clock rather than fail on it.
		start := metav1.NewTime(now)
		ps.StartTime = &start
	}
	if ps.State == nacv1alpha1.PhasePending {
		start := metav1.NewTime(now)
		ps.StartTime = &start
		ps.State = nacv1alpha1.PhaseRunning
	}

	op.Phase = ps.Name
	res, err := r.call(ctx, op, plan, spec)
	switch {
	case err != nil:
		return r.onError(ctx, obj, ps, spec, err)
	case res.Wait:
		return r.onWait(obj, ps, spec, res, now, isDefer)
	default:
		ps.Attempts++
		if err := checkOutput(res.Output); err != nil {
			r.fail(obj, ps, err.Error())
			return Outcome{}, nil
		}
		r.complete(obj, ps, res.Message, res.Output, isDefer)
		return Outcome{}, nil
	}
}

// onError records a phase's error: a terminal one fails the phase; a
// transient one (the API server could not answer) is returned for the
// controller's capped backoff without using up an attempt or making an
// event (an outage would flood them, and they could not be written anyway);
// any other uses an attempt and is returned while the phase's retries last,
// then fails the phase.
func (r *Runner) onError(ctx context.Context, obj Object, ps *nacv1alpha1.PhaseStatus, spec nacv1alpha1.BlueprintPhase, err error) (Outcome, error) {
	switch {
	case IsTerminal(err):
		ps.Attempts++
		log.FromContext(ctx).Info("phase failed", "phase", ps.Name, "func", ps.Func, "reason", err.Error())
		r.fail(obj, ps, err.Error())
		return Outcome{}, nil
	case IsTransient(err):
		ps.Message = bounded(fmt.Sprintf("the API server could not answer, retrying: %v", err))
		return Outcome{}, fmt.Errorf("phase %s: %w", ps.Name, err)
	}
	ps.Attempts++
	retries := int32(DefaultRetries)
	if spec.Retries != nil {
		retries = *spec.Retries
	}
	if ps.Attempts > retries {
		r.fail(obj, ps, fmt.Sprintf("failed after %d attempts: %v", ps.Attempts, err))
		return Outcome{}, nil
	}
	ps.Message = bounded(fmt.Sprintf("attempt %d failed, retrying: %v", ps.Attempts, err))
	r.event(obj, corev1.EventTypeWarning, EventPhaseRetrying, "Phase %s attempt %d failed: %v", ps.Name, ps.Attempts, err)
	return Outcome{}, fmt.Errorf("phase %s: %w", ps.Name, err)
}

// onWait records a waiting phase (one PhaseWaiting event per wait) and
// returns when to look again, at most when its timeout (spec.timeout, else
// the Runner's WaitTimeout, else DefaultWaitTimeout) runs out; once it has,
// the phase fails, or completes with onTimeout: continue.
func (r *Runner) onWait(obj Object, ps *nacv1alpha1.PhaseStatus, spec nacv1alpha1.BlueprintPhase, res Result, now time.Time, isDefer bool) (Outcome, error) {
	timeout := r.WaitTimeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	if spec.Timeout != nil {
		timeout = spec.Timeout.Duration
	}
	waited := now.Sub(ps.StartTime.Time)
	if waited >= timeout {
		msg := fmt.Sprintf("timed out after %s: %s", timeout, res.Message)
		if spec.OnTimeout == nacv1alpha1.OnTimeoutContinue {
			r.event(obj, corev1.EventTypeWarning, EventPhaseTimedOut, "Phase %s %s; continuing (onTimeout: continue)", ps.Name, msg)
			r.complete(obj, ps, msg+timedOutContinued, nil, isDefer)
			return Outcome{}, nil
		}
		r.fail(obj, ps, msg)
		return Outcome{}, nil
	}
	if res.Brief && ps.State != nacv1alpha1.PhaseWaiting {
		return Outcome{RequeueAfter: min(max(res.RecheckAfter, time.Millisecond), timeout-waited), Held: true}, nil
	}
	if ps.State != nacv1alpha1.PhaseWaiting {
		r.event(obj, corev1.EventTypeNormal, EventPhaseWaiting, "Phase %s (%s) is waiting: %s", ps.Name, ps.Func, res.Message)
	}
	ps.State = nacv1alpha1.PhaseWaiting
	ps.Message = bounded(res.Message)
	if res.Output != nil {
		// A waiting phase may record its progress (a place in a queue);
		// the output of its completion replaces it.
		if err := checkOutput(res.Output); err == nil {
			ps.Output = res.Output
		}
	}
	after := res.RecheckAfter
	// A watched wait's own deadline within MaxSafetyNet is its safety net:
	// a lost event costs no more than that wait would at most anyway.
	if res.Watched && (after <= 0 || after > MaxSafetyNet) {
		if net := SafetyNet(waited); after <= 0 || net < after {
			after = net
		}
	}
	if after <= 0 || after > timeout-waited {
		after = timeout - waited
	}
	return Outcome{RequeueAfter: after}, nil
}

// call renders the phase's args, decodes them into the function's typed args
// and runs it. Render and decode errors are terminal: retrying the same
// blueprint cannot fix them.
func (r *Runner) call(ctx context.Context, op *Operation, plan *nacv1alpha1.PlanStatus, spec nacv1alpha1.BlueprintPhase) (Result, error) {
	fn, ok := r.Registry.Get(spec.Func)
	if !ok {
		return Result{}, Terminalf("unknown func %q", spec.Func)
	}
	params, err := NewParams(op, plan)
	if err != nil {
		return Result{}, Terminal(err)
	}
	rendered, err := RenderArgsContext(ctx, spec.Args, params)
	if err != nil && ctx.Err() != nil {
		// The reconcile was cancelled (the controller stops): not the
		// template's fault, and the phase is resumed on the next start.
		return Result{}, fmt.Errorf("rendering stopped: %w", ctx.Err())
	}
	if err != nil {
		return Result{}, Terminalf("rendering %w", err)
	}
	args := fn.NewArgs()
	if err := DecodeArgs(rendered, args); err != nil {
		return Result{}, Terminalf("%s %w", spec.Func, err)
	}
	return safeRun(ctx, fn, op, args)
}

// safeRun runs fn, turning a panic into a terminal error: bad input, or a
// bug in one function, fails that phase with a clear message instead of
// crashing the controller (and every other tenant's operations with it).
func safeRun(ctx context.Context, fn Func, op *Operation, args any) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.FromContext(ctx).Error(fmt.Errorf("%v", p), "phase function panicked", "phase", op.Phase, "func", fn.Name(), "stack", string(debug.Stack()))
			res, err = Result{}, Terminalf("%s panicked: %v (a bug: please report it)", fn.Name(), p)
		}
	}()
	return fn.Run(ctx, op, args)
}

func (r *Runner) complete(obj Object, ps *nacv1alpha1.PhaseStatus, msg string, output map[string]string, isDefer bool) {
	end := metav1.NewTime(r.now())
	ps.State = nacv1alpha1.PhaseComplete
	ps.CompletionTime = &end
	ps.Message = bounded(msg)
	ps.Output = output
	reason, what := EventEndedPhase, "phase"
	if isDefer {
		reason, what = EventEndedDeferPhase, "deferPhase"
	}
	took := since(ps.StartTime, end).Round(time.Second)
	if msg != "" {
		r.event(obj, corev1.EventTypeNormal, reason, "Ended %s %s (%s) in %s: %s", what, ps.Name, ps.Func, took, msg)
	} else {
		r.event(obj, corev1.EventTypeNormal, reason, "Ended %s %s (%s) in %s", what, ps.Name, ps.Func, took)
	}
	if r.Observer != nil {
		r.Observer.PhaseEnded(obj, ps.Func, false, since(ps.StartTime, end))
	}
}

// since is end − start, 0 when start is unknown.
func since(start *metav1.Time, end metav1.Time) time.Duration {
	if start == nil {
		return 0
	}
	return end.Sub(start.Time)
}

func (r *Runner) fail(obj Object, ps *nacv1alpha1.PhaseStatus, msg string) {
	end := metav1.NewTime(r.now())
	ps.State = nacv1alpha1.PhaseFailed
	ps.CompletionTime = &end
	ps.Message = bounded(msg)
	r.event(obj, corev1.EventTypeWarning, EventPhaseFailed, "Phase %s failed: %s", ps.Name, msg)
	if r.Observer != nil {
		r.Observer.PhaseEnded(obj, ps.Func, true, since(ps.StartTime, end))
	}
}

func (r *Runner) event(obj Object, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, eventType, reason, format, args...)
	}
}

// Limits of a phase's output, as status.plan.phases[].output can hold it
// (the CRD's maxProperties; values bounded so that a plan of 32 phases stays
// far below etcd's object size limit).
const (
	MaxOutputKeys       = 16
	MaxOutputValueBytes = 4096
)

// checkOutput returns an error naming the limit output breaks, nil when it
// fits: at most MaxOutputKeys keys, each value at most MaxOutputValueBytes.
// A phase whose output does not fit fails with that error instead of making
// every status write of the object fail.
func checkOutput(output map[string]string) error {
	if len(output) > MaxOutputKeys {
		return fmt.Errorf("phase output has %d keys, at most %d fit in status.plan", len(output), MaxOutputKeys)
	}
	for k, v := range output {
		if len(v) > MaxOutputValueBytes {
			return fmt.Errorf("phase output %q is %d bytes, at most %d fit in status.plan", k, len(v), MaxOutputValueBytes)
		}
	}
	return nil
}

// bounded returns s as a status message: redacted, because phase messages
// and errors can quote untrusted text (requester input, API server answers),
// then cut to maxMessage bytes on a rune boundary, so status stays valid
// UTF-8.
func bounded(s string) string {
	return text.Truncate(redact.String(s), maxMessage)
}

// observerBuffer is an Observer that keeps what it is told, for replay.
type observerBuffer struct{ calls []func(Observer) }

func (b *observerBuffer) ActionStarted(obj Object, action string) {
	b.calls = append(b.calls, func(o Observer) { o.ActionStarted(obj, action) })
}

func (b *observerBuffer) ActionEnded(obj Object, action string, failed bool, d time.Duration) {
	b.calls = append(b.calls, func(o Observer) { o.ActionEnded(obj, action, failed, d) })
}

func (b *observerBuffer) PhaseEnded(obj Object, fn string, failed bool, d time.Duration) {
	b.calls = append(b.calls, func(o Observer) { o.PhaseEnded(obj, fn, failed, d) })
}

// replay tells o what b was told, in order.
func (b *observerBuffer) replay(o Observer) {
	for _, call := range b.calls {
		call(o)
	}
}
