// Package linkednab creates a NonAdminBackup for a Velero Backup that exists
// already (a backup synced from object storage, a schedule's run) and links
// it in status, the one record AdoptVeleroBackup trusts.
package linkednab

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Create creates nab for the existing Velero Backup b and records b
// (NACUUID nacuuid) in nab's status.veleroBackup, the link the adopt
// action honours: it goes where only the controller writes (the status
// subresource: tenant roles cannot), so the sync label alone never adopts a
// backup. created is false, with no error, when a NAB of that name exists.
// Errors are the API server's, wrapped with the NAB and Backup named.
func Create(ctx context.Context, c client.Client, nab *v1alpha1.NonAdminBackup, b *velerov1.Backup, nacuuid string) (created bool, err error) {
	if err := c.Create(ctx, nab); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating NonAdminBackup %s/%s from Velero Backup %s: %w", nab.Namespace, nab.Name, b.Name, err)
	}
	before := nab.DeepCopy()
	nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{NACUUID: nacuuid, Name: b.Name, Namespace: b.Namespace}
	if err := c.Status().Patch(ctx, nab, client.MergeFrom(before)); err != nil {
		return false, fmt.Errorf("recording Velero Backup %s in NonAdminBackup %s/%s: %w", b.Name, nab.Namespace, nab.Name, err)
	}
	return true, nil
}
