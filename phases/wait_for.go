package phases

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// WaitFor's waits are woken by the watches on what they wait for: an object
// not yet in the cache (its creation), a location or schedule Velero
// validates, a DownloadRequest Velero serves are watched waits
// (engine.WaitWatched: the runner's recheck is a safety net backing off
// from 5 s). Backups, Restores and DeleteBackupRequests Velero works on may
// wait for hours in Velero's queue: their recheck stays one long period.
const (
	// recheckRunning is used while Velero works on an object. Every update
	// Velero makes to the object wakes its NAC object through the watch, so
	// this only bounds how long a lost event could go unnoticed; polling
	// more often made an idle queue cost CPU in proportion to its length
	// times its age (every waiting NAB reconciled at each recheck).
	recheckRunning = 5 * time.Minute
)

// WaitForArgs are the args of WaitFor.
type WaitForArgs struct {
	// Kind of the object to wait for: Backup, BackupStorageLocation,
	// DeleteBackupRequest, DownloadRequest, Restore (Velero objects in the
	// OADP namespace) or RestorableBackup (a NonAdminBackup in the
	// operation's namespace).
	Kind string `json:"kind" doc:"Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore (Velero objects in the OADP namespace) or RestorableBackup (a NonAdminBackup of the operation's namespace)"`
	// Name of the object, usually {{ .Phases.<create phase>.Output.name }}.
	Name string `json:"name" doc:"name of the object, usually {{ .Phases.<create phase>.Output.name }}"`
	// AcceptFailure, for a DeleteBackupRequest, completes the wait when
	// Velero processed the request with errors instead of failing it (the
	// forceDelete action: the NonAdminBackup goes whatever Velero managed).
	AcceptFailure bool `json:"acceptFailure,omitempty" doc:"DeleteBackupRequest only: a request Velero processed with errors completes the wait, quoting them, instead of failing it (forceDeleteBackup)"`
}

// WaitFor waits until an object is ready, after Velero's "wait for additional
// items to be ready" design: a per-kind readiness check, re-run until it
// passes or the phase's timeout expires (the runner applies timeout and
// onTimeout). Objects are always read in the OADP namespace.
//
// Readiness:
//   - Backup: its phase is terminal (Completed, PartiallyFailed, Failed,
//     FailedValidation). Output: phase. Meanwhile the NonAdminBackup's
//     status counts the backup's DataUploads and PodVolumeBackups by phase
//     (OADP NAC's dataMoverDataUploads, fileSystemPodVolumeBackups) and the
//     message says "3 of 5 volumes uploaded". A Backup that is gone from the API
//     server (not only from the cache) is a terminal error: it was deleted
//     before it finished.
//   - RestorableBackup (name: a NonAdminBackup in the operation's own
//     namespace): its Velero Backup is Completed or PartiallyFailed (outputs
//     name and uid: later phases pin the restore to that very Backup);
//     Failed or gone is terminal.
//   - Restore: its phase is terminal. Output: phase. Meanwhile the
//     NonAdminRestore's status counts DataDownloads and PodVolumeRestores
//     (dataMoverDataDownloads, fileSystemPodVolumeRestores): "2 of 2 volumes
//     restored".
//   - BackupStorageLocation: Velero reports it Available (else the wait
//     message carries Velero's own message).
//   - DownloadRequest: Velero processed it: its status holds the pre-signed
//     URL. Output: expiration (RFC 3339). One gone before that is a
//     terminal error.
//   - DeleteBackupRequest: the Backup it names is gone. An empty name means
//     there was nothing to delete (done at once). A request Velero processed
//     with errors is a terminal error quoting them; with args.acceptFailure
//     it completes the wait, quoting them (output deleted: "false").
//
// The object named must be the operation's own (its origin NACUUID label; for
// a NonAdminBackup also the Backup it is linked to in status.veleroBackup;
// and made for the operation's namespace), and a RestorableBackup's Velero
// Backup one made for that very NonAdminBackup (origin namespace and name
// annotations: its status alone proves nothing): the safety rule, whatever
// name a blueprint renders.
//
// Errors: an unknown kind, an empty Backup name or an object that is not the
// operation's own is terminal; API errors are retryable.
type WaitFor struct {
	tools tools
}

