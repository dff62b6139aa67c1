package phases

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// DefaultMaxBackupsInVelero is the default of WaitForTurn's max for a
// NonAdminBackup (the controller's --max-backups-in-velero-per-namespace):
// how many unfinished Velero Backups one namespace may have at once. Velero
// runs one backup at a time (--concurrent-backups 1), and from 1.18 never
// two of one namespace at once (its backup queue's namespace-conflict rule),
// so a tenant gains nothing from more than one running and one queued
// behind it: 2 keeps Velero busy for a tenant alone (the next backup is
// already queued when the running one ends) while another tenant's new
// backup waits behind at most one of a burst's queued backups, beyond the
// one Velero is running.
const DefaultMaxBackupsInVelero = 2

// DefaultMaxRestoresInVelero is the default of WaitForTurn's max for a
// NonAdminRestore (--max-restores-in-velero-per-namespace): Velero runs its
// restores one at a time in creation order, a single queue for every
// tenant, so the same reasoning as for backups gives 2.
const DefaultMaxRestoresInVelero = 2

// recheckTurn is the safety-net recheck of a waiting turn: a waiting
// NonAdminBackup is woken by the events that can give it its turn (its
// namespace's Velero Backup finishing, an earlier waiter admitted or gone);
// the recheck only bounds how long a lost event could delay it.
const recheckTurn = time.Minute

// Output keys WaitForTurn records while it waits (controllers read them
// from the cache to rank namespaces and to refresh positions).
const (
	// TurnOutputLimit is the namespace's limit the waiting operation
	// follows.
	TurnOutputLimit = "limit"
	// TurnOutputPosition is its place among the namespace's waiting
	// operations as last written.
	TurnOutputPosition = "position"
	// TurnOutputWaiting is how many of the namespace waited then.
	TurnOutputWaiting = "waiting"
)

// WaitForTurnArgs are the args of WaitForTurn.
type WaitForTurnArgs struct {
	// Max is how many unfinished Velero Backups (for a NonAdminBackup) or
	// Restores (for a NonAdminRestore) the namespace may have at once (0:
	// unlimited); nil: the controller's default.
	Max *int `json:"max,omitempty" doc:"how many unfinished Velero Backups (NonAdminBackup) or Restores (NonAdminRestore) the namespace may have at once (0: unlimited; unset: the controller's --max-backups-in-velero-per-namespace or --max-restores-in-velero-per-namespace, default 2 each)"`
}

// Validate implements engine.ArgsValidator.
func (a WaitForTurnArgs) Validate() error {
	if a.Max != nil && *a.Max < 0 {
		return fmt.Errorf("max: must be 0 (unlimited) or more, got %d", *a.Max)
	}
	return nil
}

// WaitForTurn is the fair share of Velero's queues: a NonAdminBackup (or a
// NonAdminRestore) waits (a wait, woken by events; never a refusal) until
// its namespace has fewer than args.max unfinished Velero Backups — its own
// backups and its schedules' runs, counted from the cache — (or Velero
// Restores) and its turn has come: the namespace's waiting operations go in
// (creation time, name) order, and namespaces with room go round-robin, the
// one with the fewest in Velero first (then the one whose head waited
// longest, then by name). Velero runs backups one at a time and restores
// one at a time, each queue in creation order, so a tenant's burst would
// otherwise hold every other tenant behind it. The decision is the injected
// TurnKeeper's, made under one lock for all namespaces, so parallel workers
// never admit past the limit or out of turn; it follows from the cache, so
// a restart rebuilds it.
//
// While it waits, the phase message and the Queued=False/WaitingForTurn
// condition say why and the operation's place among its namespace's own
// ("namespace a has 2 of its 2 backups in Velero; this is 4th of 22
// waiting in a"); no other namespace is named. The place is rewritten only
// when it changed materially (PositionStale), so a waiting operation costs
// one status write, not one per operation ahead of it. Outputs while
// waiting: limit, position, waiting; once admitted: limit.
//
// Errors: a kind other than NonAdminBackup or NonAdminRestore, or no
// TurnKeeper, is terminal; cache errors are retryable. With max 0 it
// completes at once.
type WaitForTurn struct {
	tools      tools
	defaultMax int
	// defaultRestoreMax is the default for a NonAdminRestore.
	defaultRestoreMax int
}

