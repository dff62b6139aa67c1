package v1alpha1

import (
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RPOVerdict is whether a schedule meets its recovery-point objective now.
// +kubebuilder:object:generate=false
type RPOVerdict struct {
	// Met is RPOMet's status; Reason and Message its reason and message.
	Met             bool
	Reason, Message string
	// Deadline is when the objective stops holding if no run succeeds
	// first (the recovery point plus the objective).
	Deadline time.Time
}

// EvaluateRPO judges the recovery-point objective rpo of a schedule at now.
// The recovery point is lastSuccess (the completion of the newest
// successful run), or created (when protection was asked for) before any
// run succeeded. While the point is younger than rpo the objective holds
// (WithinObjective). Otherwise it is missed, and the reason says why, in
// this order: the schedule is paused (Paused); the newest run ended without
// completing (LastRunFailed: Failed, PartiallyFailed, FailedValidation);
// the newest run still waits in Velero's queue behind others, queue > 1
// (VeleroQueueTooLong); anything else (ObjectiveMissed: runs too far apart
// for the objective, or none succeeded yet). newest is the newest run's
// Velero phase ("" when there is none), queue its queue position (0 when
// not queued). Time is passed in: nothing here reads a clock.
func EvaluateRPO(rpo time.Duration, created time.Time, lastSuccess *metav1.Time, paused bool, newest velerov1.BackupPhase, queue int, now time.Time) RPOVerdict {
	point, what := created, "no run has succeeded since the schedule was created at "
	if lastSuccess != nil && !lastSuccess.IsZero() {
		point, what = lastSuccess.Time, "the last successful backup completed at "
	}
	// Times, not ages: the message stays true after it was written.
	at := what + point.UTC().Format(time.RFC3339)
	v := RPOVerdict{Deadline: point.Add(rpo)}
	if !now.After(v.Deadline) {
		v.Met, v.Reason = true, ReasonWithinObjective
		v.Message = fmt.Sprintf("%s; the objective of %s holds until %s", at, rpo, v.Deadline.UTC().Format(time.RFC3339))
		return v
	}
	missed := fmt.Sprintf("%s, more than the objective of %s ago", at, rpo)
	switch {
	case paused:
		v.Reason, v.Message = ReasonSchedulePaused, missed+": the schedule is paused (spec.paused), no new run is taken"
	case newest == velerov1.BackupPhaseFailed || newest == velerov1.BackupPhasePartiallyFailed || newest == velerov1.BackupPhaseFailedValidation:
		v.Reason, v.Message = ReasonLastRunFailed, fmt.Sprintf("%s: the last run ended %s", missed, newest)
	case queue > 1:
		v.Reason, v.Message = ReasonVeleroQueue, fmt.Sprintf("%s: the last run waits at position %d of Velero's queue", missed, queue)
	default:
		v.Reason, v.Message = ReasonObjectiveMissed, missed
	}
	return v
}