// Run implements phaseFunc.
func (f *WaitFor) Run(ctx context.Context, op *engine.Operation, _ engine.Object, a *WaitForArgs) (engine.Result, error) {
	switch a.Kind {
	case "Backup":
		return f.backup(ctx, op, a.Name)
	case "DeleteBackupRequest":
		return f.deletion(ctx, op, a.Name, a.AcceptFailure)
	case "RestorableBackup":
		return f.restorable(ctx, op, a.Name)
	case "Restore":
		return f.restore(ctx, op, a.Name)
	case "BackupStorageLocation":
		return f.bsl(ctx, op, a.Name)
	case "DownloadRequest":
		return f.download(ctx, op, a.Name)
	case "Schedule":
		return f.schedule(ctx, op, a.Name)
	default:
		return engine.Result{}, engine.Terminalf("WaitFor: args.kind %q is not supported (supported: Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, RestorableBackup, Restore, Schedule)", a.Kind)
	}
}

// schedule waits until Velero validated the Schedule name, one of op's own:
// Enabled is done; FailedValidation refuses the NonAdminSchedule
// (Accepted=False/InvalidScheduleSpec with Velero's validation errors,
// terminal).
func (f *WaitFor) schedule(ctx context.Context, op *engine.Operation, name string) (engine.Result, error) {
	if name == "" {
		return engine.Result{}, engine.Terminalf("WaitFor: args.name is empty")
	}
	s := &velerov1.Schedule{}
	found, err := getOwned(ctx, op.Client, op, waitVerb, "Schedule", name, s)
	if err != nil {
		return engine.Result{}, err
	}
	if !found {
		return engine.WaitWatched(fmt.Sprintf("Velero Schedule %s not found yet", name), 0), nil
	}
	switch s.Status.Phase {
	case velerov1.SchedulePhaseEnabled:
		return engine.Done(fmt.Sprintf("Velero Schedule %s is Enabled", name), map[string]string{"phase": string(s.Status.Phase)}), nil
	case velerov1.SchedulePhaseFailedValidation:
		return engine.Result{}, refuse(op.Object, v1alpha1.ReasonInvalidScheduleSpec,
			fmt.Errorf("Velero refused Schedule %s: %s", name, strings.Join(s.Status.ValidationErrors, "; ")))
	}
	return engine.WaitWatched(fmt.Sprintf("Velero Schedule %s is %s", name, phaseOr(string(s.Status.Phase))), 0), nil
}

// bsl waits until Velero reports the BackupStorageLocation name, one of
// op's own, Available.
func (f *WaitFor) bsl(ctx context.Context, op *engine.Operation, name string) (engine.Result, error) {
	if name == "" {
		return engine.Result{}, engine.Terminalf("WaitFor: args.name is empty")
	}
	b := &velerov1.BackupStorageLocation{}
	found, err := getOwned(ctx, op.Client, op, waitVerb, "BackupStorageLocation", name, b)
	if err != nil {
		return engine.Result{}, err
	}
	if !found {
		return engine.WaitWatched(fmt.Sprintf("Velero BackupStorageLocation %s not found yet", name), 0), nil
	}
	if b.Status.Phase == velerov1.BackupStorageLocationPhaseAvailable {
		return engine.Done(fmt.Sprintf("Velero BackupStorageLocation %s is Available", name), map[string]string{"phase": string(b.Status.Phase)}), nil
	}
	msg := fmt.Sprintf("Velero BackupStorageLocation %s is %s", name, phaseOr(string(b.Status.Phase)))
	if b.Status.Message != "" {
		msg += ": " + b.Status.Message
	}
	return engine.WaitWatched(msg, 0), nil
}

