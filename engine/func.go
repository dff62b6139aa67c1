// Package engine compiles a blueprint action into a phase plan and runs it:
// the Kanister-style workflow engine of nacflow (docs/architecture.md, "The
// engine contract").
//
// The engine knows phase functions only through the Registry it is given; it
// never imports one. Nor does it know the kinds it serves or the objects
// phases make: an operation's object is a v1alpha1.Object, and what the
// objects phases write may reference is said by the ReferenceRules the
// registry is given. A run is level-triggered and resumable: every call to
// Runner.Run continues from the plan recorded in the object's status.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nacv1alpha1 "github.com/nacflow/nacflow/api/v1alpha1"
)

// Object is what the engine runs operations for: an object with a plan in
// its status, conditions, an observed generation and the origin keys that
// tie what its operations create in the OADP namespace to it. The engine
// needs nothing else of it, and no switch over its kinds.
type Object = nacv1alpha1.Object

// Operation is what a phase function sees of the operation it serves. Object
// is the live NAC object: a function may change its status (the runner
// persists it), never its spec or metadata.
type Operation struct {
	// Object is the NAC object the operation runs for.
	Object Object
	// OADPNamespace is the namespace of Velero and of every object nacflow
	// creates on a tenant's behalf.
	OADPNamespace string
	// UUID is the operation's NACUUID (OADP NAC): the value of the origin
	// label on every object the operation creates.
	UUID string
	// Phase is the name of the phase being run.
	Phase string
	// Func is the name of the function being run (set with Client).
	Func string
	// NamespaceLabels are the labels of the NAC object's Namespace.
	NamespaceLabels map[string]string
	// Client and APIReader are the only way a phase function reaches the
	// cluster: set for each call by a registry from NewGuardedRegistry, they
	// enforce the safety rule for this operation and phase (guard.go). Client
	// reads through the manager's cache; APIReader reads the API server.
	Client    client.Client
	APIReader client.Reader
}

// Func is a phase function: a named, stateless step with typed arguments
// (Kanister's Func, without its mutable singletons). It reaches the cluster
// only through op.Client and op.APIReader, guarded for its operation and
// phase by the registry (NewGuardedRegistry: the engine's safety rule),
// never through clients of its own or global state.
type Func interface {
	// Name is the name blueprints use in a phase's func field.
	Name() string
	// NewArgs returns a pointer to a new zero value of the function's argument
	// struct; the runner decodes the rendered args into it, rejecting unknown
	// fields.
	NewArgs() any
	// Run performs the step once. It returns a Done or Wait Result, or an
	// error: a Terminal one fails the phase; any other is retried with
	// backoff up to the phase's retries. Run must be idempotent: the runner
	// re-enters a phase that was running when the controller stopped.
	Run(ctx context.Context, op *Operation, args any) (Result, error)
}

// MessageKeeper is implemented by a Func some of whose completion messages
// say what no other part of the object's status holds: what a restore left
// out and why, an object adopted rather than created. When the plan ends,
// Compact keeps such a message and drops that of every other phase that
// simply completed (its conditions, Velero references and events tell
// what it did; docs/performance.md).
type MessageKeeper interface {
	// KeepsMessage reports whether message, one of the Func's own
	// completion messages, stays in the compacted plan.
	KeepsMessage(message string) bool
}

// KeepsMessage reports whether the phase function called fn keeps message
// in a compacted plan (MessageKeeper); false for a function that is not
// registered or keeps none.
func (r *Registry) KeepsMessage(fn, message string) bool {
	k, ok := r.funcs[fn].(MessageKeeper)
	return ok && k.KeepsMessage(message)
}

// Result is the outcome of one successful Func.Run.
type Result struct {
	// Wait is true when the phase is not finished and must be checked again.
	Wait bool
	// RecheckAfter is how long to wait before checking again (Wait only); the
	// runner is also woken by watch events before then. With Watched, it is
	// the latest the function must look again (0: no such deadline).
	RecheckAfter time.Duration
	// Watched is true when what the phase waits for is an object the
	// controller watches, so its change wakes the runner: the runner's own
	// recheck is then only a safety net (SafetyNet), never a fixed poll.
	Watched bool
	// Brief is true when the watched object usually answers within
	// RecheckAfter (WaitBriefly): the wait need not be recorded yet.
	Brief bool
	// Message says what was done or what is awaited, deterministically.
	Message string
	// Output is the phase's small key/value output: on Done, what later
	// phases read; on Wait, the progress it records while it waits
	// (optional; replaced by the output of its completion).
	Output map[string]string
}

// Done returns a finished Result with a message and outputs (may be nil).
func Done(message string, output map[string]string) Result {
	return Result{Message: message, Output: output}
}

// Wait returns a Result that keeps the phase waiting for reason, to be
// checked again after recheck (or sooner on a watch event).
func Wait(reason string, recheck time.Duration) Result {
	return Result{Wait: true, Message: reason, RecheckAfter: recheck}
}

// WaitWatched returns a Result that keeps the phase waiting for reason on an
// object the controller watches (Velero's wait-for-ready design: a change of
// it wakes the runner). deadline is when the function must look again
// whatever happens (its own limit, such as how long Velero may take to serve
// a file; 0: none). Within MaxSafetyNet it is the only recheck; else the
// runner rechecks as a safety net backing off with the time the phase has
// waited (SafetyNet), and by deadline at the latest.
func WaitWatched(reason string, deadline time.Duration) Result {
	return Result{Wait: true, Message: reason, RecheckAfter: deadline, Watched: true}
}

