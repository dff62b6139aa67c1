package v1alpha1

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NonAdminBackupStorageLocationSpec is a tenant's own backup storage
// location (seed design non_admin_backupstoragelocation.md).
type NonAdminBackupStorageLocationSpec struct {
	// backupStorageLocationSpec is the Velero BSL spec. credential names a
	// Secret (name and key) in the NonAdminBackupStorageLocation's own
	// namespace: a SecretKeySelector has no namespace, so another
	// namespace's Secret cannot be expressed. The prefix in object storage is
	// forced under the tenant's namespace.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.default) || !self.default",message="spec.backupStorageLocationSpec.default must be false: a tenant's location is never the default"
	// +kubebuilder:validation:XValidation:rule="has(self.credential) && has(self.credential.name) && size(self.credential.name) > 0 && has(self.credential.key) && size(self.credential.key) > 0",message="spec.backupStorageLocationSpec.credential name and key are required: a Secret in this namespace"
	BackupStorageLocationSpec *velerov1.BackupStorageLocationSpec `json:"backupStorageLocationSpec"`
}

// Condition types and reasons of NonAdminBackupStorageLocations (OADP NAC).
const (
	// ConditionClusterAdminApproved: an admin approved the request (or
	// approval is not required).
	ConditionClusterAdminApproved = "ClusterAdminApproved"
	// ConditionSecretSynced: the credential Secret was copied into the OADP
	// namespace.
	ConditionSecretSynced = "SecretSynced"
	// ConditionBackupStorageLocationSynced: the Velero BSL exists and matches.
	ConditionBackupStorageLocationSynced = "BackupStorageLocationSynced"
	// ConditionSpecUpdateApproved: False when the spec changed after an
	// admin approved it (OADP NAC's condition); True once the spec in force
	// is the approved one.
	ConditionSpecUpdateApproved = "SpecUpdateApproved"

	// ReasonBSLAccepted: Accepted=True; ReasonInvalidBSLSpec: Accepted=False,
	// the message names the field. Both are OADP NAC's one reason of a
	// location's Accepted, BslSpecValidation.
	ReasonBSLAccepted    = "BslSpecValidation"
	ReasonInvalidBSLSpec = "BslSpecValidation"
	// ReasonApproved, ReasonPendingApproval, ReasonRejected:
	// ClusterAdminApproved True, False, False (OADP NAC's reasons).
	ReasonApproved        = "BslSpecApproved"
	ReasonPendingApproval = "BslSpecApprovalPending"
	ReasonRejected        = "BslSpecRejected"
	// ReasonSpecChangePendingApproval: ClusterAdminApproved=False and
	// SpecUpdateApproved=False, the approval was reset to pending because the
	// spec changed after it (RequestApproval args.onSpecChange: pending;
	// nacflow's: OADP NAC refuses every change).
	ReasonSpecChangePendingApproval = "SpecChangePendingApproval"
	// ReasonSpecUpdateRejected: Accepted=False and SpecUpdateApproved=False,
	// a change of an approved spec is refused (args.onSpecChange: refuse;
	// OADP NAC's reason).
	ReasonSpecUpdateRejected = "BslSpecUpdateRejected"
	// ReasonSpecApproved: SpecUpdateApproved=True (nacflow's: OADP NAC never
	// sets it True).
	ReasonSpecApproved = "SpecApproved"
	// ReasonSecretCreated, ReasonSecretUpdated: SecretSynced=True, the
	// credential copy was created, or updated to the tenant's Secret (OADP
	// NAC's reasons).
	ReasonSecretCreated = "SecretCreated"
	ReasonSecretUpdated = "SecretUpdated"
	// ReasonBSLCreated, ReasonBSLUpdated: BackupStorageLocationSynced=True,
	// the Velero BSL was created, or updated to the accepted spec (OADP
	// NAC's reasons).
	ReasonBSLCreated = "BackupStorageLocationCreated"
	ReasonBSLUpdated = "BackupStorageLocationUpdated"
)

// VeleroBackupStorageLocation links a NonAdminBackupStorageLocation to its
// Velero BSL and mirrors it.
type VeleroBackupStorageLocation struct {
	// nacuuid is the operation's NACUUID (label
	// openshift.io/oadp-nabsl-origin-nacuuid): as OADP NAC makes it,
	// "<namespace>-<name>-<uuid>" (at most 63 characters), which is also the
	// name of the Velero BSL, of its Secret copy and of the
	// NonAdminBackupStorageLocationRequest in the OADP namespace — what
	// `kubectl oadp nabsl-request` looks the request up by.
	// +optional
	NACUUID string `json:"nacuuid,omitempty"`
	// name of the Velero BSL: what a NonAdminBackup's storageLocation naming
	// this NonAdminBackupStorageLocation is translated to.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the Velero BSL (the OADP namespace).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// spec is the effective spec: admin-enforced values and the forced prefix.
	// +optional
	Spec *velerov1.BackupStorageLocationSpec `json:"spec,omitempty"`
	// status mirrors the Velero BSL's status (phase Available/Unavailable,
	// Velero's message).
	// +optional
	Status *velerov1.BackupStorageLocationStatus `json:"status,omitempty"`
}

