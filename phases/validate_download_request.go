package phases

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// recheckTarget is the fallback recheck while the NonAdminBackup or
// NonAdminRestore a download names is still running; the watch on Velero
// objects does not reach NonAdminDownloadRequests.
const recheckTarget = 10 * time.Second

// ValidateDownloadRequestArgs are the args of ValidateDownloadRequest.
type ValidateDownloadRequestArgs struct {
	// RequireTenantLocation refuses a download of a backup (or of a restore
	// of a backup) kept on the admin's storage location, OADP NAC's rule
	// (condition NonAdminBackupStorageLocationNotUsed).
	RequireTenantLocation bool `json:"requireTenantLocation,omitempty" doc:"refuse files of backups kept on the admin's storage locations, as OADP NAC does (condition NonAdminBackupStorageLocationNotUsed); default false"`
}

// ValidateDownloadRequest checks a NonAdminDownloadRequest (OADP NAC): its
// spec.target.kind must be one of Velero's DownloadTarget kinds and its
// spec.target.name a NonAdminBackup (Backup* and CSI* kinds) or
// NonAdminRestore (Restore* kinds) of the request's own namespace — read only
// there, so another tenant's objects can never be named — whose Velero
// object exists and was made for that namespace. It waits while that Velero
// Backup or Restore is running (its files reach object storage when it
// ends). With args.requireTenantLocation, a backup on the admin's location
// is refused, as OADP NAC refuses it. Sets Accepted
// (DownloadRequestAccepted, or InvalidDownloadRequest naming the field) and
// phase BackingOff on refusal.
//
// Outputs: kind (the Velero DownloadTarget kind), name (the Velero Backup or
// Restore). Errors: refusals are terminal; API errors are retryable.
type ValidateDownloadRequest struct{}

// Name implements engine.Func.
func (*ValidateDownloadRequest) Name() string { return "ValidateDownloadRequest" }

// NewArgs implements engine.Func.
func (*ValidateDownloadRequest) NewArgs() any { return &ValidateDownloadRequestArgs{} }

// Run implements engine.Func.
func (f *ValidateDownloadRequest) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*ValidateDownloadRequestArgs)
	nadr, err := asDownloadRequest(f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	invalid := func(format string, v ...any) error {
		return refuse(nadr, v1alpha1.ReasonInvalidDownloadRequest, fmt.Errorf(format, v...))
	}
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
		b, wait, err := f.backupOf(ctx, op, t.Name, invalid)
		if err != nil || wait != "" {
			return waitOr(wait, err)
		}
		veleroName, location = b.Name, b.Spec.StorageLocation
	case "NonAdminRestore":
		r, wait, err := f.restoreOf(ctx, op, t.Name, invalid)
		if err != nil || wait != "" {
			return waitOr(wait, err)
		}
		veleroName = r.Name
		if a.RequireTenantLocation {
			b := &velerov1.Backup{}
			if err := op.Client.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: r.Spec.BackupName}, b); client.IgnoreNotFound(err) != nil {
				return engine.Result{}, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, r.Spec.BackupName, err)
			}
			location = b.Spec.StorageLocation
		}
	default:
		return engine.Result{}, invalid("spec.target.kind %q is not a file Velero keeps of a backup or restore (OADP NAC's kinds: BackupLog, BackupContents, BackupVolumeSnapshots, BackupItemOperations, BackupResourceList, BackupResults, CSIBackupVolumeSnapshots, CSIBackupVolumeSnapshotContents, BackupVolumeInfos, RestoreLog, RestoreResults, RestoreResourceList, RestoreItemOperations, RestoreVolumeInfo)", t.Kind)
	}
	if a.RequireTenantLocation {
		tenant, err := isTenantLocation(ctx, op, location)
		if err != nil {
			return engine.Result{}, err
		}
		if !tenant {
			setCondition(nadr, v1alpha1.ConditionNonAdminBackupStorageLocationNotUsed, metav1.ConditionTrue, "Error",
				"backup does not use a NonAdminBackupStorageLocation: files are served only for backups kept on the namespace's own location")
			return engine.Result{}, invalid("spec.target.name: %s %s is kept on the admin's storage location %q: the admin serves files only of backups on the namespace's own NonAdminBackupStorageLocation", v1alpha1.DownloadTargetOf(t.Kind), t.Name, location)
		}
	}
	accept(nadr, v1alpha1.ReasonDownloadRequestAccepted, fmt.Sprintf("%s of %s %s accepted", t.Kind, v1alpha1.DownloadTargetOf(t.Kind), t.Name))
	return engine.Done(fmt.Sprintf("%s of %s %s accepted (Velero %s)", t.Kind, v1alpha1.DownloadTargetOf(t.Kind), t.Name, veleroName),
		map[string]string{"kind": string(t.Kind), "name": veleroName}), nil
}

// waitOr returns a Wait result with message wait, or err.
func waitOr(wait string, err error) (engine.Result, error) {
	if err != nil {
		return engine.Result{}, err
	}
	return engine.Wait(wait, recheckTarget), nil
}

