package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/label"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CreateDeleteBackupRequest asks Velero to delete a NonAdminBackup's backup,
// data included: a Velero DeleteBackupRequest in the OADP namespace for the
// operation's own Velero Backup, named like it (so there is never a second
// one for one backup), labelled velero.io/backup-name and
// velero.io/backup-uid as Velero's own CLI does, plus the NAC labels and
// annotations. An existing request with this operation's label is adopted.
// It records the link in status.veleroDeleteBackupRequest.
//
// The Backup is the one carrying the operation's NACUUID label and made for
// the NAB (its origin namespace and name annotations), found in the OADP
// namespace: never one named by status alone. A status.veleroBackup.name
// that names another is corrected, and the message says so.
//
// When there is no Velero Backup (the NAB never got one, or it is already
// gone) there is nothing to ask: output name is "". Outputs: name. Errors: a
// terminal error when an object of that name exists without this
// operation's label; API errors are retryable.
type CreateDeleteBackupRequest struct {
	tools tools
}

// Run implements phaseFunc.
func (f *CreateDeleteBackupRequest) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, _ *noArgs) (engine.Result, error) {
	none := engine.Done("no Velero Backup to delete", map[string]string{"name": ""})
	backup, err := ownBackup(ctx, op, nab)
	if err != nil || backup == nil {
		return none, err
	}
	corrected := ""
	if vb := nab.Status.VeleroBackup; vb != nil && vb.Name != backup.Name {
		corrected = fmt.Sprintf(" (status.veleroBackup.name %q corrected: this operation's Velero Backup is %s)", vb.Name, backup.Name)
		vb.Name, vb.Namespace, vb.NACUUID = backup.Name, backup.Namespace, op.UUID
	}

	want := &velerov1.DeleteBackupRequest{
		ObjectMeta: op.ObjectMeta(backup.Name),
		Spec:       velerov1.DeleteBackupRequestSpec{BackupName: backup.Name},
	}
	// As Velero labels its own requests: a label value holds at most 63
	// characters, and a scheduled run's name is longer.
	want.Labels[velerov1.BackupNameLabel] = label.GetValidName(backup.Name)
	want.Labels[velerov1.BackupUIDLabel] = string(backup.UID)
	got, verb, err := createOrAdopt(ctx, op, f.tools.recent, "Velero DeleteBackupRequest", want)
	if err != nil {
		return engine.Result{}, err
	}
	dbr := got.(*velerov1.DeleteBackupRequest)
	nab.Status.VeleroDeleteBackupRequest = &v1alpha1.VeleroDeleteBackupRequest{
		NACUUID: op.UUID, Name: dbr.Name, Namespace: dbr.Namespace, Status: dbr.Status.DeepCopy(),
	}
	return engine.Done(fmt.Sprintf("%s Velero DeleteBackupRequest %s/%s%s", verb, dbr.Namespace, dbr.Name, corrected),
		map[string]string{"name": dbr.Name}), nil
}

// ownBackup returns the operation's own Velero Backup of nab — the one in
// the OADP namespace carrying op's NACUUID label and made for nab (its
// origin namespace and name annotations), read from the API server — or
// nil when there is none. Of several (a label written into Backups synced
// from the tenant's bucket), the oldest. Errors are the API server's.
func ownBackup(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup) (*velerov1.Backup, error) {
	list := &velerov1.BackupList{}
	if err := listLabelled(ctx, op.APIReader, op, list, v1alpha1.NabOriginNACUUIDLabel, op.UUID); err != nil {
		return nil, fmt.Errorf("listing the Velero Backups of %s: %w", op.UUID, err)
	}
	var own *velerov1.Backup
	for i := range list.Items {
		b := &list.Items[i]
		if !op.Owns(b) || b.Annotations[v1alpha1.NabOriginNameAnnotation] != nab.Name {
			continue
		}
		if own == nil || b.CreationTimestamp.Before(&own.CreationTimestamp) {
			own = b
		}
	}
	return own, nil
}

// Doc implements engine.Documented.
func (*CreateDeleteBackupRequest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Asks Velero to delete the NonAdminBackup's backup and its data: one DeleteBackupRequest named like the backup, with Velero's backup-name/backup-uid labels; nothing when there is no Velero Backup. The backup is the one carrying this operation's NACUUID and made for this NAB, never one named by status alone (a status.veleroBackup.name that disagrees is corrected, and the message says so).",
		Outputs: []string{`name: the DeleteBackupRequest ("" when there was nothing to delete)`},
		Errors:  "a name held by another operation's object is terminal; " + apiRetried,
	}
}
