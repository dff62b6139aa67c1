// Package v1alpha1 holds the nacflow API: the OADP Non-Admin Controller kinds
// (NonAdminBackup, ...) in group oadp.openshift.io, the Blueprint kind, and the
// plan status shared by every NAC kind.
//
// +kubebuilder:object:generate=true
// +groupName=oadp.openshift.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every nacflow kind.
	GroupVersion = schema.GroupVersion{Group: "oadp.openshift.io", Version: "v1alpha1"}

	// SchemeBuilder registers the nacflow kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the nacflow kinds to a scheme; it returns an error only
	// when a kind is registered twice with different types.
	AddToScheme = SchemeBuilder.AddToScheme
)
