package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// or unnamed object is not an error: there is nothing to mirror; but a
// NonAdminBackup's Backup missing once its plan has ended (the controllers
// run SyncStatus after each reconcile, outside the plan) was deleted
// outside nacflow: BackingOff, Queued=False (backupGone).
//
// It is the one path by which a Velero object's status reaches its NAC
// object, in a plan and out of it (docs/architecture.md, Controllers).
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
		res, err := mirrorOwned(ctx, op, "Backup", a.Name, &velerov1.Backup{}, linkedUUIDs(op), func(b *velerov1.Backup) (string, string) {
			nab.MirrorBackup(b)
			return string(b.Status.Phase), string(b.Status.Phase)
		})
		if _, mirrored := res.Output["phase"]; err != nil || mirrored || a.Name == "" || !ranOutsidePlan(nab) {
			return res, err
		}
		return backupGone(ctx, op, nab, a.Name)
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

// ranOutsidePlan reports whether obj's plan has ended: SyncStatus then runs
// outside it, as the controllers run it after each reconcile.
func ranOutsidePlan(obj engine.Object) bool {
	p := obj.GetPlan()
	return p != nil && p.CompletionTime != nil
}

// backupGone decides what a NonAdminBackup whose plan has ended shows when
// its Velero Backup, name, is missing from the cache: the API server is
// asked (the cache may lag) and, gone there too, the Backup was deleted
// outside nacflow: phase BackingOff and condition Queued=False
// (VeleroBackupNotFound). Found there, it is mirrored. Errors: the API
// server's (retryable) and a foreign Backup (terminal).
func backupGone(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, name string) (engine.Result, error) {
	b := &velerov1.Backup{}
	found, err := getOwned(ctx, op.APIReader, op, mirrorVerb, "Backup", name, b, linkedUUIDs(op)...)
	if err != nil {
		return engine.Result{}, err
	}
	if found {
		nab.MirrorBackup(b)
		return engine.Done(fmt.Sprintf("Mirrored Velero Backup %s (%s)", name, b.Status.Phase), map[string]string{"phase": string(b.Status.Phase)}), nil
	}
	nab.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
	meta.SetStatusCondition(&nab.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionQueued, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonVeleroBackupNotFound,
		Message:            fmt.Sprintf("Velero Backup %s no longer exists in %s: it was deleted outside nacflow", name, op.OADPNamespace),
		ObservedGeneration: nab.Generation,
	})
	return engine.Done(fmt.Sprintf("Velero Backup %s not found: nothing to mirror", name), nil), nil
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