// NonAdminBackupStorageLocationStatus is the observed state.
type NonAdminBackupStorageLocationStatus struct {
	// phase: New, BackingOff, Created or Deleting.
	// +optional
	Phase NonAdminPhase `json:"phase,omitempty"`
	// observedGeneration is the metadata.generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Accepted, ClusterAdminApproved, SecretSynced,
	// BackupStorageLocationSynced, Deleting.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// veleroBackupStorageLocation links to and mirrors the Velero BSL.
	// +optional
	VeleroBackupStorageLocation *VeleroBackupStorageLocation `json:"veleroBackupStorageLocation,omitempty"`
	// plan is the blueprint action run for this location.
	// +optional
	Plan *PlanStatus `json:"plan,omitempty"`
	// usage is what the namespace's NonAdminBackups on this location take
	// in object storage (kubectl nac usage's figures), refreshed at each
	// look at the location: at least every --credential-check-period.
	// +optional
	Usage *StorageUsage `json:"usage,omitempty"`
}

// NonAdminBackupStorageLocation is a tenant's own bucket for its backups,
// created in the OADP namespace as a Velero BSL once an admin approved it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nabsl,categories=nac
// +kubebuilder:printcolumn:name="Request-Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Velero-Phase",type=string,JSONPath=`.status.veleroBackupStorageLocation.status.phase`
// +kubebuilder:printcolumn:name="Approved",type=string,JSONPath=`.status.conditions[?(@.type=="ClusterAdminApproved")].status`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.status.plan.state`
// +kubebuilder:printcolumn:name="Plan-Phase",type=string,JSONPath=`.status.plan.current`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NonAdminBackupStorageLocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NonAdminBackupStorageLocationSpec `json:"spec"`
	// status is written by the controller alone, and as a whole: the API
	// server tracks it as one field of metadata.managedFields.
	// +optional
	// +structType=atomic
	Status NonAdminBackupStorageLocationStatus `json:"status,omitempty"`
}

// GetPlan returns the plan status, nil before the first operation started.
func (n *NonAdminBackupStorageLocation) GetPlan() *PlanStatus { return n.Status.Plan }

// SetPlan replaces the plan status.
func (n *NonAdminBackupStorageLocation) SetPlan(p *PlanStatus) { n.Status.Plan = p }

// +kubebuilder:object:root=true

// NonAdminBackupStorageLocationList is a list of NonAdminBackupStorageLocations.
type NonAdminBackupStorageLocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NonAdminBackupStorageLocation `json:"items"`
}

// ApprovalDecision is an admin's decision on a NonAdminBackupStorageLocation.
// +kubebuilder:validation:Enum=approve;reject;pending
type ApprovalDecision string

// Approval decisions.
const (
	ApprovalApprove ApprovalDecision = "approve"
	ApprovalReject  ApprovalDecision = "reject"
	ApprovalPending ApprovalDecision = "pending"
)

// NonAdminBackupStorageLocationRequestSpec is the admin's side of a request.
type NonAdminBackupStorageLocationRequestSpec struct {
	// approvalDecision: approve, reject or pending (the default). Changing an
	// approval to reject or pending later removes the Velero BSL and the
	// copied Secret.
	// +optional
	// +kubebuilder:default=pending
	ApprovalDecision ApprovalDecision `json:"approvalDecision,omitempty"`
}

// NonAdminBSLRequestPhase sums up a request (OADP NAC's
// NonAdminBSLRequestPhase): Pending, Approved or Rejected, following
// spec.approvalDecision.
// +kubebuilder:validation:Enum=Pending;Approved;Rejected
type NonAdminBSLRequestPhase string

// Request phases (OADP NAC).
const (
	NonAdminBSLRequestPhasePending  NonAdminBSLRequestPhase = "Pending"
	NonAdminBSLRequestPhaseApproved NonAdminBSLRequestPhase = "Approved"
	NonAdminBSLRequestPhaseRejected NonAdminBSLRequestPhase = "Rejected"
)

