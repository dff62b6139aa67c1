// Package tenantlocations keeps the map the ValidatingAdmissionPolicy
// nacflow-pod-volume-backups (config/admission/pod_volume_backups.yaml)
// reads: which tenant namespace each Velero BackupStorageLocation nacflow
// made for a NonAdminBackupStorageLocation belongs to. It is one
// TenantLocations object in the OADP namespace, named
// v1alpha1.TenantLocationsName, with one entry per location:
// spec.locations[<Velero BSL name>] = <tenant namespace>.
//
// Why: Velero's backup sync copies a backup's PodVolumeBackups from the
// location's bucket into the OADP namespace as they are there (Velero 1.18,
// pkg/controller/backup_sync_controller.go; its CRD has no status
// subresource, so a planted order keeps phase ""), and a node agent takes
// such an order for its node, whatever Pod it names. A tenant's bucket is
// tenant input: the policy lets a PodVolumeBackup on a tenant's location
// name Pods of that tenant's namespace only, so no order from a bucket
// copies another namespace's volume. An entry is written before the location
// exists (Map.Record, from CreateVeleroBSL), so there is no moment when Velero
// may sync a tenant's location that the map does not name; a location whose
// name has the shape of a NAC object name (ending in a NACUUID) and no entry
// is refused every order.
package tenantlocations

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// newMap returns the empty map of oadpNamespace, labelled as nacflow's.
func newMap(oadpNamespace string) *v1alpha1.TenantLocations {
	return &v1alpha1.TenantLocations{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.TenantLocationsName, Namespace: oadpNamespace,
			Labels: map[string]string{v1alpha1.ManagedByLabel: "nacflow"},
		},
	}
}

// Map is the tenant-location map of one OADP namespace. It implements
// phases.LocationRecorder.
type Map struct {
	// Client writes the TenantLocations object (nacflow's own client: the map is no
	// operation's object).
	Client client.Client
	// Namespace is the OADP namespace.
	Namespace string
	// Reader, when set, is asked first whether the map exists (the
	// manager's API reader: the map is not cached), so that a start where
	// it does writes nothing; nil: Ensure creates and takes AlreadyExists.
	Reader client.Reader
}

// Ensure creates the empty map when it does not exist (the policy refuses
// every PodVolumeBackup of a namespace without it) and leaves an existing
// one as it is, reading it first through Reader when set: a restart then
// makes one GET, no write. Errors: API errors other than AlreadyExists
// (and NotFound or Forbidden from the read, after which it creates).
func (m *Map) Ensure(ctx context.Context) error {
	if m.Reader != nil {
		err := m.Reader.Get(ctx, client.ObjectKeyFromObject(newMap(m.Namespace)), &v1alpha1.TenantLocations{})
		if err == nil {
			return nil
		}
		// Not found, or a role without get (an older install's): create.
		if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			return fmt.Errorf("reading TenantLocations %s/%s: %w", m.Namespace, v1alpha1.TenantLocationsName, err)
		}
	}
	err := m.Client.Create(ctx, newMap(m.Namespace))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating TenantLocations %s/%s: %w", m.Namespace, v1alpha1.TenantLocationsName, err)
	}
	return nil
}

// Start implements manager.Runnable: Ensure, tried again every retry
// period (5 s) until it succeeds or ctx ends, the errors logged. It
// returns nil.
func (m *Map) Start(ctx context.Context) error {
	_ = wait.PollUntilContextCancel(ctx, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := m.Ensure(ctx); err != nil {
			log.FromContext(ctx).Error(err, "the tenant-location map could not be made; trying again")
			return false, nil
		}
		return true, nil
	})
	return nil
}

// Record sets the entry location → namespace, creating the map when it is
// missing. It is a JSON merge patch of the one key, so concurrent records
// of other locations never conflict. Call it before the location is
// created. Errors: API errors.
func (m *Map) Record(ctx context.Context, location, namespace string) error {
	return patchEntry(ctx, m.Client, m.Namespace, location, &namespace)
}

// Forget removes location's entry (a merge patch of the key to null); a
// missing map or entry is no error. Call it once the location is deleted:
// an order on a location without an entry and with a NAC name is refused,
// so forgetting early refuses, never allows. Errors: API errors.
func (m *Map) Forget(ctx context.Context, location string) error {
	err := patchEntry(ctx, m.Client, m.Namespace, location, nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// patchEntry merge-patches spec.locations[location] to *namespace (nil:
// removes it).
// When the map is missing and namespace is not nil it creates the map with
// the entry.
func patchEntry(ctx context.Context, c client.Client, oadpNamespace, location string, namespace *string) error {
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"locations": map[string]*string{location: namespace}}})
	if err != nil {
		return err
	}
	cm := newMap(oadpNamespace)
	err = c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, body))
	if apierrors.IsNotFound(err) && namespace != nil {
		cm = newMap(oadpNamespace)
		cm.Spec.Locations = map[string]string{location: *namespace}
		if err = c.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
			// Made meanwhile by another writer: patch it.
			err = c.Patch(ctx, newMap(oadpNamespace), client.RawPatch(types.MergePatchType, body))
		}
	}
	if err != nil {
		return fmt.Errorf("recording the namespace of Velero BackupStorageLocation %s in TenantLocations %s/%s: %w", location, oadpNamespace, v1alpha1.TenantLocationsName, err)
	}
	return nil
}
