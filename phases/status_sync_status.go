package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// SyncStatusArgs are the args of SyncStatus.
type SyncStatusArgs struct {
	// Kind of the Velero object to mirror: Backup, BackupStorageLocation,
	// DeleteBackupRequest, DownloadRequest or Restore.
	Kind string `json:"kind" doc:"Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore or Schedule"`
	// Name of the Velero object in the OADP namespace. Empty: nothing to
	// mirror (e.g. a deferPhase after validation refused the request).
	Name string `json:"name" doc:"the Velero object in the OADP namespace; empty: nothing to mirror"`
}

// SyncStatus mirrors a Velero object's spec and status into the NAC object's
// status (for a Backup: status.veleroBackup and status.queueInfo; for a
// DeleteBackupRequest: status.veleroDeleteBackupRequest; for a Restore, of a
// NonAdminRestore: status.veleroRestore and status.queueInfo; for a
// DownloadRequest, of a NonAdminDownloadRequest: status.velero.status and,
// once the URL is there, condition Processed=True, OADP NAC's). A missing
// or unnamed object is not an error: there is nothing to mirror.
//
// Output: phase (the Velero object's phase, when there is one). Errors: an
// unknown kind is terminal; so is a named object that is not the
// operation's own (the safety rule: it carries neither this operation's
// NACUUID label nor, for a NonAdminBackup, the one of the Backup it is linked
// to); API errors are retryable.
type SyncStatus struct{}

// Run implements phaseFunc.
func (f *SyncStatus) Run(ctx context.Context, op *engine.Operation, _ engine.Object, a *SyncStatusArgs) (engine.Result, error) {
	switch a.Kind {
	case "Backup":
		nab, err := as[*v1alpha1.NonAdminBackup]("SyncStatus", op)
		if err != nil {
			return engine.Result{}, err
		}
		return mirrorOwned(ctx, op, "Backup", a.Name, &velerov1.Backup{}, linkedUUIDs(op), func(b *velerov1.Backup) (string, string) {
			nab.MirrorBackup(b)
			return string(b.Status.Phase), string(b.Status.Phase)
		})
	case "DeleteBackupRequest":
		nab, err := as[*v1alpha1.NonAdminBackup]("SyncStatus", op)
		if err != nil {
			return engine.Result{}, err
		}
		return mirrorOwned(ctx, op, "DeleteBackupRequest", a.Name, &velerov1.DeleteBackupRequest{}, nil, func(dbr *velerov1.DeleteBackupRequest) (string, string) {
			if nab.Status.VeleroDeleteBackupRequest == nil {
				nab.Status.VeleroDeleteBackupRequest = &v1alpha1.VeleroDeleteBackupRequest{NACUUID: op.UUID, Name: dbr.Name, Namespace: dbr.Namespace}
			}
			nab.Status.VeleroDeleteBackupRequest.Status = dbr.Status.DeepCopy()
			return string(dbr.Status.Phase), phaseOr(string(dbr.Status.Phase))
		})
	case "Restore":
		nar, err := as[*v1alpha1.NonAdminRestore]("SyncStatus", op)
		if err != nil {
			return engine.Result{}, err
		}
		return mirrorOwned(ctx, op, "Restore", a.Name, &velerov1.Restore{}, nil, func(r *velerov1.Restore) (string, string) {
			nar.MirrorRestore(r)
			return string(r.Status.Phase), phaseOr(string(r.Status.Phase))
		})
	case "BackupStorageLocation":
		nabsl, err := as[*v1alpha1.NonAdminBackupStorageLocation]("SyncStatus", op)
		if err != nil {
			return engine.Result{}, err
		}
		return mirrorOwned(ctx, op, "BackupStorageLocation", a.Name, &velerov1.BackupStorageLocation{}, nil, func(b *velerov1.BackupStorageLocation) (string, string) {
			nabsl.MirrorBSL(b)
			return string(b.Status.Phase), phaseOr(string(b.Status.Phase))
		})
	case "DownloadRequest":
		nadr, err := as[*v1alpha1.NonAdminDownloadRequest]("SyncStatus", op)
		if err != nil {
			return engine.Result{}, err
		}
		return mirrorOwned(ctx, op, "DownloadRequest", a.Name, &velerov1.DownloadRequest{}, nil, func(dr *velerov1.DownloadRequest) (string, string) {
			nadr.MirrorDownloadRequest(dr)
			return string(dr.Status.Phase), phaseOr(string(dr.Status.Phase))
		})
	case "Schedule":
		nas, ok := op.Object.(*v1alpha1.NonAdminSchedule)
		if !ok {
			return engine.Result{}, engine.Terminalf("SyncStatus: kind Schedule serves NonAdminSchedule, not %T", op.Object)
		}
		return mirrorOwned(ctx, op, "Schedule", a.Name, &velerov1.Schedule{}, nil, func(s *velerov1.Schedule) (string, string) {
			if nas.Status.VeleroSchedule == nil {
				nas.Status.VeleroSchedule = &v1alpha1.VeleroSchedule{}
			}
			vs := nas.Status.VeleroSchedule
			vs.NACUUID, vs.Name, vs.Namespace = op.UUID, s.Name, s.Namespace
			vs.Status = s.Status.DeepCopy()
			return string(s.Status.Phase), phaseOr(string(s.Status.Phase))
		})
	default:
		return engine.Result{}, engine.Terminalf("SyncStatus: args.kind %q is not supported (supported: Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore, Schedule)", a.Kind)
	}
}

