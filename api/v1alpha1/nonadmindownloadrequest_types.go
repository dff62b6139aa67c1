package v1alpha1

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NonAdminDownloadRequestSpec is what a namespace owner asks to download
// (OADP NAC's NonAdminDownloadRequestSpec, a Velero DownloadRequestSpec whose
// target names a NonAdminBackup or NonAdminRestore).
type NonAdminDownloadRequestSpec struct {
	// target is the file to download: kind is a Velero DownloadTarget kind
	// (BackupLog, BackupResourceList, RestoreLog, …), name the
	// NonAdminBackup (Backup* kinds) or NonAdminRestore (Restore* kinds) of
	// this namespace whose file it is — never a Velero object's name.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.target is immutable: create a new NonAdminDownloadRequest instead"
	// +kubebuilder:validation:XValidation:rule="size(self.name) > 0",message="spec.target.name is required: the name of a NonAdminBackup or NonAdminRestore in this namespace"
	Target velerov1.DownloadTarget `json:"target"`
}

// Condition types and reasons of NonAdminDownloadRequests (OADP NAC's, and
// Accepted as on every NAC kind).
const (
	// ConditionProcessed: Processed=True once the download URL is in
	// status.velero.status.downloadURL (OADP NAC's terminal condition).
	ConditionProcessed = "Processed"
	// ReasonProcessed is Processed=True's reason (OADP NAC's "Success").
	ReasonProcessed = "Success"
	// ReasonInvalidDownloadRequest: Accepted=False; the message names the
	// field and why (a target of another namespace, a kind Velero does not
	// serve for NAC objects, a missing NonAdminBackup, …).
	ReasonInvalidDownloadRequest = "InvalidDownloadRequest"
	// ReasonDownloadRequestAccepted: Accepted=True.
	ReasonDownloadRequestAccepted = "DownloadRequestAccepted"
	// ConditionNonAdminBackupStorageLocationNotUsed is OADP NAC's refusal
	// condition of a request for a backup on the admin's location; nacflow
	// sets it only when a blueprint asks for OADP's rule
	// (args.requireTenantLocation of ValidateDownloadRequest).
	ConditionNonAdminBackupStorageLocationNotUsed = "NonAdminBackupStorageLocationNotUsed"
	// ConditionNonAdminBackupNotAvailable and
	// ConditionNonAdminRestoreNotAvailable are OADP NAC's: True (reason
	// ReasonError) while the NonAdminBackup or NonAdminRestore that
	// spec.target names does not exist in the request's namespace; the
	// request waits for it (phase BackingOff), and the condition goes once
	// it exists.
	ConditionNonAdminBackupNotAvailable  = "NonAdminBackupNotAvailable"
	ConditionNonAdminRestoreNotAvailable = "NonAdminRestoreNotAvailable"
	// ReasonError is OADP NAC's reason of its NonAdminDownloadRequest
	// refusal and not-available conditions.
	ReasonError = "Error"
)

// VeleroDownloadRequest links a NonAdminDownloadRequest to its Velero
// DownloadRequest and mirrors its status (OADP NAC's status.velero).
type VeleroDownloadRequest struct {
	// nacuuid is the operation's NACUUID, the value of the
	// openshift.io/oadp-nadr-origin-nacuuid label of the Velero
	// DownloadRequest.
	// +optional
	NACUUID string `json:"nacuuid,omitempty"`
	// name of the Velero DownloadRequest in the OADP namespace.
	// +optional
	Name string `json:"name,omitempty"`
	// status mirrors the Velero DownloadRequest's status: phase,
	// downloadURL (pre-signed, valid until expiration) and expiration.
	// +optional
	Status *velerov1.DownloadRequestStatus `json:"status,omitempty"`
}

