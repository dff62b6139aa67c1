package v1alpha1

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NonAdminScheduleTemplate is the backup every run of a NonAdminSchedule
// takes (OADP NAC's NonAdminScheduleTemplate): metadata is not exposed, so
// that nacflow owns the labels that tie each run to its tenant.
type NonAdminScheduleTemplate struct {
	// backupSpec is the Velero BackupSpec of every run, checked with the
	// rules (and the admin's args.enforce) of a NonAdminBackup, and OADP's
	// 2026 backupType.
	// +required
	BackupSpec *ScheduleBackupSpec `json:"backupSpec"`
}

// Backup types of ScheduleBackupSpec.BackupType (Velero's BackupType,
// velero PR #9954).
const (
	BackupTypeFull        = "Full"
	BackupTypeIncremental = "Incremental"
)

// ScheduleBackupSpec is a Velero BackupSpec with backupType, the field
// OADP's 2026 NonAdminSchedule template carries from Velero's BackupSpec
// (velero PR #9954, after Velero 1.18): kept in the CRD so that a manifest
// setting it never loses it in silence.
type ScheduleBackupSpec struct {
	velerov1.BackupSpec `json:",inline"`

	// backupType is Full or Incremental (Velero's default): whether
	// file-system and data-mover backups upload every volume's data, or only
	// what changed since the last backup. Velero 1.18, which nacflow drives,
	// has no such field and is always incremental: Incremental is accepted
	// (what Velero does), Full is refused with a message.
	// +optional
	// +kubebuilder:validation:Enum=Full;Incremental
	BackupType string `json:"backupType,omitempty"`
}

// NonAdminScheduleSpec is what a namespace owner schedules (OADP NAC's
// NonAdminScheduleSpec, plus rpo).
type NonAdminScheduleSpec struct {
	// schedule is a standard five-field cron expression ("*/30 * * * *",
	// "0 2 * * *") or a descriptor ("@daily", "@every 6h"), in the Velero
	// server's time zone (UTC unless the admin set one).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Schedule string `json:"schedule"`

	// paused stops new runs until it is set to false; backups already taken
	// stay.
	// +optional
	// +kubebuilder:default=false
	Paused bool `json:"paused,omitempty"`

	// skipImmediately skips the next run that is due (an edge trigger:
	// nacflow resets it to false once Velero has it).
	// +optional
	SkipImmediately bool `json:"skipImmediately,omitempty"`

	// template is the backup every run takes.
	// +required
	Template NonAdminScheduleTemplate `json:"template"`

	// rpo is the recovery-point objective: the oldest the last successful
	// backup may be (a duration: "2h", "30m"). When set, condition RPOMet
	// says whether it holds and why not (paused, the last run failed, runs
	// waiting in Velero's queue, or none succeeded yet); an admin may bound
	// it per tenant group (ValidateScheduleSpec's args.maxRPO).
	// +optional
	RPO *metav1.Duration `json:"rpo,omitempty"`

	// retention says which runs to keep (nacflow's field; Kasten K10's and
	// KubeStash's retention policies are the model): the last keepLast
	// successful runs and the newest successful run of each of the last
	// hourly, daily, weekly, monthly and yearly periods (grandfather-father-
	// son, in the schedule's time zone: its CRON_TZ= prefix, else UTC);
	// failed runs apart, the last failed.keepLast of them. Runs beyond it
	// are deleted with their data (spec.deleteBackup on their
	// NonAdminBackup), oldest first; never the newest successful run, one
	// still running, or one a restore is using. Unset: every run stays
	// until its TTL, unless the admin set a default (SyncScheduleRuns'
	// args.defaultRetention); an admin's args.maxKeep bounds what it keeps.
	// +optional
	Retention *ScheduleRetention `json:"retention,omitempty"`
}

// ScheduleRetention is a NonAdminSchedule's retention policy. A zero count
// keeps nothing by its rule.
type ScheduleRetention struct {
	// keepLast keeps the newest keepLast successful runs.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	KeepLast int32 `json:"keepLast,omitempty"`
	// hourly keeps the newest successful run of each of the last hourly
	// hours that have one.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Hourly int32 `json:"hourly,omitempty"`
	// daily: the same for days.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Daily int32 `json:"daily,omitempty"`
	// weekly: the same for ISO weeks.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Weekly int32 `json:"weekly,omitempty"`
	// monthly: the same for months.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Monthly int32 `json:"monthly,omitempty"`
	// yearly: the same for years.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Yearly int32 `json:"yearly,omitempty"`
	// failed keeps failed runs (PartiallyFailed, Failed) apart from the
	// successful ones: the last failed.keepLast of them (default 0: a
	// failed run goes once the policy applies).
	// +optional
	Failed *FailedRetention `json:"failed,omitempty"`
}

// FailedRetention bounds the failed runs a schedule keeps.
type FailedRetention struct {
	// keepLast keeps the newest keepLast failed runs.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	KeepLast int32 `json:"keepLast,omitempty"`
}