// mirrorOwned reads the Velero object kind called name from the OADP
// namespace (through the cache) into obj, checks that it is op's own (or
// carries one of also, op.CheckOwned), and hands it to apply, which mirrors
// it into the NAC object's status and returns its phase for the output and
// for the message. No name, or no such object, is nothing to mirror (done).
// Errors: the API server's (retryable) and a foreign object (terminal).
func mirrorOwned[T client.Object](ctx context.Context, op *engine.Operation, kind, name string, obj T, also []string, apply func(T) (phase, shown string)) (engine.Result, error) {
	if name == "" {
		return engine.Done("no Velero "+kind+" to mirror", nil), nil
	}
	found, err := getOwned(ctx, op.Client, op, mirrorVerb, kind, name, obj, also...)
	if err != nil {
		return engine.Result{}, err
	}
	if !found {
		return engine.Done(fmt.Sprintf("Velero %s %s not found: nothing to mirror", kind, name), nil), nil
	}
	phase, shown := apply(obj)
	return engine.Done(fmt.Sprintf("Mirrored Velero %s %s (%s)", kind, name, shown), map[string]string{"phase": phase}), nil
}

// getOwned reads the Velero object kind (e.g. "Backup") called name from the
// OADP namespace through r — the cache (op.Client) or the API server
// (op.APIReader) — into obj, and checks that it is op's own, or carries one
// of the NACUUIDs also (op.CheckOwned, with verb for the message). found is
// false, with a nil error, when there is no such object. Errors: the
// reader's, wrapped (retryable), and a foreign object (terminal: the safety
// rule).
func getOwned(ctx context.Context, r client.Reader, op *engine.Operation, verb, kind, name string, obj client.Object, also ...string) (found bool, err error) {
	if found, err = read(ctx, r, op.OADPNamespace, name, obj); !found || err != nil {
		return found, err
	}
	return true, op.CheckOwned(verb, "Velero "+kind, obj, also...)
}

// Doc implements engine.Documented.
func (*SyncStatus) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Mirrors a Velero object's spec and status into the NAC object's status (veleroBackup, veleroRestore, veleroBackupStorageLocation, veleroDeleteBackupRequest) and the queue position. A missing object is not an error.",
		Outputs: []string{"phase: the Velero object's phase"},
		Errors:  apiRetried + "an unknown kind and an object that is not the operation's own are terminal",
	}
}
