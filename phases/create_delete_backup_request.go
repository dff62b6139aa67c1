package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CreateDeleteBackupRequest asks Velero to delete a NonAdminBackup's backup,
// data included: a Velero DeleteBackupRequest in the OADP namespace for the
// Backup linked in status.veleroBackup, named like it (so there is never a
// second one for one backup), labelled velero.io/backup-name and
// velero.io/backup-uid as Velero's own CLI does, plus the NAC labels and
// annotations. An existing request with this operation's label is adopted.
// It records the link in status.veleroDeleteBackupRequest.
//
// When there is no Velero Backup (the NAB never got one, or it is already
// gone) there is nothing to ask: output name is "". Outputs: name. Errors: a
// terminal error when an object of that name exists without this
// operation's label; API errors are retryable.
type CreateDeleteBackupRequest struct {
	tools tools
}

// Name implements engine.Func.
func (*CreateDeleteBackupRequest) Name() string { return "CreateDeleteBackupRequest" }

// NewArgs implements engine.Func: the function takes no args.
func (*CreateDeleteBackupRequest) NewArgs() any { return &noArgs{} }

// Run implements engine.Func.
func (f *CreateDeleteBackupRequest) Run(ctx context.Context, op *engine.Operation, _ any) (engine.Result, error) {
	nab, err := asBackup(f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	none := engine.Done("no Velero Backup to delete", map[string]string{"name": ""})
	vb := nab.Status.VeleroBackup
	if vb == nil || vb.Name == "" {
		return none, nil
	}
	backup := &velerov1.Backup{}
	err = op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: vb.Name}, backup)
	if apierrors.IsNotFound(err) {
		return none, nil
	}
	if err != nil {
		return engine.Result{}, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, vb.Name, err)
	}

	labels, annotations := op.OwnerMeta()
	labels[velerov1.BackupNameLabel] = backup.Name
	labels[velerov1.BackupUIDLabel] = string(backup.UID)
	want := &velerov1.DeleteBackupRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name: backup.Name, Namespace: op.OADPNamespace,
			Labels: labels, Annotations: annotations,
		},
		Spec: velerov1.DeleteBackupRequestSpec{BackupName: backup.Name},
	}
	got, verb, err := createOrAdopt(ctx, op, f.tools.recent, "Velero DeleteBackupRequest", want)
	if err != nil {
		return engine.Result{}, err
	}
	dbr := got.(*velerov1.DeleteBackupRequest)
	nab.Status.VeleroDeleteBackupRequest = &v1alpha1.VeleroDeleteBackupRequest{
		NACUUID: op.UUID, Name: dbr.Name, Namespace: dbr.Namespace, Status: dbr.Status.DeepCopy(),
	}
	return engine.Done(fmt.Sprintf("%s Velero DeleteBackupRequest %s/%s", verb, dbr.Namespace, dbr.Name),
		map[string]string{"name": dbr.Name}), nil
}
