package v1alpha1

import (
	"slices"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Outcome is how a tenant's backup or restore ended, as alerts and
// dashboards count it (nacflow_tenant_failed_in_a_row). Not an API type.
// +kubebuilder:object:generate=false
type Outcome struct {
	// Ended is false while the operation runs, and for an object whose
	// last plan is not its backup or restore (a deletion, a preview).
	Ended bool
	// Failed: its plan failed, or Velero's phase is Failed,
	// FailedValidation or PartiallyFailed (Velero's own
	// velero_backup_partial_failure_total counts the last as a failure).
	// Succeeded is Ended and not Failed: the plan complete and Velero's
	// phase Completed.
	Failed bool
	// At is when the plan ended.
	At metav1.Time
}

// outcome is the Outcome of a plan whose action is one of actions, with
// Velero's phase; failedPhases are Velero's phases that count as failed.
func outcome(p *PlanStatus, actions []string, phase string, failedPhases ...string) Outcome {
	if p == nil || p.CompletionTime == nil || (p.State != PlanComplete && p.State != PlanFailed) {
		return Outcome{}
	}
	if !slices.Contains(actions, p.Action) {
		return Outcome{}
	}
	failed := p.State == PlanFailed || slices.Contains(failedPhases, phase)
	return Outcome{Ended: true, Failed: failed, At: *p.CompletionTime}
}

// BackupOutcome is how n's backup ended: its plan of the built-in actions
// that make or adopt a backup (backup, adopt), and its Velero Backup's
// phase (status.veleroBackup.status.phase).
func (n *NonAdminBackup) BackupOutcome() Outcome {
	var phase string
	if vb := n.Status.VeleroBackup; vb != nil && vb.Status != nil {
		phase = string(vb.Status.Phase)
	}
	return outcome(n.Status.Plan, []string{"backup", "adopt"}, phase,
		string(velerov1.BackupPhaseFailed), string(velerov1.BackupPhaseFailedValidation), string(velerov1.BackupPhasePartiallyFailed))
}

// RestoreOutcome is how n's restore ended: its plan of the built-in
// restore action, and its Velero Restore's phase.
func (n *NonAdminRestore) RestoreOutcome() Outcome {
	var phase string
	if vr := n.Status.VeleroRestore; vr != nil && vr.Status != nil {
		phase = string(vr.Status.Phase)
	}
	return outcome(n.Status.Plan, []string{"restore"}, phase,
		string(velerov1.RestorePhaseFailed), string(velerov1.RestorePhaseFailedValidation), string(velerov1.RestorePhasePartiallyFailed))
}
