package phases

import (
	"context"
	"fmt"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ValidateDownloadRequestArgs are the args of ValidateDownloadRequest.
type ValidateDownloadRequestArgs struct {
	// RequireTenantLocation refuses a download of a backup (or of a restore
	// of a backup) kept on the admin's storage location, OADP NAC's rule
	// (condition NonAdminBackupStorageLocationNotUsed).
	RequireTenantLocation bool `json:"requireTenantLocation,omitempty" doc:"refuse files of backups kept on the admin's storage locations, as OADP NAC does (condition NonAdminBackupStorageLocationNotUsed); default false, or nac --require-tenant-location-for-downloads"`
}

// ValidateDownloadRequest checks a NonAdminDownloadRequest (OADP NAC): its
// spec.target.kind must be one of Velero's DownloadTarget kinds and its
// spec.target.name a NonAdminBackup (Backup* and CSI* kinds) or
// NonAdminRestore (Restore* kinds) of the request's own namespace — read only
// there, so another tenant's objects can never be named — whose Velero
// object exists and was made for that namespace. It waits while that target
// does not exist (OADP NAC's NonAdminBackupNotAvailable or
// NonAdminRestoreNotAvailable condition) and while its Velero Backup or
// Restore is running (its files reach object storage when it
// ends). With args.requireTenantLocation, a backup on the admin's location
// is refused, as OADP NAC refuses it. Sets Accepted
// (DownloadRequestAccepted, or InvalidDownloadRequest naming the field) and
// phase BackingOff on refusal.
//
// The rule applies when args.requireTenantLocation or the controller's
// --require-tenant-location-for-downloads asks for it.
//
// Outputs: kind (the Velero DownloadTarget kind), name (the Velero Backup or
// Restore). Errors: refusals are terminal; API errors are retryable.
type ValidateDownloadRequest struct {
	// requireTenantLocation is Options.RequireTenantLocationForDownloads.
	requireTenantLocation bool
}

// Run implements phaseFunc.
func (f *ValidateDownloadRequest) Run(ctx context.Context, op *engine.Operation, nadr *v1alpha1.NonAdminDownloadRequest, a *ValidateDownloadRequestArgs) (engine.Result, error) {
	invalid := func(format string, v ...any) error {
		return refuse(nadr, v1alpha1.ReasonInvalidDownloadRequest, fmt.Errorf(format, v...))
	}
	requireTenantLocation := a.RequireTenantLocation || f.requireTenantLocation
	t := nadr.Spec.Target
	if err := outsideOADPNamespace(op); err != nil {
		return engine.Result{}, refuse(nadr, v1alpha1.ReasonInvalidDownloadRequest, err)
	}
	if t.Name == "" {
		return engine.Result{}, invalid("spec.target.name is empty: it must name a NonAdminBackup or NonAdminRestore of namespace %s", nadr.Namespace)
	}
	var veleroName, location string
	switch target := v1alpha1.DownloadTargetOf(t.Kind); target {
	case "NonAdminBackup":
		files, b := backupTarget()
		if wait, err := finishedTarget(ctx, op, nadr, t.Name, invalid, files); err != nil || wait != "" {
			return waitOr(wait, err)
		}
		veleroName, location = b.Name, b.Spec.StorageLocation
	case "NonAdminRestore":
		files, r := restoreTarget()
		if wait, err := finishedTarget(ctx, op, nadr, t.Name, invalid, files); err != nil || wait != "" {
			return waitOr(wait, err)
		}
		veleroName = r.Name
		if requireTenantLocation {
			b := &velerov1.Backup{}
			if _, err := read(ctx, op.Client, op.OADPNamespace, r.Spec.BackupName, b); err != nil {
				return engine.Result{}, err
			}
			location = b.Spec.StorageLocation
		}
	default:
		return engine.Result{}, invalid("spec.target.kind %q is not a file Velero keeps of a backup or restore (OADP NAC's kinds: BackupLog, BackupContents, BackupVolumeSnapshots, BackupItemOperations, BackupResourceList, BackupResults, CSIBackupVolumeSnapshots, CSIBackupVolumeSnapshotContents, BackupVolumeInfos, RestoreLog, RestoreResults, RestoreResourceList, RestoreItemOperations, RestoreVolumeInfo)", t.Kind)
	}
	if requireTenantLocation {
		tenant, err := isTenantLocation(ctx, op, location)
		if err != nil {
			return engine.Result{}, err
		}
		if !tenant {
			setCondition(nadr, v1alpha1.ConditionNonAdminBackupStorageLocationNotUsed, metav1.ConditionTrue, v1alpha1.ReasonError,
				"backup does not use a NonAdminBackupStorageLocation: files are served only for backups kept on the namespace's own location")
			return engine.Result{}, invalid("spec.target.name: %s %s is kept on the admin's storage location %q: the admin serves files only of backups on the namespace's own NonAdminBackupStorageLocation", v1alpha1.DownloadTargetOf(t.Kind), t.Name, location)
		}
	}
	accept(nadr, v1alpha1.ReasonDownloadRequestAccepted, fmt.Sprintf("%s of %s %s accepted", t.Kind, v1alpha1.DownloadTargetOf(t.Kind), t.Name))
	return engine.Done(fmt.Sprintf("%s of %s %s accepted (Velero %s)", t.Kind, v1alpha1.DownloadTargetOf(t.Kind), t.Name, veleroName),
		map[string]string{"kind": string(t.Kind), "name": veleroName}), nil
}

// waitOr returns a watched wait with message wait, or err: the controller
// maps the Velero Backups and Restores of NAC objects to the requests that
// name them, so the target's progress wakes the request.
func waitOr(wait string, err error) (engine.Result, error) {
	if err != nil {
		return engine.Result{}, err
	}
	return engine.WaitWatched(wait, 0), nil
}

// downloadTarget is what a download may name: a NAC object (nac, empty, a
// NonAdminBackup or NonAdminRestore) and the Velero object (velero, empty,
// of veleroKind) its status links by name (linked, "" for none yet), whose
// files Velero serves once it ended (ended: its phase, and whether it did).
type downloadTarget struct {
	nac        v1alpha1.Object
	velero     client.Object
	veleroKind string
	linked     func() string
	ended      func() (phase string, ok bool)
}

// backupTarget is the downloadTarget of a NonAdminBackup, and its Velero
// Backup as finishedTarget reads it.
func backupTarget() (downloadTarget, *velerov1.Backup) {
	nab, b := &v1alpha1.NonAdminBackup{}, &velerov1.Backup{}
	return downloadTarget{nac: nab, velero: b, veleroKind: "Backup",
		linked: func() string {
			if vb := nab.Status.VeleroBackup; vb != nil {
				return vb.Name
			}
			return ""
		},
		ended: func() (string, bool) { return string(b.Status.Phase), v1alpha1.BackupFinished(b.Status.Phase) },
	}, b
}

// restoreTarget is the downloadTarget of a NonAdminRestore, and its Velero
// Restore as finishedTarget reads it.
func restoreTarget() (downloadTarget, *velerov1.Restore) {
	nar, r := &v1alpha1.NonAdminRestore{}, &velerov1.Restore{}
	return downloadTarget{nac: nar, velero: r, veleroKind: "Restore",
		linked: func() string {
			if vr := nar.Status.VeleroRestore; vr != nil {
				return vr.Name
			}
			return ""
		},
		ended: func() (string, bool) { return string(r.Status.Phase), v1alpha1.RestoreFinished(r.Status.Phase) },
	}, r
}

// finishedTarget reads the NAC object name of op's namespace into t.nac
// and the Velero object its status links into t.velero, and returns "" once
// that object ended: its files are in object storage. While the NAC object
// does not exist (nadr's condition NonAdminBackupNotAvailable or
// NonAdminRestoreNotAvailable, True with reason Error, phase BackingOff, as
// OADP NAC sets them; removed once it exists), has no Velero object yet, or
// that object runs, it returns a wait message. It returns the refusal
// invalid makes for a NAC object that failed, and for a Velero object that
// is gone or was not made for it (its origin annotations).
func finishedTarget(ctx context.Context, op *engine.Operation, nadr *v1alpha1.NonAdminDownloadRequest, name string, invalid func(string, ...any) error, t downloadTarget) (string, error) {
	ns := op.Object.GetNamespace()
	kind := fmt.Sprintf("%T", t.nac)
	if k, ok := v1alpha1.KindOf(t.nac); ok {
		kind = k.Kind
	}
	notAvailable := kind + "NotAvailable"
	if found, err := lookup(ctx, op, ns, name, t.nac); err != nil {
		return "", err
	} else if !found {
		// OADP NAC's rule: the request backs off until its target exists
		// (NonAdminBackupNotAvailable or NonAdminRestoreNotAvailable, reason
		// Error), so that a request made before its backup is served once
		// the backup runs; the target's Velero object wakes it.
		msg := fmt.Sprintf("cannot get %s: %s %s/%s does not exist (yet): the request waits for it", strings.ToLower(kind), kind, ns, name)
		setPhaseAndCondition(nadr, v1alpha1.NonAdminPhaseBackingOff, metav1.Condition{Type: notAvailable, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonError, Message: msg, ObservedGeneration: nadr.GetGeneration()})
		return msg, nil
	}
	conditions := nadr.GetConditions()
	if meta.RemoveStatusCondition(&conditions, notAvailable) {
		nadr.SetConditions(conditions)
		nadr.SetPhase(v1alpha1.NonAdminPhaseNew)
	}
	linked := t.linked()
	if linked == "" {
		if p := t.nac.GetPlan(); p != nil && p.State == v1alpha1.PlanFailed {
			return "", invalid("spec.target.name: %s %s has no Velero %s: its request failed (%s)", kind, name, t.veleroKind, p.Message)
		}
		return fmt.Sprintf("%s %s has no Velero %s yet", kind, name, t.veleroKind), nil
	}
	if found, err := lookup(ctx, op, op.OADPNamespace, linked, t.velero); err != nil {
		return "", err
	} else if !found {
		return "", invalid("spec.target.name: the Velero %s %s of %s %s no longer exists", t.veleroKind, linked, kind, name)
	}
	origin := t.nac.OriginKeys()
	if got := t.velero.GetAnnotations()[origin.NamespaceAnnotation]; got != ns {
		return "", invalid("spec.target.name: the Velero %s %s of %s %s was not made for namespace %s", t.veleroKind, t.velero.GetName(), kind, name, ns)
	}
	if got := t.velero.GetAnnotations()[origin.NameAnnotation]; got != name {
		return "", invalid("spec.target.name: the Velero %s %s named in the status of %s %s was not made for it", t.veleroKind, t.velero.GetName(), kind, name)
	}
	if phase, ok := t.ended(); !ok {
		return fmt.Sprintf("Velero %s %s of %s %s is %s: its files are in object storage once it ends", t.veleroKind, t.velero.GetName(), kind, name, phaseOr(phase)), nil
	}
	return "", nil
}

// isTenantLocation reports whether the Velero BackupStorageLocation name of
// the OADP namespace is a tenant's (it carries the NABSL origin label). ""
// is Velero's default location: the admin's.
func isTenantLocation(ctx context.Context, op *engine.Operation, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	bsl := &velerov1.BackupStorageLocation{}
	// Only tenants' locations are cached (the NAC label): the admin's read
	// NotFound, which is the answer.
	if found, err := read(ctx, op.Client, op.OADPNamespace, name, bsl); !found || err != nil {
		return false, err
	}
	_, tenant := bsl.Labels[v1alpha1.NabslOriginNACUUIDLabel]
	return tenant, nil
}

// Doc implements engine.Documented.
func (*ValidateDownloadRequest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminDownloadRequest: spec.target.kind one of Velero's DownloadTarget kinds, spec.target.name a NonAdminBackup (Backup*/CSI* kinds) or NonAdminRestore (Restore* kinds) of the same namespace whose Velero object was made for it; waits while that target does not exist (NonAdminBackupNotAvailable or NonAdminRestoreNotAvailable=True, reason Error, phase BackingOff: OADP NAC's) and while its Velero object runs; with args.requireTenantLocation refuses backups on the admin's location (OADP NAC's rule). Sets Accepted.",
		Outputs: []string{"kind: the Velero DownloadTarget kind", "name: the Velero Backup or Restore"},
		Errors:  "a refusal is terminal (Accepted=False/InvalidDownloadRequest, phase BackingOff); " + apiRetried,
		Waits:   true,
	}
}