// restorable waits until the Velero Backup of the NonAdminBackup name, in
// the operation's own namespace, can be restored: Completed or
// PartiallyFailed (output name: the Velero Backup's name). A Failed one, or
// one that is gone, refuses the restore (Accepted=False/InvalidRestoreSpec,
// BackingOff; terminal); one still running is waited for.
func (f *WaitFor) restorable(ctx context.Context, op *engine.Operation, name string) (engine.Result, error) {
	ns := op.Object.GetNamespace()
	nab := &v1alpha1.NonAdminBackup{}
	found, err := lookup(ctx, op, ns, name, nab)
	if err != nil {
		return engine.Result{}, err
	}
	if !found {
		return engine.Result{}, refuse(op.Object, v1alpha1.ReasonInvalidRestoreSpec,
			fmt.Errorf("spec.restoreSpec.backupName: NonAdminBackup %s/%s no longer exists", ns, name))
	}
	vb := nab.Status.VeleroBackup
	if vb == nil || vb.Name == "" || vb.Namespace == "" {
		return engine.WaitWatched(fmt.Sprintf("NonAdminBackup %s has no Velero Backup yet", name), 0), nil
	}
	b := &velerov1.Backup{}
	if found, err = lookup(ctx, op, op.OADPNamespace, vb.Name, b); !found && err == nil {
		return engine.Result{}, refuse(op.Object, v1alpha1.ReasonInvalidRestoreSpec,
			fmt.Errorf("spec.restoreSpec.backupName: the Velero Backup %s of NonAdminBackup %s no longer exists", vb.Name, name))
	}
	if err != nil {
		return engine.Result{}, err
	}
	if origin := b.Annotations[v1alpha1.NabOriginNamespaceAnnotation]; origin != ns {
		return engine.Result{}, engine.Terminal(&engine.SafetyViolation{Rule: engine.RuleReferences, Phase: op.Phase, Func: op.Func,
			Verb: waitVerb, Kind: "Velero Backup", Namespace: b.Namespace, Name: b.Name,
			Reason: fmt.Sprintf("it was not made for namespace %s (annotation %s is %q)", ns, v1alpha1.NabOriginNamespaceAnnotation, origin)})
	}
	if origin := b.Annotations[v1alpha1.NabOriginNameAnnotation]; origin != name {
		// The NAB's status names a Backup of another NAB: status is no
		// proof of what a NAB owns.
		return engine.Result{}, engine.Terminal(&engine.SafetyViolation{Rule: engine.RuleReferences, Phase: op.Phase, Func: op.Func,
			Verb: waitVerb, Kind: "Velero Backup", Namespace: b.Namespace, Name: b.Name,
			Reason: fmt.Sprintf("it was not made for NonAdminBackup %s/%s (annotation %s is %q)", ns, name, v1alpha1.NabOriginNameAnnotation, origin)})
	}
	switch b.Status.Phase {
	case velerov1.BackupPhaseCompleted, velerov1.BackupPhasePartiallyFailed:
		return engine.Done(fmt.Sprintf("Velero Backup %s of NonAdminBackup %s is %s", b.Name, name, b.Status.Phase),
			map[string]string{"name": b.Name, "uid": string(b.UID), "phase": string(b.Status.Phase)}), nil
	case velerov1.BackupPhaseFailed, velerov1.BackupPhaseFailedValidation, velerov1.BackupPhaseDeleting:
		return engine.Result{}, refuse(op.Object, v1alpha1.ReasonInvalidRestoreSpec,
			fmt.Errorf("spec.restoreSpec.backupName: the Velero Backup %s of NonAdminBackup %s is %s: only Completed or PartiallyFailed backups can be restored", b.Name, name, b.Status.Phase))
	}
	return engine.Wait(fmt.Sprintf("Velero Backup %s of NonAdminBackup %s is %s", b.Name, name, phaseOr(string(b.Status.Phase))), recheckRunning), nil
}