// Run implements phaseFunc.
func (f *WaitForTurn) Run(ctx context.Context, op *engine.Operation, obj engine.Object, a *WaitForTurnArgs) (engine.Result, error) {
	k, _ := v1alpha1.KindOf(obj)
	if k.VeleroQueue == "" {
		return engine.Result{}, engine.Terminalf("WaitForTurn serves %s, not %T", strings.Join(v1alpha1.QueuedKindNames(), " and "), obj)
	}
	kind, noun, limit := k.Kind, string(k.VeleroQueue), f.defaultMax
	if k.VeleroQueue == v1alpha1.VeleroRestores {
		limit = f.defaultRestoreMax
	}
	if a.Max != nil {
		limit = *a.Max
	}
	ns := obj.GetNamespace()
	if limit <= 0 {
		return engine.Done(fmt.Sprintf("no limit on namespace %s's %s in Velero", ns, noun), map[string]string{TurnOutputLimit: "0"}), nil
	}
	if f.tools.turns == nil {
		return engine.Result{}, engine.Terminalf("WaitForTurn has no turn keeper: build the registry with phases.Clients.Turns")
	}
	d, err := f.tools.turns.Turn(ctx, TurnRequest{Kind: kind, Namespace: ns, Name: obj.GetName(), Created: obj.GetCreationTimestamp().Time,
		Velero: v1alpha1.NACObjectName(ns, obj.GetName(), op.UUID), Max: limit})
	if err != nil {
		return engine.Result{}, fmt.Errorf("deciding the turn of %s/%s in Velero's queue: %w", ns, obj.GetName(), err)
	}
	if d.Admitted {
		return engine.Done(fmt.Sprintf("its turn in Velero's queue: namespace %s had %d of its %d %s in Velero", ns, d.InVelero, limit, noun),
			map[string]string{TurnOutputLimit: strconv.Itoa(limit)}), nil
	}
	why := "full"
	if d.OtherFirst {
		why = "turn"
	}
	msg, out := turnMessage(ns, noun, why, d, limit), map[string]string{
		TurnOutputLimit: strconv.Itoa(limit), TurnOutputPosition: strconv.Itoa(d.Position), TurnOutputWaiting: strconv.Itoa(d.Waiting), "why": why}
	if prev := op.Object.GetPlan().Phase(op.Phase); prev != nil && prev.State == v1alpha1.PhaseWaiting && prev.Message != "" &&
		prev.Output[TurnOutputLimit] == out[TurnOutputLimit] && prev.Output["why"] == why {
		if shown, err := strconv.Atoi(prev.Output[TurnOutputPosition]); err == nil && !PositionStale(shown, d.Position) {
			// Not changed materially: what is shown stays, and nothing is
			// written.
			msg, out = prev.Message, prev.Output
		}
	}
	setCondition(obj, v1alpha1.ConditionQueued, metav1.ConditionFalse, v1alpha1.ReasonWaitingForTurn, msg)
	return engine.Result{Wait: true, RecheckAfter: recheckTurn, Message: msg, Output: out}, nil
}

// turnMessage says why an operation of namespace ns waits and where it
// stands among the namespace's own (noun: backups or restores). It never
// names another namespace.
func turnMessage(ns, noun, why string, d TurnDecision, limit int) string {
	if why == "turn" {
		return fmt.Sprintf("waiting for a turn in Velero's queue: namespace %s has %d of its %d %s in Velero and another namespace's turn comes first (round-robin across namespaces); this is %s of %d waiting in %s",
			ns, d.InVelero, limit, noun, ordinal(d.Position), d.Waiting, ns)
	}
	return fmt.Sprintf("waiting for a turn in Velero's queue: namespace %s has %d of its %d %s in Velero; this is %s of %d waiting in %s",
		ns, d.InVelero, limit, noun, ordinal(d.Position), d.Waiting, ns)
}

// ordinal returns 1st, 2nd, 3rd, 4th, 11th, 21st, 112th, ...
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// Doc implements engine.Documented.
func (*WaitForTurn) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "The fair share of Velero's queues: a NonAdminBackup (NonAdminRestore) waits (not refused) until its namespace has fewer than args.max unfinished Velero Backups, its schedules' runs included (Velero Restores), and its turn has come: the namespace's waiting operations in creation order, namespaces with room round-robin (fewest in Velero first). The message and condition Queued=False/WaitingForTurn give its place among its namespace's waiting operations.",
		Outputs: []string{"limit: the namespace's limit (0: unlimited)", "position, waiting, why (while waiting): its place among the namespace's waiting operations, how many wait, and full (the namespace is at its limit) or turn (another namespace goes first)"},
		Errors:  "a kind other than NonAdminBackup or NonAdminRestore is terminal; " + apiRetried,
		Waits:   true,
	}
}