// RequestPhaseOf returns the phase a request with decision d is in.
func RequestPhaseOf(d ApprovalDecision) NonAdminBSLRequestPhase {
	switch d {
	case ApprovalApprove:
		return NonAdminBSLRequestPhaseApproved
	case ApprovalReject:
		return NonAdminBSLRequestPhaseRejected
	default:
		return NonAdminBSLRequestPhasePending
	}
}

// SourceNonAdminBSL names the NonAdminBackupStorageLocation a request is
// for and what it asks (OADP NAC's SourceNonAdminBSL; kubectl oadp
// nabsl-request describe prints it).
type SourceNonAdminBSL struct {
	// requestedSpec is the effective spec the tenant asks for: admin-enforced
	// values applied, prefix forced under the namespace.
	// +optional
	RequestedSpec *velerov1.BackupStorageLocationSpec `json:"requestedSpec,omitempty"`
	// nacuuid of the NonAdminBackupStorageLocation's operation.
	// +optional
	NACUUID string `json:"nacuuid,omitempty"`
	// name of the NonAdminBackupStorageLocation.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the NonAdminBackupStorageLocation.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// NonAdminBackupStorageLocationRequestStatus shows the admin what is asked,
// in OADP NAC's shape (phase, nonAdminBackupStorageLocation) plus
// approvedSpec.
type NonAdminBackupStorageLocationRequestStatus struct {
	// phase: Pending, Approved or Rejected, following spec.approvalDecision.
	// +optional
	Phase NonAdminBSLRequestPhase `json:"phase,omitempty"`
	// nonAdminBackupStorageLocation names the location and its requested spec.
	// +optional
	SourceNonAdminBSL *SourceNonAdminBSL `json:"nonAdminBackupStorageLocation,omitempty"`
	// approvedSpec is the spec an admin approved (the requestedSpec shown
	// when approvalDecision became approve; every spec, when approval is not
	// required). A later change of what it covers — provider, objectStorage
	// (bucket, prefix, caCert), config (endpoint, region, ...), credential
	// name and key, accessMode — needs a new approval; rotating the
	// credential Secret's content does not (nacflow's addition).
	// +optional
	ApprovedSpec *velerov1.BackupStorageLocationSpec `json:"approvedSpec,omitempty"`
}

// Requested returns status.nonAdminBackupStorageLocation.requestedSpec, nil
// when none was recorded.
func (s *NonAdminBackupStorageLocationRequestStatus) Requested() *velerov1.BackupStorageLocationSpec {
	if s.SourceNonAdminBSL == nil {
		return nil
	}
	return s.SourceNonAdminBSL.RequestedSpec
}

// NonAdminBackupStorageLocationRequest asks a cluster admin to approve a
// tenant's NonAdminBackupStorageLocation (OADP's approval flow). It lives in
// the OADP namespace; only admins can change it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nabslrequest,categories=nac
// +kubebuilder:printcolumn:name="Request-Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Request-Namespace",type=string,JSONPath=`.status.nonAdminBackupStorageLocation.namespace`
// +kubebuilder:printcolumn:name="Request-Name",type=string,JSONPath=`.status.nonAdminBackupStorageLocation.name`
// +kubebuilder:printcolumn:name="Decision",type=string,JSONPath=`.spec.approvalDecision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NonAdminBackupStorageLocationRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NonAdminBackupStorageLocationRequestSpec `json:"spec,omitempty"`
	// status is written by the controller alone, and as a whole: the API
	// server tracks it as one field of metadata.managedFields.
	// +optional
	// +structType=atomic
	Status NonAdminBackupStorageLocationRequestStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NonAdminBackupStorageLocationRequestList is a list of requests.
type NonAdminBackupStorageLocationRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NonAdminBackupStorageLocationRequest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NonAdminBackupStorageLocation{}, &NonAdminBackupStorageLocationList{},
		&NonAdminBackupStorageLocationRequest{}, &NonAdminBackupStorageLocationRequestList{})
	registerKind(Kind{
		Kind: "NonAdminBackupStorageLocation", Resource: "nonadminbackupstoragelocations", Short: "nabsl",
		ExclusionOrder: 3, Command: "bsl", Requires: []string{"NonAdminBackupStorageLocationRequest"},
		Finalizer: NonAdminBackupStorageLocationFinalizer, Blueprint: "nonadminbackupstoragelocation",
		Actions: []string{ActionCreate, ActionFinalize}, FirstAction: ActionCreate,
		New: func() Object { return &NonAdminBackupStorageLocation{} }, NewList: func() client.ObjectList { return &NonAdminBackupStorageLocationList{} },
		GarbageCollected: func() []client.ObjectList {
			return []client.ObjectList{&velerov1.BackupStorageLocationList{}, &corev1.SecretList{}, &NonAdminBackupStorageLocationRequestList{}}
		},
		NACUUIDIsName: true,
	})
}