// NonAdminDownloadRequestStatus is the observed state of a
// NonAdminDownloadRequest.
type NonAdminDownloadRequestStatus struct {
	// velero links to and mirrors the Velero DownloadRequest.
	// +optional
	VeleroDownloadRequest VeleroDownloadRequest `json:"velero,omitempty"`

	// phase is the request's phase: New, BackingOff, Created or Deleting.
	// +optional
	Phase NonAdminPhase `json:"phase,omitempty"`

	// observedGeneration is the metadata.generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Accepted, Processed (OADP NAC),
	// NonAdminBackupStorageLocationNotUsed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// plan is the blueprint action the controller runs for this request, with
	// per-phase progress.
	// +optional
	Plan *PlanStatus `json:"plan,omitempty"`
}

// NonAdminDownloadRequest asks for a pre-signed URL of one file of the
// namespace's own NonAdminBackup or NonAdminRestore: its log, resource list,
// results, volume info, … (OADP NAC's NonAdminDownloadRequest, over a Velero
// DownloadRequest in the OADP namespace). The request is deleted once the URL
// expires (OADP NAC's behaviour; Velero's default expiry is 10 minutes).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nadr,categories=nac
// +kubebuilder:printcolumn:name="Request-Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Velero-Phase",type=string,JSONPath=`.status.velero.status.phase`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.velero.status.expiration`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.status.plan.state`,priority=1
// +kubebuilder:printcolumn:name="Plan-Phase",type=string,JSONPath=`.status.plan.current`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NonAdminDownloadRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NonAdminDownloadRequestSpec `json:"spec"`
	// status is written by the controller alone, and as a whole: the API
	// server tracks it as one field of metadata.managedFields.
	// +optional
	// +structType=atomic
	Status NonAdminDownloadRequestStatus `json:"status,omitempty"`
}

// GetPlan returns the plan status, nil before the first operation started.
func (n *NonAdminDownloadRequest) GetPlan() *PlanStatus { return n.Status.Plan }

// SetPlan replaces the plan status.
func (n *NonAdminDownloadRequest) SetPlan(p *PlanStatus) { n.Status.Plan = p }

// +kubebuilder:object:root=true

// NonAdminDownloadRequestList is a list of NonAdminDownloadRequests.
type NonAdminDownloadRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NonAdminDownloadRequest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NonAdminDownloadRequest{}, &NonAdminDownloadRequestList{})
	registerKind(Kind{
		Kind: "NonAdminDownloadRequest", Resource: "nonadmindownloadrequests", Short: "nadr",
		Finalizer: NonAdminDownloadRequestFinalizer, Blueprint: "nonadmindownloadrequest",
		Actions: []string{ActionDownload, ActionFinalize}, FirstAction: ActionDownload,
		New: func() Object { return &NonAdminDownloadRequest{} }, NewList: func() client.ObjectList { return &NonAdminDownloadRequestList{} },
		GarbageCollected: func() []client.ObjectList { return nil },
	})
}

// DownloadTargetOf tells which NAC kind a Velero DownloadTarget kind
// belongs to: "NonAdminBackup" for the Backup* and CSI* kinds,
// "NonAdminRestore" for the Restore* kinds, "" for any other (OADP NAC's
// list of the kinds a NonAdminDownloadRequest may ask for: all of Velero's).
func DownloadTargetOf(kind velerov1.DownloadTargetKind) string {
	switch kind {
	case velerov1.DownloadTargetKindBackupLog,
		velerov1.DownloadTargetKindBackupContents,
		velerov1.DownloadTargetKindBackupVolumeSnapshots,
		velerov1.DownloadTargetKindBackupItemOperations,
		velerov1.DownloadTargetKindBackupResourceList,
		velerov1.DownloadTargetKindBackupResults,
		velerov1.DownloadTargetKindCSIBackupVolumeSnapshots,
		velerov1.DownloadTargetKindCSIBackupVolumeSnapshotContents,
		velerov1.DownloadTargetKindBackupVolumeInfos:
		return "NonAdminBackup"
	case velerov1.DownloadTargetKindRestoreLog,
		velerov1.DownloadTargetKindRestoreResults,
		velerov1.DownloadTargetKindRestoreResourceList,
		velerov1.DownloadTargetKindRestoreItemOperations,
		velerov1.DownloadTargetKindRestoreVolumeInfo:
		return "NonAdminRestore"
	}
	return ""
}
