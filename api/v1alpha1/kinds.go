package v1alpha1

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind describes one NAC kind, once: the names users and the API server
// know it by, its finalizer, its built-in blueprint and the actions the
// controller runs from it, how to make an empty object and list of it, and
// what garbage collection removes once an object of it is gone. The kind
// registry (Kinds) drives the controllers, the engine's safety rule, the
// cache transform, garbage collection, metrics, the CLI and the generated
// lists of the kinds (the Blueprint CRD's spec.kind enum, hack/kindgen);
// adding a kind is its types file (implementing Object and registering its
// entry with registerKind), its blueprint and its kind file in controllers.
//
// +kubebuilder:object:generate=false
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
	// Actions are the blueprint actions the kind's controller runs, sorted:
	// a Blueprint for the kind may define only these.
	Actions []string
	// FirstAction is the action a new object of the kind runs (what `nac
	// admin plan` shows for a manifest).
	FirstAction string
	// New returns an empty object of the kind.
	New func() Object
	// NewList returns an empty list of the kind.
	NewList func() client.ObjectList
	// GarbageCollected returns empty lists of the kinds of object nacflow
	// makes for an object of this kind in the OADP namespace (labelled with
	// its origin keys) that garbage collection deletes once that object is
	// gone (OADP NAC's garbage collector). A NonAdminDownloadRequest's
	// Velero DownloadRequest is not among them: Velero deletes it itself
	// once it has expired.
	GarbageCollected func() []client.ObjectList
	// NACUUIDIsName is true for the kinds whose NACUUID is also the name of
	// the objects their operation makes in the OADP namespace,
	// "<namespace>-<name>-<uuid>" (OADP NAC's GenerateNacObjectUUID, which
	// OADP's CLI relies on for locations: `kubectl oadp nabsl-request get`
	// fetches the request named by status.veleroBackupStorageLocation.nacuuid).
	// For the others the NACUUID is the bare UUID and the objects are named
	// NACObjectName(namespace, name, nacuuid). See DerivedNACUUID.
	NACUUIDIsName bool
}

// The blueprint actions the controllers run (Kind.Actions), each named once.
const (
	// ActionBackup makes the Velero Backup of a new NonAdminBackup.
	ActionBackup = "backup"
	// ActionDelete deletes a backup and its data (spec.deleteBackup: true).
	ActionDelete = "delete"
	// ActionForceDelete deletes a backup and its data, and the
	// NonAdminBackup even when Velero cannot (spec.forceDeleteBackup: true).
	ActionForceDelete = "forceDelete"
	// ActionFinalize removes the Velero objects of a deleted NAC object
	// (kubectl delete), keeping a backup's data.
	ActionFinalize = "finalize"
	// ActionAdopt links a NonAdminBackup made by backup sync (or a
	// schedule's run) to its existing Velero Backup.
	ActionAdopt = "adopt"
	// ActionRestore makes the Velero Restore of a new NonAdminRestore.
	ActionRestore = "restore"
	// ActionPreview tells what a NonAdminRestore with spec.preview would do,
	// without restoring.
	ActionPreview = "preview"
	// ActionCreate makes the Velero object of a new
	// NonAdminBackupStorageLocation (its BackupStorageLocation) or
	// NonAdminSchedule (its Schedule).
	ActionCreate = "create"
	// ActionDownload gets the pre-signed URL of a new
	// NonAdminDownloadRequest.
	ActionDownload = "download"
)

// kinds is the registry, sorted by kind name: each kind's types file adds
// its entry at init (registerKind), as it registers its types with
// SchemeBuilder.
var kinds []Kind

// kindByType maps the Go types of the registry's objects and lists to their
// kind's registry entry.
var kindByType = map[reflect.Type]*Kind{}

// registerKind adds k to the registry; a types file calls it from init, so
// that a kind's registry entry lives beside its types. A second entry of
// the same kind or type replaces nothing: TestKindRegistry finds names used
// twice.
func registerKind(k Kind) {
	i, _ := slices.BinarySearchFunc(kinds, k.Kind, func(e Kind, name string) int { return strings.Compare(e.Kind, name) })
	kinds = slices.Insert(kinds, i, k)
	clear(kindByType)
	for i := range kinds {
		kindByType[reflect.TypeOf(kinds[i].New())] = &kinds[i]
		kindByType[reflect.TypeOf(kinds[i].NewList())] = &kinds[i]
	}
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

// KindNamed returns the NAC kind whose API kind is exactly kind (as a
// Blueprint's spec.kind names it); ok is false for any other name.
func KindNamed(kind string) (k Kind, ok bool) {
	for _, k := range kinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
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

// KindOf returns the NAC kind of obj by its Go type — an object or a list
// of the kind, as the registry's New and NewList make them; ok is false for
// an object of another kind (its TypeMeta is not consulted: objects read
// through a typed client often have none).
func KindOf(obj any) (k Kind, ok bool) {
	e, ok := kindByType[reflect.TypeOf(obj)]
	if !ok {
		return Kind{}, false
	}
	return *e, true
}

// KindFor returns the registry entry of the NAC kind T (a pointer to one of
// the API types); the error names a type the registry lacks (a build
// defect: its types file without its registry entry).
func KindFor[T Object]() (Kind, error) {
	var zero T
	if k, ok := KindOf(zero); ok {
		return k, nil
	}
	return Kind{}, fmt.Errorf("%T is not in the NAC kind registry (v1alpha1.Kinds)", zero)
}
