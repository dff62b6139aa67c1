package v1alpha1

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NonAdminRestoreSpec is what a namespace owner asks for (OADP NAC's
// NonAdminRestoreSpec, plus nacflow's preview).
// +kubebuilder:validation:XValidation:rule="(has(self.preview) && self.preview) == (has(oldSelf.preview) && oldSelf.preview)",message="spec.preview is immutable: create a new NonAdminRestore instead"
type NonAdminRestoreSpec struct {
	// restoreSpec is the Velero RestoreSpec of the restore to make. Its
	// backupName names a NonAdminBackup in the same namespace, never a Velero
	// Backup. nacflow restores into the NonAdminRestore's own namespace only,
	// and nothing cluster-scoped: includeClusterResources may not be true and
	// includedResources may not name a cluster-scoped kind.
	// nacflow acts on it once, as it was when the NonAdminRestore was
	// created (nacflow's webhook records its digest with the requester and
	// refuses any later change; zero values another client writes, as
	// OADP NAC's updates do, are no change). This rule keeps
	// resourceModifier and namespaceMapping from being added, removed or
	// renamed where no webhook runs (a rule comparing the whole spec would
	// refuse OADP NAC's updates, and one comparing Velero's unbounded
	// lists and maps field by field exceeds the API server's CEL cost
	// budget); any other later change is reported (condition SpecChanged)
	// and never acted on.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.namespaceMapping) == has(oldSelf.namespaceMapping) && has(self.resourceModifier) == has(oldSelf.resourceModifier) && (!has(self.resourceModifier) || self.resourceModifier.name == oldSelf.resourceModifier.name)",message="spec.restoreSpec is immutable: namespaceMapping and resourceModifier can not be added, removed or changed; create a new NonAdminRestore instead"
	// +kubebuilder:validation:XValidation:rule="has(self.backupName) && size(self.backupName) > 0",message="spec.restoreSpec.backupName is required: the name of a NonAdminBackup in this namespace"
	// +kubebuilder:validation:XValidation:rule="!has(self.includeClusterResources) || !self.includeClusterResources",message="spec.restoreSpec.includeClusterResources can not be true: a NonAdminRestore may not restore cluster-scoped resources"
	RestoreSpec *velerov1.RestoreSpec `json:"restoreSpec"`

	// preview, when true, restores nothing: nacflow validates the restore
	// as it would restore it, reads the backup's items through Velero, and
	// writes in status.preview what the restore would do to each item of
	// the namespace (create, skip, update, excluded). No Velero Restore is
	// made. nacflow's field; immutable.
	// +optional
	Preview bool `json:"preview,omitempty"`
}

// Outcomes of an item in a restore preview (RestorePreviewItem.Outcome).
const (
	// PreviewCreate: the item does not exist in the namespace; the restore
	// creates it.
	PreviewCreate = "create"
	// PreviewSkip: the item exists and the restore leaves it as it is
	// (existingResourcePolicy none, Velero's default, or nothing differs).
	PreviewSkip = "skip"
	// PreviewUpdate: the item exists, differs, and existingResourcePolicy
	// is update: Velero changes the fields named.
	PreviewUpdate = "update"
	// PreviewExcluded: the restore leaves the item out (the rule is named).
	PreviewExcluded = "excluded"
	// PreviewUnknown: nacflow could not tell (the live object could not be
	// read; the reason is named).
	PreviewUnknown = "unknown"
)

// Sources of a restore preview (RestorePreview.Source).
const (
	// PreviewFromContents: every item was read from the backup's contents
	// and compared with the live object field by field.
	PreviewFromContents = "Contents"
	// PreviewFromResourceList: the contents were over the size cap; the
	// backup's resource list gave the number of the namespace's items, and
	// no outcome was computed.
	PreviewFromResourceList = "ResourceList"
)

// RestorePreviewItem is one item of a restore preview.
type RestorePreviewItem struct {
	// resource is the item's group-resource as Velero names it
	// (configmaps, deployments.apps).
	// +kubebuilder:validation:MaxLength=253
	Resource string `json:"resource"`
	// name of the item (in the NonAdminRestore's namespace, or none for a
	// cluster-scoped item).
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// outcome: create, skip, update, excluded or unknown.
	// +kubebuilder:validation:Enum=create;skip;update;excluded;unknown
	Outcome string `json:"outcome"`
	// fields that the restore would change, for outcome update (the first
	// 20; metadata noise and status left out), as dotted paths.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	Fields []string `json:"fields,omitempty"`
	// reason is why an item is excluded or unknown, or skipped though it
	// differs.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Reason string `json:"reason,omitempty"`
}

// RestorePreview is what a NonAdminRestore with spec.preview would do.
type RestorePreview struct {
	// backupName is the Velero Backup previewed.
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// source is Contents (items read and compared field by field) or
	// ResourceList (the contents were over the cap: a count only).
	// +optional
	Source string `json:"source,omitempty"`
	// total is the number of items the backup holds for the namespace
	// (after Velero's and the restore's filters).
	Total int32 `json:"total"`
	// create, skip, update, excluded and unknown count the items by
	// outcome.
	Create   int32 `json:"create"`
	Skip     int32 `json:"skip"`
	Update   int32 `json:"update"`
	Excluded int32 `json:"excluded"`
	// +optional
	Unknown int32 `json:"unknown,omitempty"`
	// items are the first 100 items, ordered by resource and name.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	Items []RestorePreviewItem `json:"items,omitempty"`
	// message says what was previewed and how, in one sentence.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
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

// The condition that says who asked for a NonAdminRestore (the requester
// nacflow's admission webhook records, internal/policy/requester), and its
// reasons.
const (
	// ConditionRequesterVerified: True when the restore is checked as the
	// user who created the NonAdminRestore; False when no such user is
	// known (the tenant role alone bounds the restore, as before nacflow
	// had a webhook) or the record is forged.
	ConditionRequesterVerified = "RequesterVerified"
	// ReasonRequesterRecorded: RequesterVerified=True; the message names
	// the user.
	ReasonRequesterRecorded = "RequesterRecorded"
	// ReasonWebhookNotInstalled: RequesterVerified=False; nacflow's
	// requester webhook is not installed (or nacflow may not serve it).
	ReasonWebhookNotInstalled = "WebhookNotInstalled"
	// ReasonRequesterNotRecorded: RequesterVerified=False; the webhook is
	// installed but the object carries no record (made before it was).
	ReasonRequesterNotRecorded = "RequesterNotRecorded"
	// ReasonRequesterForged: RequesterVerified=False and Accepted=False;
	// the object carries a requester record nacflow's webhook did not
	// write for it.
	ReasonRequesterForged = "RequesterForged"
	// ReasonRequesterNotATenant: RequesterVerified=False; the record names
	// an identity that acts for the admin (Velero, nacflow, a member of
	// system:masters, one the admin lists, anyone who may create Velero
	// Restores in the OADP namespace): the tenant role alone bounds the
	// restore, as without a webhook.
	ReasonRequesterNotATenant = "RequesterNotATenant"
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

	// specHash is SpecHash of spec.restoreSpec when nacflow validated it
	// (nacflow's field; see NonAdminBackupStatus.specHash).
	// +optional
	SpecHash string `json:"specHash,omitempty"`

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

	// preview is what the restore would do, for spec.preview.
	// +optional
	Preview *RestorePreview `json:"preview,omitempty"`

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
	registerKind(Kind{
		Kind: "NonAdminRestore", Resource: "nonadminrestores", Short: "nar",
		VeleroQueue: VeleroRestores, ExclusionOrder: 2, Command: "restore",
		Finalizer: NonAdminRestoreFinalizer, Blueprint: "nonadminrestore",
		Actions: []string{ActionFinalize, ActionPreview, ActionRestore}, FirstAction: ActionRestore,
		New: func() Object { return &NonAdminRestore{} }, NewList: func() client.ObjectList { return &NonAdminRestoreList{} },
		GarbageCollected: func() []client.ObjectList {
			return []client.ObjectList{&velerov1.RestoreList{}, &velerov1.DownloadRequestList{}}
		},
	})
}