// RetentionStatus says what a schedule's retention keeps and what it
// pruned last.
type RetentionStatus struct {
	// policy is the retention in force: spec.retention, or the admin's
	// default, bounded by the admin's maxKeep (described in words).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Policy string `json:"policy,omitempty"`
	// kept counts the runs kept.
	// +optional
	Kept int32 `json:"kept,omitempty"`
	// pruned counts the runs pruned so far by this schedule.
	// +optional
	Pruned int32 `json:"pruned,omitempty"`
	// lastPruned names the runs (NonAdminBackups) pruned at the last prune.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	LastPruned []string `json:"lastPruned,omitempty"`
	// lastPruneTime is when runs were last pruned.
	// +optional
	LastPruneTime *metav1.Time `json:"lastPruneTime,omitempty"`
}

// VeleroSchedule links a NonAdminSchedule to its Velero Schedule in the OADP
// namespace and mirrors its status (OADP NAC's VeleroSchedule).
type VeleroSchedule struct {
	// spec is the Velero Schedule's spec as nacflow accepted it: the
	// template with the admin's enforced values applied and the tenant's
	// storage location translated to its Velero location.
	// +optional
	Spec *velerov1.ScheduleSpec `json:"spec,omitempty"`
	// status mirrors the Velero Schedule's status: phase (New, Enabled,
	// FailedValidation), lastBackup, lastSkipped, validationErrors.
	// +optional
	Status *velerov1.ScheduleStatus `json:"status,omitempty"`
	// nacuuid is the schedule's NACUUID, the value of the
	// openshift.io/oadp-nas-origin-nacuuid label.
	// +optional
	NACUUID string `json:"nacuuid,omitempty"`
	// name of the Velero Schedule.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the Velero Schedule (the OADP namespace).
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// NonAdminScheduledBackup is one run of a schedule (OADP NAC's
// NonAdminScheduledBackup).
type NonAdminScheduledBackup struct {
	// name of the run's NonAdminBackup in the schedule's namespace.
	// +required
	Name string `json:"name"`
	// veleroBackupName is the run's Velero Backup in the OADP namespace.
	// +required
	VeleroBackupName string `json:"veleroBackupName"`
	// phase is the Velero Backup's phase.
	// +optional
	Phase velerov1.BackupPhase `json:"phase,omitempty"`
	// startTimestamp is when Velero started the backup.
	// +optional
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	// completionTimestamp is when Velero ended it.
	// +optional
	CompletionTimestamp *metav1.Time `json:"completionTimestamp,omitempty"`
	// expiration is when Velero removes it (its TTL).
	// +optional
	Expiration *metav1.Time `json:"expiration,omitempty"`
}

// NonAdminScheduleStatus is the observed state of a NonAdminSchedule (OADP
// NAC's, plus the plan, observedGeneration and the RPO).
type NonAdminScheduleStatus struct {
	// veleroSchedule links and mirrors the Velero Schedule.
	// +optional
	VeleroSchedule *VeleroSchedule `json:"veleroSchedule,omitempty"`

	// nextRun is when the next run is due (none while paused).
	// +optional
	NextRun *metav1.Time `json:"nextRun,omitempty"`

	// lastBackup is the newest run.
	// +optional
	LastBackup *NonAdminScheduledBackup `json:"lastBackup,omitempty"`

	// lastSuccessfulBackup is the completion time of the newest run Velero
	// completed: the recovery point the rpo is measured from.
	// +optional
	LastSuccessfulBackup *metav1.Time `json:"lastSuccessfulBackup,omitempty"`

	// rpo is the recovery-point objective in force: spec.rpo, or the
	// admin's maximum when spec.rpo is unset.
	// +optional
	RPO *metav1.Duration `json:"rpo,omitempty"`

	// recentBackups are the newest runs, at most 5, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	RecentBackups []NonAdminScheduledBackup `json:"recentBackups,omitempty"`

	// retention says what spec.retention keeps and what it pruned last.
	// +optional
	Retention *RetentionStatus `json:"retention,omitempty"`

	// lastRestoreTest is the newest restore test of one of the schedule's
	// runs (status.restoreTest of that NonAdminBackup, named in backup),
	// when the admin enabled restore tests for the namespace.
	// +optional
	LastRestoreTest *RestoreTest `json:"lastRestoreTest,omitempty"`

	// phase sums the request up: New, BackingOff, Created, Deleting.
	// +optional
	Phase NonAdminPhase `json:"phase,omitempty"`

	// observedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Accepted, RPOMet, WithinQuota.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// plan is the phase plan of the current or last operation.
	// +optional
	Plan *PlanStatus `json:"plan,omitempty"`
}

// Condition types and reasons of NonAdminSchedules.
const (
	// ConditionRPOMet: whether the last successful backup is younger than
	// spec.rpo; absent without spec.rpo.
	ConditionRPOMet = "RPOMet"
	// ReasonScheduleAccepted is Accepted=True's reason (OADP NAC's).
	ReasonScheduleAccepted = "ScheduleAccepted"
	// ReasonInvalidScheduleSpec: Accepted=False; the message names the field
	// and why (OADP NAC's).
	ReasonInvalidScheduleSpec = "InvalidScheduleSpec"
	// ReasonWithinObjective: RPOMet=True.
	ReasonWithinObjective = "WithinObjective"
	// ReasonSchedulePaused: RPOMet=False because spec.paused stops new runs.
	ReasonSchedulePaused = "Paused"
	// ReasonLastRunFailed: RPOMet=False and the newest run did not complete.
	ReasonLastRunFailed = "LastRunFailed"
	// ReasonVeleroQueue: RPOMet=False while runs wait behind other backups
	// in Velero's queue.
	ReasonVeleroQueue = "VeleroQueueTooLong"
	// ReasonObjectiveMissed: RPOMet=False for any other cause (no
	// successful run yet, runs too far apart).
	ReasonObjectiveMissed = "ObjectiveMissed"
	// ConditionWithinQuota: whether the namespace has room for the
	// schedule's next run under the admin's quota (False, reason
	// ReasonQuotaExceeded: the Velero Schedule is paused until there is);
	// absent where no quota applies.
	ConditionWithinQuota = "WithinQuota"
	// ReasonRoomForNextRun: WithinQuota=True.
	ReasonRoomForNextRun = "RoomForNextRun"
	// ConditionWithinShare: whether the schedule's due run has its turn in
	// Velero's backup queue under the namespace's fair share
	// (--max-backups-in-velero-per-namespace): False, reason
	// ReasonWaitingForTurn, while the due run waits (its Velero Schedule
	// is paused); True, reason ReasonRunsTakeTurns, otherwise. Absent where
	// no share applies.
	ConditionWithinShare = "WithinShare"
	// ReasonRunsTakeTurns: WithinShare=True.
	ReasonRunsTakeTurns = "RunsTakeTurns"
)

// QuotaPausedAnnotation marks a Velero Schedule nacflow paused because its
// namespace reached a quota (value "true"): it is resumed when there is room,
// unless the NonAdminSchedule itself is paused.
const QuotaPausedAnnotation = "openshift.io/oadp-nacflow-paused-by-quota"

// SharePausedAnnotation marks a Velero Schedule nacflow keeps paused
// between runs because the namespace's backups share Velero's queue
// (value "true"): each run, once due, waits for its turn like a
// NonAdminBackup, and nacflow resumes the schedule for that one run.
const SharePausedAnnotation = "openshift.io/oadp-nacflow-paused-by-share"

// RecentBackupsLimit is how many runs status.recentBackups keeps (OADP
// NAC's nonAdminScheduleHistoryLimit).
const RecentBackupsLimit = 5

// NonAdminSchedule asks nacflow to back up the namespace it lives in on a
// cron schedule with a Velero Schedule; each run appears as a
// NonAdminBackup of the namespace (OADP NAC's NonAdminSchedule).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nas,categories=nac
// +kubebuilder:printcolumn:name="Request-Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Velero-Phase",type=string,JSONPath=`.status.veleroSchedule.status.phase`
// +kubebuilder:printcolumn:name="Next-Run",type=string,JSONPath=`.status.nextRun`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="RPO-Met",type=string,JSONPath=`.status.conditions[?(@.type=="RPOMet")].status`,priority=1
// +kubebuilder:printcolumn:name="Last-Backup",type=string,JSONPath=`.status.lastBackup.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NonAdminSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NonAdminScheduleSpec `json:"spec"`
	// status is written by the controller alone, and as a whole: the API
	// server tracks it as one field of metadata.managedFields.
	// +optional
	// +structType=atomic
	Status NonAdminScheduleStatus `json:"status,omitempty"`
}

// GetPlan returns the plan status, nil before the first operation started.
func (n *NonAdminSchedule) GetPlan() *PlanStatus { return n.Status.Plan }

// SetPlan replaces the plan status.
func (n *NonAdminSchedule) SetPlan(p *PlanStatus) { n.Status.Plan = p }

// +kubebuilder:object:root=true

// NonAdminScheduleList is a list of NonAdminSchedules.
type NonAdminScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NonAdminSchedule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NonAdminSchedule{}, &NonAdminScheduleList{})
	registerKind(Kind{
		Kind: "NonAdminSchedule", Resource: "nonadminschedules", Short: "nas", Command: "schedule",
		Finalizer: NonAdminScheduleFinalizer, Blueprint: "nonadminschedule",
		Actions: []string{ActionCreate, ActionFinalize}, FirstAction: ActionCreate,
		New: func() Object { return &NonAdminSchedule{} }, NewList: func() client.ObjectList { return &NonAdminScheduleList{} },
		GarbageCollected: func() []client.ObjectList { return []client.ObjectList{&velerov1.ScheduleList{}} },
	})
}
