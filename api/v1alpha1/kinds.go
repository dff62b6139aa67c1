package v1alpha1

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind describes one NAC kind, once: the names users and the API server
// know it by, its finalizer, its built-in blueprint and the actions the
// controller runs from it, how to make an empty object and list of it, and
// what garbage collection removes once an object of it is gone. The kind
// registry (Kinds) drives the controllers, the engine's safety rule, the
// cache transform, garbage collection, metrics, the CLI's command groups,
// the Velero queues' turns, the kinds every tenant backup excludes, which
// controllers run with the CRDs installed (capabilities) and the generated
// lists of the kinds (the Blueprint CRD's spec.kind enum, hack/kindgen):
// a fact about a kind that another package needs is a field here, rather
// than a list of the kinds or a switch on their types there;
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
	// VeleroQueue is the Velero queue an operation of the kind takes a turn
	// in before its Velero object is made (phases' WaitForTurn: a
	// namespace's backups, or its restores, go in fairly); "" for a kind
	// whose operations take no turn. Its value is also the noun of the
	// turn's messages ("backups", "restores").
	VeleroQueue VeleroQueue
	// ExclusionOrder is the 1-based place of the kind's resource among
	// ExcludedResources, the NAC kinds every Velero Backup and Restore made
	// for a tenant excludes, so that restoring one never replays a request;
	// 0 for a kind not excluded. The places keep OADP NAC's order
	// (nonadminbackups, nonadminrestores, nonadminbackupstoragelocations),
	// which a Velero Backup's spec shows; OADP NAC excludes neither
	// NonAdminSchedules nor NonAdminDownloadRequests, and nor does nacflow.
	ExclusionOrder int
	// Command is the name of the kind's command group in kubectl nac (and
	// under OADP's `kubectl nac nonadmin` words), e.g. backup: the kind
	// gets a group, built by the CLI's builder for it, when it is not "";
	// a NonAdminDownloadRequest has none (the commands that download make
	// and read it).
	Command string
	// Requires are the API kinds of oadp.openshift.io/v1alpha1 besides the
	// kind's own whose CRDs its controller also needs served (a location
	// waiting for approval makes a NonAdminBackupStorageLocationRequest):
	// without them the controller does not run (capabilities.Runs).
	Requires []string
}

// VeleroQueue names one of Velero's queues: Velero runs backups one at a
// time and restores one at a time, each queue in creation order.
type VeleroQueue string

// Velero's queues (Kind.VeleroQueue).
const (
	// VeleroBackups is the queue of Velero Backups.
	VeleroBackups VeleroQueue = "backups"
	// VeleroRestores is the queue of Velero Restores.
	VeleroRestores VeleroQueue = "restores"
)

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

// ExcludedResources returns the names, "<resource>.oadp.openshift.io", of
// the NAC kinds every Velero Backup and Restore made for a tenant excludes
// (the kinds with a Kind.ExclusionOrder), in that order: a new slice each
// call.
func ExcludedResources() []string {
	var excluded []Kind
	for _, k := range kinds {
		if k.ExclusionOrder > 0 {
			excluded = append(excluded, k)
		}
	}
	slices.SortFunc(excluded, func(a, b Kind) int { return cmp.Compare(a.ExclusionOrder, b.ExclusionOrder) })
	out := make([]string, len(excluded))
	for i, k := range excluded {
		out[i] = k.Resource + "." + GroupVersion.Group
	}
	return out
}

// QueuedKindNames returns the names of the kinds whose operations take a
// turn in one of Velero's queues (Kind.VeleroQueue), in registry order.
func QueuedKindNames() []string {
	var out []string
	for _, k := range kinds {
		if k.VeleroQueue != "" {
			out = append(out, k.Kind)
		}
	}
	return out
}

// apiScheme holds this package's types alone (SchemeBuilder), built on
// first use: by then every types file's init has registered its types.
var apiScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	// Registering each type once cannot fail; a failure would leave the
	// scheme short, and APIKindOf would then know fewer kinds.
	_ = SchemeBuilder.AddToScheme(s)
	return s
})

// APIKindOf returns the API kind in oadp.openshift.io/v1alpha1 of obj, an
// object (or list) of any of this package's types: a NAC kind, Blueprint,
// NonAdminBackupStorageLocationRequest, TenantLocations; ok is false for
// any other type (Velero's, the built-ins). Unlike KindOf it covers the
// kinds that are not in the registry, as the capabilities' view of which
// CRDs are served must (a list's kind is its own, e.g. BlueprintList).
func APIKindOf(obj runtime.Object) (kind string, ok bool) {
	gvks, _, err := apiScheme().ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return "", false
	}
	return gvks[0].Kind, true
}