// WaitBriefly is WaitWatched for a wait that usually ends within within —
// Velero serves a DownloadRequest in about 100 ms — so recording it would
// cost a status write and an event that the answer makes moot at once. When
// the phase was not already recorded as waiting, the run is held back
// (Outcome.Held): its status changes and events need not be written, and
// the caller looks again after within or when the object changes; the
// phases that ran are idempotent and run again then, and their transitions
// are recorded with the wait's outcome in one write. A function returns it
// only while the wait is new (e.g. the request it waits on is younger than
// within), so a wait that goes on is recorded on the next look.
func WaitBriefly(reason string, within time.Duration) Result {
	return Result{Wait: true, Message: reason, RecheckAfter: within, Watched: true, Brief: true}
}

// Bounds of SafetyNet.
const (
	// MinSafetyNet is the first recheck of a watched wait.
	MinSafetyNet = 5 * time.Second
	// MaxSafetyNet is the longest a watched wait goes without a recheck.
	MaxSafetyNet = 5 * time.Minute
)

// SafetyNet returns when a phase that has waited for waited on a watched
// object is rechecked though no event came (a missed watch event, a
// relist): as long again as it has waited, between MinSafetyNet and
// MaxSafetyNet, so its rechecks come at 5 s, 10 s, 20 s, 40 s, ... after
// it began, doubling to every 5 minutes.
func SafetyNet(waited time.Duration) time.Duration {
	return min(max(waited, MinSafetyNet), MaxSafetyNet)
}

// terminalError marks an error that retrying cannot fix (invalid input).
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal wraps err so that the runner fails the phase at once instead of
// retrying it. Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// Terminalf is Terminal(fmt.Errorf(format, args...)).
func Terminalf(format string, args ...any) error {
	return Terminal(fmt.Errorf(format, args...))
}

// IsTerminal reports whether err, or an error it wraps, was made by Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// IsTransient reports whether err says the API server could not answer now
// rather than that the request was wrong: a conflict, a server timeout or
// internal error, throttling (429), an unavailable server (503), a refused
// or reset connection, a cut stream or a network timeout. A phase that meets
// one is retried with the workqueue's backoff for as long as it takes,
// without using up its retries: an API server restarting must not fail an
// operation (Kubernetes controllers treat these errors the same way).
func IsTransient(err error) bool {
	if err == nil || IsTerminal(err) {
		return false
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err),
		apierrors.IsUnexpectedServerError(err):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Registry is the set of phase functions a runner may call, by name. It is
// built once at start-up and never changed afterwards.
type Registry struct {
	funcs map[string]Func

	// checked holds the actions Compile found valid, by blueprint,
	// generation and action, so that the operations a blueprint
	// generation starts are checked once, not once each: CheckAction
	// decodes every literal arg, a large share of what starting an
	// operation allocates. An entry is used only for an equal action.
	mu      sync.Mutex
	checked map[checkKey]*nacv1alpha1.BlueprintAction
}

// checkKey names a blueprint action at one generation.
type checkKey struct{ blueprint, generation, action string }

// maxChecked bounds Registry.checked; a full cache starts afresh.
const maxChecked = 256

// knownValid reports whether p's action was found valid before.
func (r *Registry) knownValid(p ResolvedAction) bool {
	r.mu.Lock()
	spec := r.checked[checkKey{p.Blueprint, p.BlueprintGeneration, p.Name}]
	r.mu.Unlock()
	return spec != nil && equality.Semantic.DeepEqual(spec, p.Spec)
}

// rememberValid records that p's action is valid.
func (r *Registry) rememberValid(p ResolvedAction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checked == nil || len(r.checked) >= maxChecked {
		r.checked = map[checkKey]*nacv1alpha1.BlueprintAction{}
	}
	r.checked[checkKey{p.Blueprint, p.BlueprintGeneration, p.Name}] = p.Spec.DeepCopy()
}

// NewRegistry returns a registry of funcs. It returns an error when a name is
// empty or used twice.
func NewRegistry(funcs ...Func) (*Registry, error) {
	r := &Registry{funcs: make(map[string]Func, len(funcs))}
	for _, f := range funcs {
		name := f.Name()
		if name == "" {
			return nil, errors.New("phase function with an empty name")
		}
		if _, dup := r.funcs[name]; dup {
			return nil, fmt.Errorf("phase function %q registered twice", name)
		}
		r.funcs[name] = f
	}
	return r, nil
}

// Get returns the function called name and whether it exists.
func (r *Registry) Get(name string) (Func, bool) {
	f, ok := r.funcs[name]
	return f, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.funcs))
}

// FuncDoc describes a phase function for its reference (`nac funcs`,
// docs/functions.md). Args are read from the argument struct: JSON names,
// Go types and `doc` struct tags.
type FuncDoc struct {
	// Summary says what the function does, in a sentence or two.
	Summary string
	// Outputs lists the output keys and what they hold.
	Outputs []string
	// Errors says which errors are terminal and which are retried.
	Errors string
	// Waits is true when the function can wait (its phase's timeout applies).
	Waits bool
}

// Documented is implemented by phase functions that describe themselves.
type Documented interface {
	Doc() FuncDoc
}

// ArgDoc describes one argument of a function.
type ArgDoc struct {
	Name, Type, Doc string
}

// Args returns the documented arguments of fn, read from its argument
// struct: JSON name, Go type and `doc` tag, embedded structs flattened.
func Args(fn Func) []ArgDoc {
	var out []ArgDoc
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "" && f.Anonymous:
				walk(f.Type)
			case name != "" && name != "-":
				out = append(out, ArgDoc{Name: name, Type: f.Type.String(), Doc: f.Tag.Get("doc")})
			}
		}
	}
	walk(reflect.TypeOf(fn.NewArgs()))
	return out
}
