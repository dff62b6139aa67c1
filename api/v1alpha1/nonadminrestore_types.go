package v1alpha1

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NonAdminRestoreSpec is what a namespace owner asks for (OADP NAC's
// NonAdminRestoreSpec).
type NonAdminRestoreSpec struct {
	// restoreSpec is the Velero RestoreSpec of the restore to make. Its
	// backupName names a NonAdminBackup in the same namespace, never a Velero
	// Backup. nacflow restores into the NonAdminRestore's own namespace only,
	// and nothing cluster-scoped: includeClusterResources may not be true and
	// includedResources may not name a cluster-scoped kind.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="restoreSpec is immutable: create a new NonAdminRestore instead"
	// +kubebuilder:validation:XValidation:rule="has(self.backupName) && size(self.backupName) > 0",message="spec.restoreSpec.backupName is required: the name of a NonAdminBackup in this namespace"
	// +kubebuilder:validation:XValidation:rule="!has(self.includeClusterResources) || !self.includeClusterResources",message="spec.restoreSpec.includeClusterResources can not be true: a NonAdminRestore may not restore cluster-scoped resources"
	RestoreSpec *velerov1.RestoreSpec `json:"restoreSpec"`
}

// Condition reasons of NonAdminRestores (OADP NAC).
const (
	// ReasonRestoreAccepted: Accepted=True for a valid restoreSpec.
	ReasonRestoreAccepted = "RestoreAccepted"
	// ReasonInvalidRestoreSpec: Accepted=False; the message names the field.
	ReasonInvalidRestoreSpec = "InvalidRestoreSpec"
	// ReasonRestoreScheduled: Queued=True once the Velero Restore exists.
	ReasonRestoreScheduled = "RestoreScheduled"
)

// The condition nacflow's restore pre-check (CheckRestoreItems) sets, and
// its reasons.
const (
	// ConditionRestoreItemsChecked: nacflow read the backup's items and
	// checked them against what the tenant role allows in the namespace.
	ConditionRestoreItemsChecked = "RestoreItemsChecked"
	// ReasonItemsAllowed: RestoreItemsChecked=True; every item is within the
	// tenant role.
	ReasonItemsAllowed = "ItemsAllowed"
	// ReasonItemsExcluded: RestoreItemsChecked=False; the message names the
	// items left out and why (also Accepted=False with onExcluded: refuse).
	ReasonItemsExcluded = "ItemsExcluded"
	// ReasonItemsNotChecked: RestoreItemsChecked=Unknown; Velero did not
	// serve the contents or they could not be read.
	ReasonItemsNotChecked = "ItemsNotChecked"
	// ReasonRestorePluginMissing: Accepted=False; Velero does not run
	// nacflow's plugin velero-plugin-nacflow.
	ReasonRestorePluginMissing = "RestorePluginMissing"
)

// VeleroRestore links a NonAdminRestore to its Velero Restore and mirrors it.
type VeleroRestore struct {
	// nacuuid is the operation's NACUUID, the value of the
	// openshift.io/oadp-nar-origin-nacuuid label on the Velero Restore.
	// +optional
	NACUUID string `json:"nacuuid,omitempty"`
	// name of the Velero Restore.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the Velero Restore (the OADP namespace).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// spec is the effective restoreSpec, admin-enforced values included
	// (backupName still names the NonAdminBackup).
	// +optional
	Spec *velerov1.RestoreSpec `json:"spec,omitempty"`
	// status mirrors the Velero Restore's status.
	// +optional
	Status *velerov1.RestoreStatus `json:"status,omitempty"`
}

// DataMoverDataDownloads counts, by phase, the Velero DataDownloads of a
// NonAdminRestore's Velero Restore (OADP NAC's field).
type DataMoverDataDownloads DataMoverDataUploads

// FileSystemPodVolumeRestores counts, by phase, the Velero
// PodVolumeRestores of a NonAdminRestore's Velero Restore (OADP NAC's
// field). Phases OADP does not list count in total only.
type FileSystemPodVolumeRestores FileSystemPodVolumeBackups

// NonAdminRestoreStatus is the observed state of a NonAdminRestore.
type NonAdminRestoreStatus struct {
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

	// veleroRestore links to and mirrors the Velero Restore.
	// +optional
	VeleroRestore *VeleroRestore `json:"veleroRestore,omitempty"`

	// queueInfo is the estimated queue position.
	// +optional
	QueueInfo *QueueInfo `json:"queueInfo,omitempty"`

	// dataMoverDataDownloads counts the restore's DataDownloads by phase.
	// +optional
	DataMoverDataDownloads *DataMoverDataDownloads `json:"dataMoverDataDownloads,omitempty"`

	// fileSystemPodVolumeRestores counts the restore's PodVolumeRestores by
	// phase.
	// +optional
	FileSystemPodVolumeRestores *FileSystemPodVolumeRestores `json:"fileSystemPodVolumeRestores,omitempty"`

	// plan is the blueprint action the controller runs for this request, with
	// per-phase progress.
	// +optional
	Plan *PlanStatus `json:"plan,omitempty"`
}

// NonAdminRestore asks nacflow to restore one of the namespace's own
// NonAdminBackups into the namespace (OADP NAC's NonAdminRestore).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nar,categories=nac
// +kubebuilder:printcolumn:name="Request-Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Velero-Phase",type=string,JSONPath=`.status.veleroRestore.status.phase`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.status.plan.state`
// +kubebuilder:printcolumn:name="Plan-Phase",type=string,JSONPath=`.status.plan.current`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NonAdminRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NonAdminRestoreSpec `json:"spec"`
	// status is written by the controller alone, and as a whole: the API
	// server tracks it as one field of metadata.managedFields.
	// +optional
	// +structType=atomic
	Status NonAdminRestoreStatus `json:"status,omitempty"`
}

// GetPlan returns the plan status, nil before the first operation started.
func (n *NonAdminRestore) GetPlan() *PlanStatus { return n.Status.Plan }

// SetPlan replaces the plan status.
func (n *NonAdminRestore) SetPlan(p *PlanStatus) { n.Status.Plan = p }

// +kubebuilder:object:root=true

// NonAdminRestoreList is a list of NonAdminRestores.
type NonAdminRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NonAdminRestore `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NonAdminRestore{}, &NonAdminRestoreList{})
}
