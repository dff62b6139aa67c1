package phases

import (
	"context"
	"fmt"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// DeleteObjectsArgs are the args of DeleteObjects.
type DeleteObjectsArgs struct {
	// Kinds to delete: Backup, BackupStorageLocation, DeleteBackupRequest,
	// DownloadRequest, Restore (Velero kinds), Secret, ConfigMap,
	// NonAdminBackupStorageLocationRequest.
	Kinds []string `json:"kinds" doc:"Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, NonAdminBackupStorageLocationRequest, Restore, Schedule, Secret, ConfigMap"`
}

// deletableKinds maps the kinds DeleteObjects accepts to their Go types.
var deletableKinds = map[string]func() client.Object{
	"Backup":                func() client.Object { return &velerov1.Backup{} },
	"DeleteBackupRequest":   func() client.Object { return &velerov1.DeleteBackupRequest{} },
	"Restore":               func() client.Object { return &velerov1.Restore{} },
	"Schedule":              func() client.Object { return &velerov1.Schedule{} },
	"DownloadRequest":       func() client.Object { return &velerov1.DownloadRequest{} },
	"BackupStorageLocation": func() client.Object { return &velerov1.BackupStorageLocation{} },
	"Secret":                func() client.Object { return &corev1.Secret{} },
	"ConfigMap":             func() client.Object { return &corev1.ConfigMap{} },
	"NonAdminBackupStorageLocationRequest": func() client.Object {
		return &v1alpha1.NonAdminBackupStorageLocationRequest{}
	},
}

// DeleteObjects deletes the objects of the given kinds that this operation
// created: only in the OADP namespace and only those labelled with the
// operation's NACUUID — derived from the NAC object's UID, never read from
// its status — and not made for another namespace (the engine's safety
// rule, RuleWriteOwn). Deleting a Velero Backup object this way keeps its
// data in object storage.
//
// Deleted Velero BackupStorageLocations leave the tenant-location map
// (Clients.Locations).
//
// Errors: an unknown kind is terminal; API errors are retryable.
type DeleteObjects struct {
	tools tools
}

// Run implements phaseFunc.
func (f *DeleteObjects) Run(ctx context.Context, op *engine.Operation, _ engine.Object, a *DeleteObjectsArgs) (engine.Result, error) {
	if len(a.Kinds) == 0 {
		return engine.Result{}, engine.Terminalf("DeleteObjects: args.kinds is empty")
	}
	for _, k := range a.Kinds {
		if deletableKinds[k] == nil {
			return engine.Result{}, engine.Terminalf("DeleteObjects: args.kinds: %q is not supported (supported: Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, NonAdminBackupStorageLocationRequest, Restore, Schedule, Secret, ConfigMap)", k)
		}
	}
	for _, k := range a.Kinds {
		var locations velerov1.BackupStorageLocationList
		if k == "BackupStorageLocation" {
			if err := op.Client.List(ctx, &locations, client.InNamespace(op.OADPNamespace), client.MatchingLabels{op.OriginLabel(): op.UUID}); err != nil {
				return engine.Result{}, fmt.Errorf("listing Velero BackupStorageLocation objects of %s: %w", op.UUID, err)
			}
		}
		err := op.Client.DeleteAllOf(ctx, deletableKinds[k](), client.InNamespace(op.OADPNamespace),
			client.MatchingLabels{op.OriginLabel(): op.UUID})
		if client.IgnoreNotFound(err) != nil {
			return engine.Result{}, fmt.Errorf("deleting Velero %s objects of %s: %w", k, op.UUID, err)
		}
		// A gone location's entry in the tenant-location map is dropped; were
		// it dropped before the location went, its orders would be refused,
		// never allowed (package tenantlocations).
		for _, l := range locations.Items {
			if f.tools.locations == nil {
				break
			}
			if err := f.tools.locations.Forget(ctx, l.Name); err != nil {
				return engine.Result{}, err
			}
		}
	}
	return engine.Done(fmt.Sprintf("Deleted this operation's Velero %s objects from %s", strings.Join(a.Kinds, " and "), op.OADPNamespace), nil), nil
}

// Doc implements engine.Documented.
func (*DeleteObjects) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Deletes the objects of args.kinds that this operation created: only in the OADP namespace, only with its NACUUID label and not made for another namespace (origin-namespace annotation). Deleting a Velero Backup object keeps its data.",
		Errors:  "an unknown kind is terminal; " + apiRetried,
	}
}