// restore waits until the Velero Restore name, one of op's own, has
// finished. One gone from the API server is a terminal error.
func (f *WaitFor) restore(ctx context.Context, op *engine.Operation, name string) (engine.Result, error) {
	if name == "" {
		return engine.Result{}, engine.Terminalf("WaitFor: args.name is empty")
	}
	ns := op.OADPNamespace
	r := &velerov1.Restore{}
	found, err := getOwned(ctx, op.Client, op, waitVerb, "Restore", name, r)
	if err == nil && !found && f.tools.recent.has("Velero Restore", ns, name) {
		// Created by this process moments ago; the cache is behind.
		return engine.Wait(fmt.Sprintf("Velero Restore %s is %s", name, phaseOr("")), recheckRunning), nil
	}
	if err == nil && !found {
		// Not in the cache: just created, or deleted? Ask the API server.
		found, err = getOwned(ctx, op.APIReader, op, waitVerb, "Restore", name, r)
		if err == nil && !found {
			return engine.Result{}, engine.Terminalf("Velero Restore %s was deleted from %s before it finished", name, ns)
		}
	}
	if err != nil {
		return engine.Result{}, err
	}
	progress, err := volumeProgress(ctx, op, name)
	if err != nil {
		return engine.Result{}, err
	}
	if !v1alpha1.RestoreFinished(r.Status.Phase) {
		return engine.Wait(withProgress(fmt.Sprintf("Velero Restore %s is %s", name, phaseOr(string(r.Status.Phase))), progress), recheckRunning), nil
	}
	return engine.Done(withProgress(fmt.Sprintf("Velero Restore %s is %s", name, r.Status.Phase), progress), map[string]string{"phase": string(r.Status.Phase)}), nil
}

// backup waits until the Velero Backup name, one of op's own (or the one
// its NonAdminBackup is linked to), has finished.
func (f *WaitFor) backup(ctx context.Context, op *engine.Operation, name string) (engine.Result, error) {
	if name == "" {
		return engine.Result{}, engine.Terminalf("WaitFor: args.name is empty")
	}
	ns := op.OADPNamespace
	b := &velerov1.Backup{}
	found, err := getOwned(ctx, op.Client, op, waitVerb, "Backup", name, b, linkedUUIDs(op)...)
	if err == nil && !found && f.tools.recent.has("Velero Backup", ns, name) {
		// Created by this process moments ago; the cache is behind.
		return engine.Wait(fmt.Sprintf("Velero Backup %s is %s", name, phaseOr("")), recheckRunning), nil
	}
	if err == nil && !found {
		// Not in the cache: just created, or deleted? Ask the API server.
		found, err = getOwned(ctx, op.APIReader, op, waitVerb, "Backup", name, b, linkedUUIDs(op)...)
		if err == nil && !found {
			return engine.Result{}, engine.Terminalf("Velero Backup %s was deleted from %s before it finished", name, ns)
		}
		if err == nil {
			// Just created, not in the cache yet: Velero's first update will
			// wake the controller; the recheck is only a fallback.
			return engine.Wait(fmt.Sprintf("Velero Backup %s is %s", name, phaseOr(string(b.Status.Phase))), recheckRunning), nil
		}
	}
	if err != nil {
		return engine.Result{}, err
	}
	progress, err := volumeProgress(ctx, op, name)
	if err != nil {
		return engine.Result{}, err
	}
	if !v1alpha1.BackupFinished(b.Status.Phase) {
		return engine.Wait(withProgress(fmt.Sprintf("Velero Backup %s is %s", name, phaseOr(string(b.Status.Phase))), progress), recheckRunning), nil
	}
	return engine.Done(withProgress(fmt.Sprintf("Velero Backup %s is %s", name, b.Status.Phase), progress),
		map[string]string{"phase": string(b.Status.Phase)}), nil
}

