package phases

import (
	"context"
	"time"
)

// What the phases that place a backup in Velero's queue need from the
// controller, declared here where they are used: the controller provides
// them from its in-memory index of Velero's queue (internal/velero/veleroqueue),
// and the engine knows nothing of Velero's queue.

// QueueEstimator estimates a Velero object's place in Velero's queue (OADP
// NAC's estimatedQueuePosition) from an in-memory index of unfinished
// objects, so that no phase or reconcile lists the OADP namespace for it.
type QueueEstimator interface {
	// Position returns 1 + the unfinished objects created before the one
	// called name, created at created (ties broken by name).
	Position(name string, created time.Time) int
	// Record notes that the owner of the unfinished object called name,
	// created at created, now shows position pos (its status was written
	// with it), so that a later refresh wakes the owner only once that
	// figure is stale (PositionStale). The object need not be indexed yet.
	Record(name string, created time.Time, pos int)
}

// TurnRequest asks for an operation's turn in Velero's queue (TurnKeeper).
type TurnRequest struct {
	// Namespace and Name are the NAC object's.
	Namespace, Name string
	// Created is the object's creation time: waiting operations of a
	// namespace take their turns in (Created, Name) order.
	Created time.Time
	// Kind is the NAC kind of the operation, which names Velero's queue it
	// waits for: NonAdminBackup (Velero's backups; "" means it too) or
	// NonAdminRestore (Velero's restores).
	Kind string
	// Velero is the name of the Velero Backup or Restore the operation
	// creates once admitted (deterministic: v1alpha1.NACObjectName), so
	// that an admission is recognised again after a failed status write or
	// a restart.
	Velero string
	// Max is how many unfinished Velero objects of that queue (Backups or
	// Restores) the namespace may have at once (at least 1; 0, unlimited,
	// never asks).
	Max int
}

// TurnDecision is a TurnKeeper's answer.
type TurnDecision struct {
	// Admitted is true when the operation may create its Velero object now.
	Admitted bool
	// InVelero is how many unfinished Velero objects of the queue the
	// namespace has (admissions whose object the cache does not show yet
	// included; this one excluded).
	InVelero int
	// Position is the operation's place (1-based) among the namespace's
	// waiting operations, Waiting how many wait (this one included); both
	// 0 when admitted.
	Position, Waiting int
	// OtherFirst is true when the namespace has room but another
	// namespace's waiting operation goes first (round-robin).
	OtherFirst bool
}

// TurnKeeper shares Velero's queues (backups, restores) fairly between
// namespaces: it admits an operation only while its namespace has fewer than
// Max unfinished Velero objects of that queue, its earlier waiting
// operations first, and namespaces with room in round-robin order. Its
// decision follows from the cache (Velero Backups and Restores, the waiting
// operations' status), so a restart rebuilds it.
type TurnKeeper interface {
	// Turn decides whether the operation req describes may go now. Errors
	// are the cache's (retryable).
	Turn(ctx context.Context, req TurnRequest) (TurnDecision, error)
	// RunTurn decides whether the Velero Schedule req.Velero of schedule
	// req.Name may take its due run now, in the backup queue: req.Created
	// is when the run fell due, and req.Kind is ignored. An admitted run
	// counts as one of the namespace's Backups in Velero until Velero's
	// Backup for it (of that Velero Schedule, made after the admission) is
	// in the cache. Errors are the cache's (retryable).
	RunTurn(ctx context.Context, req TurnRequest) (TurnDecision, error)
}

// ExactPositions is how many places at the head of a queue are always
// shown exactly: where a user watches the number count down.
const ExactPositions = 5

// PositionStale reports whether a waiting object's recorded position
// (recorded; 0 when none) must be rewritten now that it is now. A place in
// a queue (OADP NAC's estimatedQueuePosition) is an estimate, so it is
// rewritten only when it changed by at least a third of the recorded value
// (at least 1), or the object is within the first ExactPositions (shown
// exactly), or none is recorded. Over a queue of n draining one at a time,
// each object is then rewritten O(log n) times instead of n, and one
// completion rewrites ExactPositions objects, not n. A figure may show up
// to half again the true position (30 may mean 21); never fewer, as the
// queue only moves forward, except when an earlier object appears. Every
// figure of a place in a queue follows this rule.
func PositionStale(recorded, now int) bool {
	switch {
	case recorded == now:
		return false
	case recorded <= 0 || now <= ExactPositions:
		return true
	}
	diff := recorded - now
	if diff < 0 {
		diff = -diff
	}
	return diff >= max(1, (recorded+2)/3) // a third, rounded up
}
