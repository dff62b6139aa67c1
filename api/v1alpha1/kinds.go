package v1alpha1

import (
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind describes one NAC kind, once: the names users and the API server
// know it by, its finalizer, its built-in blueprint and how to make an empty
// object and list of it. The kind registry (Kinds) drives the controllers,
// the engine's safety rule, the cache transform, garbage collection and the
// CLI; adding a kind is its types file, its blueprint and one entry here.
type Kind struct {
	// Kind is the API kind, e.g. NonAdminBackup.
	Kind string
	// Resource is the plural resource name, e.g. nonadminbackups.
	Resource string
	// Short is the CRD's short name, e.g. nab; it is also the infix of the
	// kind's origin keys (openshift.io/oadp-nab-origin-*).
	Short string
	// Finalizer is the finalizer nacflow keeps on objects of the kind.
	Finalizer string
	// Blueprint is the name of the kind's built-in blueprint (and of an
	// admin's override of it).
	Blueprint string
	// New returns an empty object of the kind.
	New func() Object
	// NewList returns an empty list of the kind.
	NewList func() client.ObjectList
}

// kinds is the registry, in the order OADP NAC introduced the kinds.
var kinds = []Kind{
	{Kind: "NonAdminBackup", Resource: "nonadminbackups", Short: "nab", Finalizer: NonAdminBackupFinalizer, Blueprint: "nonadminbackup",
		New: func() Object { return &NonAdminBackup{} }, NewList: func() client.ObjectList { return &NonAdminBackupList{} }},
	{Kind: "NonAdminRestore", Resource: "nonadminrestores", Short: "nar", Finalizer: NonAdminRestoreFinalizer, Blueprint: "nonadminrestore",
		New: func() Object { return &NonAdminRestore{} }, NewList: func() client.ObjectList { return &NonAdminRestoreList{} }},
	{Kind: "NonAdminBackupStorageLocation", Resource: "nonadminbackupstoragelocations", Short: "nabsl", Finalizer: NonAdminBackupStorageLocationFinalizer, Blueprint: "nonadminbackupstoragelocation",
		New: func() Object { return &NonAdminBackupStorageLocation{} }, NewList: func() client.ObjectList { return &NonAdminBackupStorageLocationList{} }},
	{Kind: "NonAdminDownloadRequest", Resource: "nonadmindownloadrequests", Short: "nadr", Finalizer: NonAdminDownloadRequestFinalizer, Blueprint: "nonadmindownloadrequest",
		New: func() Object { return &NonAdminDownloadRequest{} }, NewList: func() client.ObjectList { return &NonAdminDownloadRequestList{} }},
	{Kind: "NonAdminSchedule", Resource: "nonadminschedules", Short: "nas", Finalizer: NonAdminScheduleFinalizer, Blueprint: "nonadminschedule",
		New: func() Object { return &NonAdminSchedule{} }, NewList: func() client.ObjectList { return &NonAdminScheduleList{} }},
}

// Kinds returns every NAC kind, a new slice each call.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// KindNames returns the kinds' names joined by ", ", for messages.
func KindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Kind
	}
	return strings.Join(names, ", ")
}

// LookupKind returns the NAC kind named name: its kind, resource (plural or
// singular) or short name, in any case; ok is false for any other name.
func LookupKind(name string) (k Kind, ok bool) {
	n := strings.ToLower(name)
	for _, k := range kinds {
		if n == strings.ToLower(k.Kind) || n == k.Resource || n == strings.TrimSuffix(k.Resource, "s") || n == k.Short {
			return k, true
		}
	}
	return Kind{}, false
}

// KindOf returns the NAC kind of obj by its Go type; ok is false for an
// object of another kind (its TypeMeta is not consulted: objects read
// through a typed client often have none).
func KindOf(obj any) (k Kind, ok bool) {
	var name string
	switch obj.(type) {
	case *NonAdminBackup, *NonAdminBackupList:
		name = "NonAdminBackup"
	case *NonAdminRestore, *NonAdminRestoreList:
		name = "NonAdminRestore"
	case *NonAdminBackupStorageLocation, *NonAdminBackupStorageLocationList:
		name = "NonAdminBackupStorageLocation"
	case *NonAdminDownloadRequest, *NonAdminDownloadRequestList:
		name = "NonAdminDownloadRequest"
	case *NonAdminSchedule, *NonAdminScheduleList:
		name = "NonAdminSchedule"
	default:
		return Kind{}, false
	}
	return LookupKind(name)
}
