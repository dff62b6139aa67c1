package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantLocationsName is the name of the one TenantLocations object, in the
// OADP namespace.
const TenantLocationsName = "nacflow"

// TenantLocationsSpec maps each Velero BackupStorageLocation nacflow made
// for a NonAdminBackupStorageLocation to the tenant namespace it belongs to.
type TenantLocationsSpec struct {
	// locations maps a Velero BackupStorageLocation's name (in the OADP
	// namespace) to its tenant namespace.
	// +optional
	// +kubebuilder:validation:MaxProperties=20000
	Locations map[string]string `json:"locations,omitempty"`
}

// TenantLocations is nacflow's record of which tenant namespace each of its
// Velero BackupStorageLocations belongs to, written by nacflow alone before
// the location exists (internal/velero/tenantlocations). The
// ValidatingAdmissionPolicy nacflow-pod-volume-backups reads it as its
// parameter: a PodVolumeBackup that Velero syncs from a tenant's bucket may
// name Pods of that tenant's namespace only. One object, named "nacflow", in
// the OADP namespace; neither tenants nor admins write it. (A CRD rather
// than a ConfigMap: the API server stops the informer of a built-in
// parameter kind for good once no binding names it for a moment,
// kubernetes/kubernetes#130887, and a policy installed again would read a
// frozen map.)
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TenantLocations struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TenantLocationsSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// TenantLocationsList is a list of TenantLocations.
type TenantLocationsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantLocations `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantLocations{}, &TenantLocationsList{})
}
