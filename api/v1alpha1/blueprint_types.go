package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BlueprintSpec says which NAC operations a Blueprint customises and how
// (Kanister's Blueprint, keyed by NAC kind).
type BlueprintSpec struct {
	// kind is the NAC kind the blueprint serves, e.g. NonAdminBackup.
	// +required
	// +kubebuilder:validation:Enum=NonAdminBackup;NonAdminBackupStorageLocation;NonAdminDownloadRequest;NonAdminRestore;NonAdminSchedule
	Kind string `json:"kind"` // its Enum marker is the kind registry's, written by make generate (hack/kindgen)

	// namespaceSelector makes this a per-tenant blueprint: it serves the
	// tenants whose Namespace labels match. Unset: the blueprint serves every
	// tenant only when it is named like the built-in it overrides
	// (nonadminbackup, ...).
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// priority orders per-tenant blueprints that match the same namespace:
	// the highest wins, then the name (alphabetically first). Default 0.
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// actions maps an action name (backup, delete, finalize, ...) to its phases.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=16
	Actions map[string]BlueprintAction `json:"actions"`
}

// Condition type and reasons of a Blueprint.
const (
	// ConditionValid: the blueprint passed validation and may be used.
	ConditionValid = "Valid"
	// ReasonValidationSucceeded: Valid=True.
	ReasonValidationSucceeded = "ValidationSucceeded"
	// ReasonValidationFailed: Valid=False; the message lists every error.
	ReasonValidationFailed = "ValidationFailed"
)

// LastValidBlueprint is the last generation of a Blueprint that validated:
// operations keep using it while a later edit is invalid.
type LastValidBlueprint struct {
	// generation is that metadata.generation.
	Generation int64 `json:"generation"`
	// actions are that generation's actions.
	Actions map[string]BlueprintAction `json:"actions"`
}

// BlueprintStatus is the observed state of a Blueprint.
type BlueprintStatus struct {
	// observedGeneration is the metadata.generation last validated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Valid.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// errors lists every validation error of the observed generation.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Errors []string `json:"errors,omitempty"`

	// lastValid is the last generation that validated.
	// +optional
	LastValid *LastValidBlueprint `json:"lastValid,omitempty"`
}

// Blueprint is an admin's definition of what a NAC operation does: for each
// action, an ordered list of templated phases and a deferPhase. Blueprints
// live in the OADP namespace; one named like a built-in overrides it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bp,categories=nac
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Blueprint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec BlueprintSpec `json:"spec"`
	// status is written by the controller alone, and as a whole: the API
	// server tracks it as one field of metadata.managedFields.
	// +optional
	// +structType=atomic
	Status BlueprintStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BlueprintList is a list of Blueprints.
type BlueprintList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Blueprint `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Blueprint{}, &BlueprintList{})
}
