package v1alpha1

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NonAdminBackupSpec is what a namespace owner asks for (OADP NAC's
// NonAdminBackupSpec).
//
// The CEL rules refuse at kubectl apply what can never be valid; the
// controller's ValidateBackupSpec still checks everything.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.deleteBackup) || !oldSelf.deleteBackup || (has(self.deleteBackup) && self.deleteBackup)",message="deleteBackup can not be set back to false once true"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.forceDeleteBackup) || !oldSelf.forceDeleteBackup || (has(self.forceDeleteBackup) && self.forceDeleteBackup)",message="forceDeleteBackup can not be set back to false once true"
type NonAdminBackupSpec struct {
	// backupSpec is the Velero BackupSpec of the backup to make. nacflow
	// enforces the tenant rules on it (own namespace only, no cluster-scoped
	// resources) and the admin's enforced values before creating the Velero
	// Backup in the OADP namespace.
	// nacflow acts on it once: a later change is reported (condition
	// SpecChanged) and never acted on. No CRD rule refuses a change of the
	// whole (OADP NAC's own updates rewrite it with Velero's zero values),
	// but storageLocation may not change: which location a backup is on
	// decides what a quota counts and what a deleted location takes along.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.storageLocation) ? self.storageLocation : '') == (has(oldSelf.storageLocation) ? oldSelf.storageLocation : '')",message="spec.backupSpec.storageLocation is immutable: create a new NonAdminBackup instead"
	// +kubebuilder:validation:XValidation:rule="!has(self.includedNamespaces) || size(self.includedNamespaces) <= 1",message="spec.backupSpec.includedNamespaces may name only the NonAdminBackup's own namespace"
	// +kubebuilder:validation:XValidation:rule="!has(self.excludedNamespaces) || size(self.excludedNamespaces) == 0",message="spec.backupSpec.excludedNamespaces is restricted"
	// +kubebuilder:validation:XValidation:rule="!has(self.includeClusterResources) || !self.includeClusterResources",message="spec.backupSpec.includeClusterResources can not be true"
	// +kubebuilder:validation:XValidation:rule="!has(self.includedClusterScopedResources) || size(self.includedClusterScopedResources) == 0",message="spec.backupSpec.includedClusterScopedResources is restricted"
	// +kubebuilder:validation:XValidation:rule="!has(self.volumeSnapshotLocations) || size(self.volumeSnapshotLocations) == 0",message="spec.backupSpec.volumeSnapshotLocations is restricted"
	BackupSpec *velerov1.BackupSpec `json:"backupSpec"`

	// deleteBackup, when true, deletes the Velero Backup and its data in
	// object storage (a Velero DeleteBackupRequest), then the NonAdminBackup.
	// +optional
	DeleteBackup bool `json:"deleteBackup,omitempty"`
	// forceDeleteBackup, when true, deletes like deleteBackup, but the Velero
	// Backup and the NonAdminBackup go even when Velero's DeleteBackupRequest
	// fails or does not finish within 5 minutes: data Velero could not delete
	// stays in object storage (OADP NAC's forceDeleteBackup). It wins over
	// deleteBackup.
	// +optional
	ForceDeleteBackup bool `json:"forceDeleteBackup,omitempty"`
	// logLevel of the controller's log lines about this NonAdminBackup's
	// operations: debug or trace adds a line per phase (started, waiting,
	// ended) even when the controller logs at info; warning, error, fatal and
	// panic keep only its errors; info or unset changes nothing (OADP NAC's
	// enum).
	// +optional
	// +kubebuilder:validation:Enum=trace;debug;info;warning;error;fatal;panic
	LogLevel string `json:"logLevel,omitempty"`
}

// NonAdminPhase is the phase of a NAC request (OADP NAC's NonAdminPhase).
// +kubebuilder:validation:Enum=New;BackingOff;Created;Deleting
type NonAdminPhase string

// NAC request phases (OADP NAC).
const (
	// NonAdminPhaseNew: the request was accepted for processing.
	NonAdminPhaseNew NonAdminPhase = "New"
	// NonAdminPhaseBackingOff: the request is invalid and will not be acted on
	// until its spec changes.
	NonAdminPhaseBackingOff NonAdminPhase = "BackingOff"
	// NonAdminPhaseCreated: the Velero object exists in the OADP namespace.
	NonAdminPhaseCreated NonAdminPhase = "Created"
	// NonAdminPhaseDeleting: the request is being deleted.
	NonAdminPhaseDeleting NonAdminPhase = "Deleting"
)

// Condition types of NAC objects (OADP NAC).
const (
	// ConditionAccepted: the spec passed validation.
	ConditionAccepted = "Accepted"
	// ConditionQueued: the Velero object was created and waits in Velero's queue.
	ConditionQueued = "Queued"
	// ConditionDeleting: the object is being deleted.
	ConditionDeleting = "Deleting"
	// ConditionVerified: nacflow checked the finished backup's resource
	// list: True when every item is the tenant's (the message counts them),
	// False naming the items that are not, Unknown when the list could not
	// be read. OADP NAC has no such check.
	ConditionVerified = "Verified"
	// ConditionRestoreTested: nacflow restored the finished backup into a
	// sandbox namespace (an admin's opt-in, TestRestore): True when every
	// item expected came back, False when the restore failed or items are
	// missing (the message says which), Unknown when the test could not run
	// to the end. Absent on backups that were not tested. OADP NAC and
	// Velero have no such check; KubeStash's BackupVerifier is the model.
	ConditionRestoreTested = "RestoreTested"
)

// Reasons of the RestoreTested condition of NonAdminBackups.
const (
	// ReasonRestoreTestSucceeded: RestoreTested=True.
	ReasonRestoreTestSucceeded = "RestoreTestSucceeded"
	// ReasonRestoreTestFailed: RestoreTested=False; the message says what
	// Velero reported or which items are missing.
	ReasonRestoreTestFailed = "RestoreTestFailed"
	// ReasonRestoreTestUnavailable: RestoreTested=Unknown; the message says
	// why the test did not reach a result (time out, a name taken, Velero
	// did not serve the restore's resource list).
	ReasonRestoreTestUnavailable = "RestoreTestUnavailable"
)

// Results of a restore test (RestoreTest.Result).
const (
	RestoreTestSucceeded = "Succeeded"
	RestoreTestFailed    = "Failed"
	RestoreTestUnknown   = "Unknown"
)

// BackupUsage is what a finished backup takes in object storage, in bytes
// (nacflow's addition: OADP NAC and Velero report no size).
type BackupUsage struct {
	// contentsBytes is the size of the backup's contents tarball in object
	// storage (compressed), as the store answered Velero's download URL.
	ContentsBytes int64 `json:"contentsBytes"`
	// volumeBytes is the volume data Velero's node agent moved for it: the
	// total bytes of its DataUploads (data mover) and PodVolumeBackups
	// (file-system backup).
	// +optional
	VolumeBytes int64 `json:"volumeBytes,omitempty"`
	// totalBytes is contentsBytes plus volumeBytes.
	TotalBytes int64 `json:"totalBytes"`
	// storageLocation is the Velero BackupStorageLocation the backup is in.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageLocation string `json:"storageLocation,omitempty"`
	// measuredAt is when it was measured.
	MeasuredAt metav1.Time `json:"measuredAt"`
}

// RestoreTest is the outcome of nacflow's restore test of a backup: the
// backup restored by Velero into a sandbox namespace nobody but the admin
// can read, where nothing runs, then compared with the backup's resource
// list and deleted.
type RestoreTest struct {
	// time is when the test ended.
	Time metav1.Time `json:"time"`
	// result: Succeeded, Failed or Unknown.
	// +kubebuilder:validation:Enum=Succeeded;Failed;Unknown
	Result string `json:"result"`
	// rto is the measured recovery time: from the Velero Restore's creation
	// to its completion (seconds resolution). Unset when the restore did
	// not finish.
	// +optional
	RTO *metav1.Duration `json:"rto,omitempty"`
	// itemsExpected counts the backup's items of the kinds the test
	// restores (its resource list, less what Kubernetes makes in every new
	// namespace).
	// +optional
	ItemsExpected int32 `json:"itemsExpected,omitempty"`
	// itemsRestored counts those Velero created or updated in the sandbox.
	// +optional
	ItemsRestored int32 `json:"itemsRestored,omitempty"`
	// veleroRestore is the Velero Restore of the test (deleted with the
	// sandbox).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	VeleroRestore string `json:"veleroRestore,omitempty"`
	// sandbox is the namespace the backup was restored into (deleted after).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Sandbox string `json:"sandbox,omitempty"`
	// backup names the NonAdminBackup tested (set on NonAdminSchedules).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Backup string `json:"backup,omitempty"`
	// message says what happened, and what is missing on failure.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// Reasons of the Verified condition of NonAdminBackups.
const (
	// ReasonContentsVerified: Verified=True.
	ReasonContentsVerified = "ContentsVerified"
	// ReasonUnexpectedItems: Verified=False; the message names the items.
	ReasonUnexpectedItems = "UnexpectedItems"
	// ReasonVerificationUnavailable: Verified=Unknown; the message says why
	// (Velero did not serve the resource list in time, the download failed).
	ReasonVerificationUnavailable = "VerificationUnavailable"
)

// Condition reasons (OADP NAC).
const (
	// ReasonBackupAccepted: Accepted=True for a valid backupSpec.
	ReasonBackupAccepted = "BackupAccepted"
	// ReasonInvalidBackupSpec: Accepted=False; the message names the field.
	ReasonInvalidBackupSpec = "InvalidBackupSpec"
	// ReasonInvalidSyncLabel: Accepted=False, the NAB's
	// openshift.io/oadp-nab-synced-from-nacuuid label names no Velero Backup
	// of its namespace.
	ReasonInvalidSyncLabel = "InvalidSyncLabel"
	// ReasonQuotaExceeded: Accepted=False, the backup would take the
	// namespace past the admin's quota (CheckQuota); the message names the
	// figure, the limit and what to delete.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonActiveOperationsLimit: Accepted=False, the namespace already runs
	// as many operations as the admin allows (LimitActiveOperations).
	ReasonActiveOperationsLimit = "ActiveOperationsLimit"
	// ReasonBackupScheduled: Queued=True once the Velero Backup exists.
	ReasonBackupScheduled = "BackupScheduled"
	// ReasonWaitingForTurn: Queued=False while the NonAdminBackup waits for
	// its namespace's turn in Velero's queue (WaitForTurn: the namespace has
	// as many unfinished Velero Backups as the admin allows, or another
	// namespace's turn comes first); the message gives its position among
	// the namespace's waiting backups.
	ReasonWaitingForTurn = "WaitingForTurn"
	// ReasonDeletionPending: Deleting=True while deletion runs.
	ReasonDeletionPending = "DeletionPending"
	// ReasonVeleroBackupNotFound: Queued=False; the Velero Backup was deleted
	// outside nacflow.
	ReasonVeleroBackupNotFound = "VeleroBackupNotFound"
)

// VeleroBackup links a NonAdminBackup to its Velero Backup and mirrors it.
type VeleroBackup struct {
	// nacuuid is the operation's NACUUID, the value of the
	// openshift.io/oadp-nab-origin-nacuuid label on the Velero Backup.
	// +optional
	NACUUID string `json:"nacuuid,omitempty"`
	// name of the Velero Backup.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the Velero Backup (the OADP namespace).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// spec is the Velero Backup's effective spec, admin-enforced values included.
	// +optional
	Spec *velerov1.BackupSpec `json:"spec,omitempty"`
	// status mirrors the Velero Backup's status.
	// +optional
	Status *velerov1.BackupStatus `json:"status,omitempty"`
}

// VeleroDeleteBackupRequest links a NonAdminBackup to the Velero
// DeleteBackupRequest that deletes its backup.
type VeleroDeleteBackupRequest struct {
	// nacuuid is the operation's NACUUID.
	// +optional
	NACUUID string `json:"nacuuid,omitempty"`
	// name of the DeleteBackupRequest.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the DeleteBackupRequest (the OADP namespace).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// status mirrors the DeleteBackupRequest's status.
	// +optional
	Status *velerov1.DeleteBackupRequestStatus `json:"status,omitempty"`
}

// QueueInfo tells a tenant where its request stands in Velero's queue.
type QueueInfo struct {
	// estimatedQueuePosition is 1 + the Velero objects of the same kind
	// created earlier and not finished; 0 once finished.
	// +optional
	EstimatedQueuePosition int `json:"estimatedQueuePosition"`
}

// DataMoverDataUploads counts, by phase, the Velero DataUploads of a
// NonAdminBackup's Velero Backup (CSI snapshot data movement; OADP NAC's
// field).
type DataMoverDataUploads struct {
	// +optional
	Total int `json:"total,omitempty"`
	// +optional
	New int `json:"new,omitempty"`
	// +optional
	Accepted int `json:"accepted,omitempty"`
	// +optional
	Prepared int `json:"prepared,omitempty"`
	// +optional
	InProgress int `json:"inProgress,omitempty"`
	// +optional
	Canceling int `json:"canceling,omitempty"`
	// +optional
	Canceled int `json:"canceled,omitempty"`
	// +optional
	Failed int `json:"failed,omitempty"`
	// +optional
	Completed int `json:"completed,omitempty"`
	// bytesDone and totalBytes sum the objects' status.progress (bytes):
	// what the node agent has moved of the volume data so far (nacflow's
	// addition).
	// +optional
	BytesDone int64 `json:"bytesDone,omitempty"`
	// +optional
	TotalBytes int64 `json:"totalBytes,omitempty"`
}

// FileSystemPodVolumeBackups counts, by phase, the Velero PodVolumeBackups
// of a NonAdminBackup's Velero Backup (file-system backup; OADP NAC's
// field). Phases OADP does not list count in total only.
type FileSystemPodVolumeBackups struct {
	// +optional
	Total int `json:"total,omitempty"`
	// +optional
	New int `json:"new,omitempty"`
	// +optional
	InProgress int `json:"inProgress,omitempty"`
	// +optional
	Failed int `json:"failed,omitempty"`
	// +optional
	Completed int `json:"completed,omitempty"`
	// bytesDone and totalBytes sum the objects' status.progress (bytes)
	// (nacflow's addition).
	// +optional
	BytesDone int64 `json:"bytesDone,omitempty"`
	// +optional
	TotalBytes int64 `json:"totalBytes,omitempty"`
}

// NonAdminBackupStatus is the observed state of a NonAdminBackup.
type NonAdminBackupStatus struct {
	// phase is the request's phase: New, BackingOff, Created or Deleting.
	// +optional
	Phase NonAdminPhase `json:"phase,omitempty"`

	// observedGeneration is the metadata.generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Accepted, Queued, Deleting.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// veleroBackup links to and mirrors the Velero Backup.
	// +optional
	VeleroBackup *VeleroBackup `json:"veleroBackup,omitempty"`

	// specHash is SpecHash of spec.backupSpec when nacflow validated it:
	// a later spec that hashes otherwise is reported (SpecChanged) and
	// never acted on (nacflow's field).
	// +optional
	SpecHash string `json:"specHash,omitempty"`

	// veleroDeleteBackupRequest links to and mirrors the Velero
	// DeleteBackupRequest made for spec.deleteBackup.
	// +optional
	VeleroDeleteBackupRequest *VeleroDeleteBackupRequest `json:"veleroDeleteBackupRequest,omitempty"`

	// queueInfo is the estimated queue position.
	// +optional
	QueueInfo *QueueInfo `json:"queueInfo,omitempty"`
	// dataMoverDataUploads counts the backup's DataUploads by phase.
	// +optional
	DataMoverDataUploads *DataMoverDataUploads `json:"dataMoverDataUploads,omitempty"`
	// fileSystemPodVolumeBackups counts the backup's PodVolumeBackups by
	// phase.
	// +optional
	FileSystemPodVolumeBackups *FileSystemPodVolumeBackups `json:"fileSystemPodVolumeBackups,omitempty"`

	// uploaderType is the uploader Velero's node agent moved the backup's
	// pod volumes with (file-system backup), as its PodVolumeBackups name
	// it: kopia or restic; empty while none moved (OADP NAC's field).
	// +optional
	UploaderType string `json:"uploaderType,omitempty"`

	// usage is what the backup takes in object storage, measured once it
	// finished (MeasureUsage).
	// +optional
	Usage *BackupUsage `json:"usage,omitempty"`

	// restoreTest is the outcome of the backup's restore test, when the
	// admin enabled them for the namespace (RestoreTested condition).
	// +optional
	RestoreTest *RestoreTest `json:"restoreTest,omitempty"`

	// plan is the blueprint action the controller runs for this request, with
	// per-phase progress.
	// +optional
	Plan *PlanStatus `json:"plan,omitempty"`
}

// NonAdminBackup asks nacflow to back up the namespace it lives in with
// Velero (OADP NAC's NonAdminBackup).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nab,categories=nac
// +kubebuilder:printcolumn:name="Request-Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Velero-Phase",type=string,JSONPath=`.status.veleroBackup.status.phase`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.status.plan.state`
// +kubebuilder:printcolumn:name="Plan-Phase",type=string,JSONPath=`.status.plan.current`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NonAdminBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NonAdminBackupSpec `json:"spec"`
	// status is written by the controller alone, and as a whole: the API
	// server tracks it as one field of metadata.managedFields.
	// +optional
	// +structType=atomic
	Status NonAdminBackupStatus `json:"status,omitempty"`
}

// GetPlan returns the plan status, nil before the first operation started.
func (n *NonAdminBackup) GetPlan() *PlanStatus { return n.Status.Plan }

// SetPlan replaces the plan status.
func (n *NonAdminBackup) SetPlan(p *PlanStatus) { n.Status.Plan = p }

// +kubebuilder:object:root=true

// NonAdminBackupList is a list of NonAdminBackups.
type NonAdminBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NonAdminBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NonAdminBackup{}, &NonAdminBackupList{})
	registerKind(Kind{
		Kind: "NonAdminBackup", Resource: "nonadminbackups", Short: "nab",
		VeleroQueue: VeleroBackups, ExclusionOrder: 1, Command: "backup",
		Finalizer: NonAdminBackupFinalizer, Blueprint: "nonadminbackup",
		Actions: []string{ActionAdopt, ActionBackup, ActionDelete, ActionFinalize, ActionForceDelete}, FirstAction: ActionBackup,
		New: func() Object { return &NonAdminBackup{} }, NewList: func() client.ObjectList { return &NonAdminBackupList{} },
		GarbageCollected: func() []client.ObjectList {
			// DownloadRequests: VerifyBackupContents leaves its request to
			// Velero, which never expires one it did not serve.
			return []client.ObjectList{&velerov1.BackupList{}, &velerov1.DeleteBackupRequestList{}, &velerov1.DownloadRequestList{}}
		},
	})
}
