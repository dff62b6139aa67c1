package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BlueprintAction is one action of a Blueprint (Kanister's BlueprintAction): an
// ordered list of phases and an optional deferPhase that always runs once the
// phases end, whether they completed or failed.
type BlueprintAction struct {
	// phases run in order; a phase starts only when the previous one completed.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Phases []BlueprintPhase `json:"phases"`

	// deferPhase runs after the phases end (complete or failed), like
	// Kanister's deferPhase: for cleanup and final status.
	// +optional
	DeferPhase *BlueprintPhase `json:"deferPhase,omitempty"`

	// deadline bounds the whole plan's phases (a Go duration such as 6h):
	// past it, the phase in progress fails and the deferPhase runs. Unset:
	// no deadline (each phase's timeout still applies).
	// +optional
	Deadline *metav1.Duration `json:"deadline,omitempty"`

	// safetyOptOut names, by func, the safety phases of the built-in action
	// (its phases marked safety: true, e.g. VerifyBackupContents) that this
	// action leaves out on purpose. An admin's action that overrides a
	// built-in one and lacks one of them (no phase with that func, or one
	// with onTimeout: continue) without naming it here is invalid: the
	// Blueprint reports Valid=False naming the func, and the built-in stays
	// in force. Each entry must be one of the built-in action's safety funcs.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	SafetyOptOut []string `json:"safetyOptOut,omitempty"`
}

// OnTimeout says what a wait phase does when its timeout expires.
// +kubebuilder:validation:Enum=fail;continue
type OnTimeout string

const (
	// OnTimeoutFail fails the phase, and so the plan (the default).
	OnTimeoutFail OnTimeout = "fail"
	// OnTimeoutContinue completes the phase with a timeout message and goes on.
	OnTimeoutContinue OnTimeout = "continue"
)

// BlueprintPhase is one step of a BlueprintAction: a registered phase function
// and its templated arguments.
type BlueprintPhase struct {
	// name identifies the phase in the plan status; later phases read its
	// outputs as {{ .Phases.<name>.Output.<key> }}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9]*$`
	Name string `json:"name"`

	// func names the registered phase function to run (e.g. CreateVeleroBackup).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Func string `json:"func"`

	// args are the function's arguments. String values are Go templates
	// (text/template with an allow-listed sprig function set), rendered just
	// before the phase runs, then decoded strictly into the function's typed
	// arguments.
	// +optional
	Args map[string]apiextensionsv1.JSON `json:"args,omitempty"`

	// timeout bounds how long the phase may wait (a Go duration such as 10m or
	// 4h). Unset: the controller's --wait-timeout default.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// onTimeout is what happens when timeout expires: fail (default) or
	// continue.
	// +optional
	OnTimeout OnTimeout `json:"onTimeout,omitempty"`

	// retries is how many more attempts a phase gets after a retryable error
	// before it fails. Unset: 3.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	Retries *int32 `json:"retries,omitempty"`

	// safety marks the phase as one of nacflow's safety checks (in the
	// built-in blueprints: each kind's tenant-rule validation and
	// VerifyBackupContents). It matters in the built-ins: an admin's action
	// overriding one must keep a phase with each marked func (whatever its
	// name) or name the func in its safetyOptOut. In an admin's blueprint it
	// is informational (copied by `kubectl nac blueprint dump`).
	// +optional
	Safety bool `json:"safety,omitempty"`
}

// PlanState is the state of a whole plan.
// +kubebuilder:validation:Enum=pending;running;complete;failed;superseded
type PlanState string

// Plan states. A plan is superseded when the action or revision it was
// started for changed while it ran: its remaining phases are skipped, its
// deferPhase runs, then the new plan starts (and records the superseded one
// in status.plan.superseded).
const (
	PlanPending    PlanState = "pending"
	PlanRunning    PlanState = "running"
	PlanComplete   PlanState = "complete"
	PlanFailed     PlanState = "failed"
	PlanSuperseded PlanState = "superseded"
)

// PhaseState is the state of one phase of a plan.
// +kubebuilder:validation:Enum=pending;running;waiting;complete;failed;skipped
type PhaseState string

// Phase states.
const (
	PhasePending  PhaseState = "pending"
	PhaseRunning  PhaseState = "running"
	PhaseWaiting  PhaseState = "waiting"
	PhaseComplete PhaseState = "complete"
	PhaseFailed   PhaseState = "failed"
	PhaseSkipped  PhaseState = "skipped"
)

// BuiltInGeneration is the blueprintGeneration recorded when the embedded
// built-in blueprint was used.
const BuiltInGeneration = "built-in"

// PlanStatus is the phase plan of the operation a NAC object runs: which
// blueprint action, a snapshot of it, and per-phase progress. It is the
// record the phase runner resumes from after a restart.
type PlanStatus struct {
	// action is the blueprint action being run (backup, delete, ...).
	// +required
	Action string `json:"action"`

	// blueprint is the name of the blueprint the action came from.
	// +required
	Blueprint string `json:"blueprint"`

	// blueprintGeneration is the blueprint's metadata.generation, or
	// "built-in" for the embedded default.
	// +optional
	BlueprintGeneration string `json:"blueprintGeneration,omitempty"`

	// blueprintMessage says why this blueprint was chosen when it is not the
	// obvious one (a newer generation or a more specific blueprint is
	// invalid).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	BlueprintMessage string `json:"blueprintMessage,omitempty"`

	// state of the plan: pending, running, complete, failed or superseded.
	// +required
	State PlanState `json:"state"`

	// message says why a superseded plan was superseded (deterministic).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// superseded records the plan this one replaced, when that one was
	// superseded while it ran (the action or revision changed).
	// +optional
	Superseded *SupersededPlan `json:"superseded,omitempty"`

	// revision is what the operation was started for (for kinds that re-run
	// on change: the object's generation and its inputs' versions). A
	// different revision starts a new run of the action.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Revision string `json:"revision,omitempty"`

	// current names the phase that runs, waits or last ended, with its state,
	// as "<phase>: <state>" (for printer columns and a quick look).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Current string `json:"current,omitempty"`

	// startTime is when the operation started; templates see it as .Time.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the plan (including its deferPhase) ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// spec is the resolved blueprint action, snapshotted when the operation
	// started, so that a blueprint edit never changes an operation in flight.
	// Left out once the plan has ended complete or failed (see compacted).
	// +optional
	Spec *BlueprintAction `json:"spec,omitempty"`

	// compacted is set once the plan ended complete or failed and was cut to
	// what a reader needs (every NAC object keeps its last plan in etcd and
	// in the controller's cache): the spec snapshot, the phases' outputs
	// and start times (a phase starts when the one before it ends; the
	// first at the plan's startTime) and single attempts (0 for a phase
	// that ran once) are left out; names, functions, states, completion
	// times and messages stay. A plan that completed with every phase
	// completed at its first attempt and no message worth keeping keeps
	// no phases or deferPhase at all: its state, current phase and times
	// say all of it.
	// +optional
	Compacted bool `json:"compacted,omitempty"`

	// phases is the progress of each phase, in plan order.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Phases []PhaseStatus `json:"phases,omitempty"`

	// deferPhase is the progress of the deferPhase, if the action has one.
	// +optional
	DeferPhase *PhaseStatus `json:"deferPhase,omitempty"`
}

// SupersededPlan is what remains of a plan another one replaced while it
// ran: which action and revision, why it was superseded, when it ran, and how
// its deferPhase ended.
type SupersededPlan struct {
	// action of the superseded plan.
	// +required
	Action string `json:"action"`
	// revision of the superseded plan.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Revision string `json:"revision,omitempty"`
	// reason it was superseded.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
	// current is the phase it was at when superseded ("<phase>: <state>").
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Current string `json:"current,omitempty"`
	// deferPhaseState is how its deferPhase ended ("" when it had none).
	// +optional
	DeferPhaseState PhaseState `json:"deferPhaseState,omitempty"`
	// startTime is when the superseded plan started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when it ended (its deferPhase included).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// PhaseStatus is the progress of one phase.
type PhaseStatus struct {
	// name of the phase, as in the blueprint.
	// +required
	Name string `json:"name"`

	// func is the phase function the phase runs.
	// +required
	Func string `json:"func"`

	// state of the phase.
	// +required
	State PhaseState `json:"state"`

	// startTime is when the phase first ran.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the phase completed, failed or was skipped.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// attempts counts the phase's runs that ended in a retryable error, plus
	// the run that ended it.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// message says what the phase did or is waiting for. Deterministic: no
	// timestamps.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// output is the phase's small key/value result; later phases read it as
	// {{ .Phases.<name>.Output.<key> }}.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Output map[string]string `json:"output,omitempty"`
}

// Summarize cuts p, a compacted plan, to its summary: what the controller
// reads of an ended plan (action, blueprint, revision, state, current and
// times), without its phases. The controller's cache holds ended plans so
// (every NAC object keeps its last plan for its life); a status write of an
// object whose plan is a summary leaves the stored plan as it is
// (IsSummary). A plan that is not compacted is left whole.
func (p *PlanStatus) Summarize() {
	if p == nil || !p.Compacted {
		return
	}
	p.Phases, p.DeferPhase, p.BlueprintMessage = nil, nil, ""
}

// IsSummary reports whether p is a compacted plan without phases: cut by
// Summarize, or a plan that completed with every phase plain, which the
// API server holds so (compacted). A plan always has phases (a blueprint
// action without any does not compile), so a compacted one without them
// is always such a summary.
func (p *PlanStatus) IsSummary() bool {
	return p != nil && p.Compacted && len(p.Phases) == 0
}

// Phase returns the status of the phase called name, or nil when the plan has
// none.
func (p *PlanStatus) Phase(name string) *PhaseStatus {
	for i := range p.Phases {
		if p.Phases[i].Name == name {
			return &p.Phases[i]
		}
	}
	return nil
}
