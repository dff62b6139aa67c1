package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Origin holds the keys that tie an object nacflow makes in the OADP
// namespace to the NAC object it was made for (OADP NAC): the label holding
// the NAC object's NACUUID, and the annotations holding its name and
// namespace, openshift.io/oadp-<nab|nar|nabsl|nadr|nas>-origin-*.
//
// +kubebuilder:object:generate=false
type Origin struct {
	// Label is the key of the NACUUID label.
	Label string
	// NameAnnotation and NamespaceAnnotation are the keys of the origin
	// name and namespace annotations.
	NameAnnotation, NamespaceAnnotation string
}

// Object is what every NAC kind is to the engine, the controllers and the
// CLI: a namespaced object with a phase plan, status conditions and phase
// (OADP NAC's common status shape), an observed generation and the origin
// keys of what it makes in the OADP namespace (in
// the spirit of cluster-api's conditions.Setter). Every NAC kind implements
// it; nothing outside this package needs to know which kind it holds to use
// these.
//
// +kubebuilder:object:generate=false
type Object interface {
	metav1.Object
	runtime.Object
	// GetPlan returns the plan status, nil before the first action started.
	GetPlan() *PlanStatus
	// SetPlan replaces the plan status.
	SetPlan(*PlanStatus)
	// GetConditions returns the status conditions.
	GetConditions() []metav1.Condition
	// SetConditions replaces the status conditions.
	SetConditions([]metav1.Condition)
	// GetPhase returns status.phase, OADP NAC's one-word summary of the
	// object ("" before the first reconcile).
	GetPhase() NonAdminPhase
	// SetPhase replaces status.phase.
	SetPhase(NonAdminPhase)
	// SetObservedGeneration records the generation last reconciled
	// (status.observedGeneration).
	SetObservedGeneration(int64)
	// OriginKeys returns the keys tying the objects made for this kind in
	// the OADP namespace to an object of it. They depend on the kind alone:
	// it may be called on a nil pointer of the kind.
	OriginKeys() Origin
}

// OriginKeys implements Object: openshift.io/oadp-nab-origin-*.
func (*NonAdminBackup) OriginKeys() Origin {
	return Origin{NabOriginNACUUIDLabel, NabOriginNameAnnotation, NabOriginNamespaceAnnotation}
}

// OriginKeys implements Object: openshift.io/oadp-nar-origin-*.
func (*NonAdminRestore) OriginKeys() Origin {
	return Origin{NarOriginNACUUIDLabel, NarOriginNameAnnotation, NarOriginNamespaceAnnotation}
}

// OriginKeys implements Object: openshift.io/oadp-nabsl-origin-*.
func (*NonAdminBackupStorageLocation) OriginKeys() Origin {
	return Origin{NabslOriginNACUUIDLabel, NabslOriginNameAnnotation, NabslOriginNamespaceAnnotation}
}

// OriginKeys implements Object: openshift.io/oadp-nadr-origin-*.
func (*NonAdminDownloadRequest) OriginKeys() Origin {
	return Origin{NadrOriginNACUUIDLabel, NadrOriginNameAnnotation, NadrOriginNamespaceAnnotation}
}

// OriginKeys implements Object: openshift.io/oadp-nas-origin-*.
func (*NonAdminSchedule) OriginKeys() Origin {
	return Origin{NasOriginNACUUIDLabel, NasOriginNameAnnotation, NasOriginNamespaceAnnotation}
}

// SetObservedGeneration implements Object.
func (n *NonAdminBackup) SetObservedGeneration(g int64) { n.Status.ObservedGeneration = g }

// SetObservedGeneration implements Object.
func (n *NonAdminRestore) SetObservedGeneration(g int64) { n.Status.ObservedGeneration = g }

// SetObservedGeneration implements Object.
func (n *NonAdminBackupStorageLocation) SetObservedGeneration(g int64) {
	n.Status.ObservedGeneration = g
}

// SetObservedGeneration implements Object.
func (n *NonAdminDownloadRequest) SetObservedGeneration(g int64) { n.Status.ObservedGeneration = g }

// SetObservedGeneration implements Object.
func (n *NonAdminSchedule) SetObservedGeneration(g int64) { n.Status.ObservedGeneration = g }

// GetConditions implements Object.
func (n *NonAdminRestore) GetConditions() []metav1.Condition { return n.Status.Conditions }

// SetConditions implements Object.
func (n *NonAdminRestore) SetConditions(c []metav1.Condition) { n.Status.Conditions = c }

// GetConditions implements Object.
func (n *NonAdminBackupStorageLocation) GetConditions() []metav1.Condition {
	return n.Status.Conditions
}

// SetConditions implements Object.
func (n *NonAdminBackupStorageLocation) SetConditions(c []metav1.Condition) {
	n.Status.Conditions = c
}

// GetConditions implements Object.
func (n *NonAdminDownloadRequest) GetConditions() []metav1.Condition { return n.Status.Conditions }

// SetConditions implements Object.
func (n *NonAdminDownloadRequest) SetConditions(c []metav1.Condition) { n.Status.Conditions = c }

// GetConditions implements Object.
func (n *NonAdminBackup) GetConditions() []metav1.Condition { return n.Status.Conditions }

// SetConditions implements Object.
func (n *NonAdminBackup) SetConditions(c []metav1.Condition) { n.Status.Conditions = c }

// GetConditions implements Object.
func (n *NonAdminSchedule) GetConditions() []metav1.Condition { return n.Status.Conditions }

// SetConditions implements Object.
func (n *NonAdminSchedule) SetConditions(c []metav1.Condition) { n.Status.Conditions = c }

// GetPhase implements Object.
func (n *NonAdminBackup) GetPhase() NonAdminPhase { return n.Status.Phase }

// SetPhase implements Object.
func (n *NonAdminBackup) SetPhase(p NonAdminPhase) { n.Status.Phase = p }

// GetPhase implements Object.
func (n *NonAdminRestore) GetPhase() NonAdminPhase { return n.Status.Phase }

// SetPhase implements Object.
func (n *NonAdminRestore) SetPhase(p NonAdminPhase) { n.Status.Phase = p }

// GetPhase implements Object.
func (n *NonAdminBackupStorageLocation) GetPhase() NonAdminPhase { return n.Status.Phase }

// SetPhase implements Object.
func (n *NonAdminBackupStorageLocation) SetPhase(p NonAdminPhase) { n.Status.Phase = p }

// GetPhase implements Object.
func (n *NonAdminDownloadRequest) GetPhase() NonAdminPhase { return n.Status.Phase }

// SetPhase implements Object.
func (n *NonAdminDownloadRequest) SetPhase(p NonAdminPhase) { n.Status.Phase = p }

// GetPhase implements Object.
func (n *NonAdminSchedule) GetPhase() NonAdminPhase { return n.Status.Phase }

// SetPhase implements Object.
func (n *NonAdminSchedule) SetPhase(p NonAdminPhase) { n.Status.Phase = p }
