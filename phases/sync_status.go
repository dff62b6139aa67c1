package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// SyncStatusArgs are the args of SyncStatus.
type SyncStatusArgs struct {
	// Kind of the Velero object to mirror: Backup, DeleteBackupRequest or
	// Restore.
	Kind string `json:"kind" doc:"Backup, BackupStorageLocation, DeleteBackupRequest or Restore"`
	// Name of the Velero object in the OADP namespace. Empty: nothing to
	// mirror (e.g. a deferPhase after validation refused the request).
	Name string `json:"name" doc:"the Velero object in the OADP namespace; empty: nothing to mirror"`
}

// SyncStatus mirrors a Velero object's spec and status into the NAC object's
// status (for a Backup: status.veleroBackup and status.queueInfo; for a
// DeleteBackupRequest: status.veleroDeleteBackupRequest; for a Restore, of a
// NonAdminRestore: status.veleroRestore and status.queueInfo). A missing
// or unnamed object is not an error: there is nothing to mirror.
//
// Output: phase (the Velero object's phase, when there is one). Errors: an
// unknown kind is terminal; so is a named object that is not the
// operation's own (the safety rule: it carries neither this operation's
// NACUUID label nor, for a NonAdminBackup, the one of the Backup it is linked
// to); API errors are retryable.
type SyncStatus struct{}

// Name implements engine.Func.
func (*SyncStatus) Name() string { return "SyncStatus" }

// NewArgs implements engine.Func.
func (*SyncStatus) NewArgs() any { return &SyncStatusArgs{} }

// Run implements engine.Func.
func (f *SyncStatus) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*SyncStatusArgs)
	switch a.Kind {
	case "Backup":
		nab, err := asBackup(f.Name(), op)
		if err != nil {
			return engine.Result{}, err
		}
		if a.Name == "" {
			return engine.Done("no Velero Backup to mirror", nil), nil
		}
		b := &velerov1.Backup{}
		err = op.Client.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: a.Name}, b)
		if apierrors.IsNotFound(err) {
			return engine.Done(fmt.Sprintf("Velero Backup %s not found: nothing to mirror", a.Name), nil), nil
		}
		if err != nil {
			return engine.Result{}, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, a.Name, err)
		}
		if err := op.CheckOwned(mirrorVerb, "Velero Backup", b, linkedUUIDs(op)...); err != nil {
			return engine.Result{}, err
		}
		nab.MirrorBackup(b)
		return engine.Done(fmt.Sprintf("Mirrored Velero Backup %s (%s)", a.Name, b.Status.Phase),
			map[string]string{"phase": string(b.Status.Phase)}), nil
	case "DeleteBackupRequest":
		nab, err := asBackup(f.Name(), op)
		if err != nil {
			return engine.Result{}, err
		}
		if a.Name == "" {
			return engine.Done("no Velero DeleteBackupRequest to mirror", nil), nil
		}
		dbr := &velerov1.DeleteBackupRequest{}
		err = op.Client.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: a.Name}, dbr)
		if apierrors.IsNotFound(err) {
			return engine.Done(fmt.Sprintf("Velero DeleteBackupRequest %s not found: nothing to mirror", a.Name), nil), nil
		}
		if err != nil {
			return engine.Result{}, fmt.Errorf("reading Velero DeleteBackupRequest %s/%s: %w", op.OADPNamespace, a.Name, err)
		}
		if err := op.CheckOwned(mirrorVerb, "Velero DeleteBackupRequest", dbr); err != nil {
			return engine.Result{}, err
		}
		if nab.Status.VeleroDeleteBackupRequest == nil {
			nab.Status.VeleroDeleteBackupRequest = &v1alpha1.VeleroDeleteBackupRequest{NACUUID: op.UUID, Name: dbr.Name, Namespace: dbr.Namespace}
		}
		nab.Status.VeleroDeleteBackupRequest.Status = dbr.Status.DeepCopy()
		return engine.Done(fmt.Sprintf("Mirrored Velero DeleteBackupRequest %s (%s)", a.Name, phaseOr(string(dbr.Status.Phase))),
			map[string]string{"phase": string(dbr.Status.Phase)}), nil
	case "Restore":
		nar, err := asRestore(f.Name(), op)
		if err != nil {
			return engine.Result{}, err
		}
		if a.Name == "" {
			return engine.Done("no Velero Restore to mirror", nil), nil
		}
		r := &velerov1.Restore{}
		err = op.Client.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: a.Name}, r)
		if apierrors.IsNotFound(err) {
			return engine.Done(fmt.Sprintf("Velero Restore %s not found: nothing to mirror", a.Name), nil), nil
		}
		if err != nil {
			return engine.Result{}, fmt.Errorf("reading Velero Restore %s/%s: %w", op.OADPNamespace, a.Name, err)
		}
		if err := op.CheckOwned(mirrorVerb, "Velero Restore", r); err != nil {
			return engine.Result{}, err
		}
		nar.MirrorRestore(r)
		return engine.Done(fmt.Sprintf("Mirrored Velero Restore %s (%s)", a.Name, phaseOr(string(r.Status.Phase))),
			map[string]string{"phase": string(r.Status.Phase)}), nil
	case "BackupStorageLocation":
		nabsl, err := asBSL(f.Name(), op)
		if err != nil {
			return engine.Result{}, err
		}
		if a.Name == "" {
			return engine.Done("no Velero BackupStorageLocation to mirror", nil), nil
		}
		b := &velerov1.BackupStorageLocation{}
		err = op.Client.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: a.Name}, b)
		if apierrors.IsNotFound(err) {
			return engine.Done(fmt.Sprintf("Velero BackupStorageLocation %s not found: nothing to mirror", a.Name), nil), nil
		}
		if err != nil {
			return engine.Result{}, fmt.Errorf("reading Velero BackupStorageLocation %s/%s: %w", op.OADPNamespace, a.Name, err)
		}
		if err := op.CheckOwned(mirrorVerb, "Velero BackupStorageLocation", b); err != nil {
			return engine.Result{}, err
		}
		nabsl.MirrorBSL(b)
		return engine.Done(fmt.Sprintf("Mirrored Velero BackupStorageLocation %s (%s)", a.Name, phaseOr(string(b.Status.Phase))),
			map[string]string{"phase": string(b.Status.Phase)}), nil
	default:
		return engine.Result{}, engine.Terminalf("SyncStatus: args.kind %q is not supported (supported: Backup, BackupStorageLocation, DeleteBackupRequest, Restore)", a.Kind)
	}
}