// deletion waits until the Backup named by op's DeleteBackupRequest name
// (or, before the request is seen, the Backup name, which must be the
// NonAdminBackup's own) is gone.
func (f *WaitFor) deletion(ctx context.Context, op *engine.Operation, name string, acceptFailure bool) (engine.Result, error) {
	if name == "" {
		return engine.Done("no Velero Backup to wait for", nil), nil
	}
	ns := op.OADPNamespace
	dbr := &velerov1.DeleteBackupRequest{}
	found, err := read(ctx, op.Client, ns, name, dbr)
	if err != nil {
		return engine.Result{}, err
	}
	if found {
		if err := op.CheckOwned(waitVerb, "Velero DeleteBackupRequest", dbr); err != nil {
			return engine.Result{}, err
		}
	}
	backupName := name
	if err == nil && dbr.Spec.BackupName != "" {
		backupName = dbr.Spec.BackupName
	}
	b := &velerov1.Backup{}
	if found, err := read(ctx, op.APIReader, ns, backupName, b); err != nil {
		return engine.Result{}, err
	} else if !found {
		return engine.Done(fmt.Sprintf("Velero deleted Backup %s and its data", backupName), nil), nil
	}
	if err := op.CheckOwned(waitVerb, "Velero Backup", b, linkedUUIDs(op)...); err != nil {
		return engine.Result{}, err
	}
	if err == nil && dbr.Status.Phase == velerov1.DeleteBackupRequestPhaseProcessed && len(dbr.Status.Errors) > 0 {
		if acceptFailure {
			return engine.Done(fmt.Sprintf("Velero could not delete Backup %s (going on: forced deletion): %s", backupName, strings.Join(dbr.Status.Errors, "; ")),
				map[string]string{"deleted": "false"}), nil
		}
		return engine.Result{}, engine.Terminalf("Velero could not delete Backup %s: %s", backupName, strings.Join(dbr.Status.Errors, "; "))
	}
	phase := "not found yet"
	if err == nil {
		phase = phaseOr(string(dbr.Status.Phase))
	}
	return engine.Wait(fmt.Sprintf("Velero DeleteBackupRequest %s is %s", name, phase), recheckRunning), nil
}

// download waits until Velero has processed the DownloadRequest name, one
// of op's own: its status carries the download URL.
func (f *WaitFor) download(ctx context.Context, op *engine.Operation, name string) (engine.Result, error) {
	if name == "" {
		return engine.Result{}, engine.Terminalf("WaitFor: args.name is empty")
	}
	dr := &velerov1.DownloadRequest{}
	found, err := getOwned(ctx, op.Client, op, waitVerb, "DownloadRequest", name, dr)
	if err == nil && !found && !f.tools.recent.has("Velero DownloadRequest", op.OADPNamespace, name) {
		found, err = getOwned(ctx, op.APIReader, op, waitVerb, "DownloadRequest", name, dr)
		if err == nil && !found {
			return engine.Result{}, engine.Terminalf("Velero DownloadRequest %s was deleted from %s before Velero processed it", name, op.OADPNamespace)
		}
	}
	if err != nil {
		return engine.Result{}, err
	}
	if dr.Status.Phase == velerov1.DownloadRequestPhaseProcessed && dr.Status.DownloadURL != "" {
		out := map[string]string{}
		if dr.Status.Expiration != nil {
			out["expiration"] = dr.Status.Expiration.UTC().Format(time.RFC3339)
		}
		return engine.Done(fmt.Sprintf("Velero processed DownloadRequest %s: the URL expires at %s", name, out["expiration"]), out), nil
	}
	return engine.WaitWatched(fmt.Sprintf("Velero DownloadRequest %s is %s", name, phaseOr(string(dr.Status.Phase))), 0), nil
}

// phaseOr returns phase, or "not started" when Velero has set none.
func phaseOr(phase string) string {
	if phase == "" {
		return "not started"
	}
	return phase
}

// Doc implements engine.Documented.
func (*WaitFor) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Waits until an object is ready (Velero's wait-for-ready design): a Backup or Restore finished, a BackupStorageLocation Available, a DeleteBackupRequest's Backup gone, a NonAdminBackup's backup restorable. The phase's timeout and onTimeout apply.",
		Outputs: []string{"phase: the object's final phase (Backup, Restore, BackupStorageLocation)", "name: the Velero Backup (RestorableBackup)"},
		Errors:  "an object deleted before it finished, a Failed backup to restore, Velero's deletion errors, an object that is not the operation's own (or, for RestorableBackup, not of the tenant's namespace) are terminal; " + apiRetried,
		Waits:   true,
	}
}