// backupOf returns the finished Velero Backup of the NonAdminBackup name of
// op's namespace, or a wait message while it has none or runs, or the
// refusal invalid makes.
func (f *ValidateDownloadRequest) backupOf(ctx context.Context, op *engine.Operation, name string, invalid func(string, ...any) error) (*velerov1.Backup, string, error) {
	ns := op.Object.GetNamespace()
	nab := &v1alpha1.NonAdminBackup{}
	if err := getInNamespace(ctx, op, ns, name, nab); apierrors.IsNotFound(err) {
		return nil, "", invalid("spec.target.name: NonAdminBackup %s/%s does not exist", ns, name)
	} else if err != nil {
		return nil, "", err
	}
	vb := nab.Status.VeleroBackup
	if vb == nil || vb.Name == "" {
		if p := nab.Status.Plan; p != nil && p.State == v1alpha1.PlanFailed {
			return nil, "", invalid("spec.target.name: NonAdminBackup %s has no Velero Backup: its request failed (%s)", name, p.Message)
		}
		return nil, fmt.Sprintf("NonAdminBackup %s has no Velero Backup yet", name), nil
	}
	b := &velerov1.Backup{}
	if err := getInNamespace(ctx, op, op.OADPNamespace, vb.Name, b); apierrors.IsNotFound(err) {
		return nil, "", invalid("spec.target.name: the Velero Backup %s of NonAdminBackup %s no longer exists", vb.Name, name)
	} else if err != nil {
		return nil, "", err
	}
	if origin := b.Annotations[v1alpha1.NabOriginNamespaceAnnotation]; origin != ns {
		return nil, "", invalid("spec.target.name: the Velero Backup %s of NonAdminBackup %s was not made for namespace %s", b.Name, name, ns)
	}
	if origin := b.Annotations[v1alpha1.NabOriginNameAnnotation]; origin != name {
		return nil, "", invalid("spec.target.name: the Velero Backup %s named in the status of NonAdminBackup %s was not made for it", b.Name, name)
	}
	if !v1alpha1.BackupFinished(b.Status.Phase) {
		return nil, fmt.Sprintf("Velero Backup %s of NonAdminBackup %s is %s: its files are in object storage once it ends", b.Name, name, phaseOr(string(b.Status.Phase))), nil
	}
	return b, "", nil
}

// restoreOf is backupOf for the NonAdminRestore name.
func (f *ValidateDownloadRequest) restoreOf(ctx context.Context, op *engine.Operation, name string, invalid func(string, ...any) error) (*velerov1.Restore, string, error) {
	ns := op.Object.GetNamespace()
	nar := &v1alpha1.NonAdminRestore{}
	if err := getInNamespace(ctx, op, ns, name, nar); apierrors.IsNotFound(err) {
		return nil, "", invalid("spec.target.name: NonAdminRestore %s/%s does not exist", ns, name)
	} else if err != nil {
		return nil, "", err
	}
	vr := nar.Status.VeleroRestore
	if vr == nil || vr.Name == "" {
		if p := nar.Status.Plan; p != nil && p.State == v1alpha1.PlanFailed {
			return nil, "", invalid("spec.target.name: NonAdminRestore %s has no Velero Restore: its request failed (%s)", name, p.Message)
		}
		return nil, fmt.Sprintf("NonAdminRestore %s has no Velero Restore yet", name), nil
	}
	r := &velerov1.Restore{}
	if err := getInNamespace(ctx, op, op.OADPNamespace, vr.Name, r); apierrors.IsNotFound(err) {
		return nil, "", invalid("spec.target.name: the Velero Restore %s of NonAdminRestore %s no longer exists", vr.Name, name)
	} else if err != nil {
		return nil, "", err
	}
	if origin := r.Annotations[v1alpha1.NarOriginNamespaceAnnotation]; origin != ns {
		return nil, "", invalid("spec.target.name: the Velero Restore %s of NonAdminRestore %s was not made for namespace %s", r.Name, name, ns)
	}
	if origin := r.Annotations[v1alpha1.NarOriginNameAnnotation]; origin != name {
		return nil, "", invalid("spec.target.name: the Velero Restore %s named in the status of NonAdminRestore %s was not made for it", r.Name, name)
	}
	if !v1alpha1.RestoreFinished(r.Status.Phase) {
		return nil, fmt.Sprintf("Velero Restore %s of NonAdminRestore %s is %s: its files are in object storage once it ends", r.Name, name, phaseOr(string(r.Status.Phase))), nil
	}
	return r, "", nil
}

// getInNamespace reads namespace/name into obj through the cache, then the
// API server when the cache does not have it (it may lag). The error is the
// API server's: NotFound when there is no such object.
func getInNamespace(ctx context.Context, op *engine.Operation, namespace, name string, obj client.Object) error {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	err := op.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = op.APIReader.Get(ctx, key, obj)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading %T %s/%s: %w", obj, namespace, name, err)
	}
	return err
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
	err := op.Client.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: name}, bsl)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Velero BackupStorageLocation %s/%s: %w", op.OADPNamespace, name, err)
	}
	_, tenant := bsl.Labels[v1alpha1.NabslOriginNACUUIDLabel]
	return tenant, nil
}
