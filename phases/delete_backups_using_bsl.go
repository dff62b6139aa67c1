package phases

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// DeleteBackupsUsingBSL asks the NonAdminBackups of a
// NonAdminBackupStorageLocation's namespace that use it
// (spec.backupSpec.storageLocation) to delete themselves (seed design
// non_admin_backupstoragelocation.md, delete flow): their own finalize
// actions run asynchronously and do not block this one. It touches nothing
// outside the location's namespace.
//
// Output: deleted (how many). Errors: API errors are retryable.
type DeleteBackupsUsingBSL struct{}

// Name implements engine.Func.
func (*DeleteBackupsUsingBSL) Name() string { return "DeleteBackupsUsingBSL" }

// NewArgs implements engine.Func: the function takes no args.
func (*DeleteBackupsUsingBSL) NewArgs() any { return &noArgs{} }

// SafetyExceptions implements engine.Excepted: the cascade deletes the
// tenant's own NonAdminBackups, in the operation's namespace.
func (*DeleteBackupsUsingBSL) SafetyExceptions() []engine.Exception {
	return []engine.Exception{{Verbs: []string{"delete"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminBackup").GroupKind(),
		Scope: engine.InOperationNamespace, Why: "a deleted location takes the tenant's backups that use it along (seed design non_admin_backupstoragelocation.md)"}}
}

// Run implements engine.Func.
func (f *DeleteBackupsUsingBSL) Run(ctx context.Context, op *engine.Operation, _ any) (engine.Result, error) {
	nabsl, err := as[*v1alpha1.NonAdminBackupStorageLocation](f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	list := &v1alpha1.NonAdminBackupList{}
	if err := op.Client.List(ctx, list, client.InNamespace(nabsl.Namespace)); err != nil {
		return engine.Result{}, fmt.Errorf("listing NonAdminBackups in %s: %w", nabsl.Namespace, err)
	}
	deleted := 0
	for i := range list.Items {
		nab := &list.Items[i]
		if nab.Spec.BackupSpec == nil || nab.Spec.BackupSpec.StorageLocation != nabsl.Name {
			continue
		}
		if err := op.Client.Delete(ctx, nab); client.IgnoreNotFound(err) != nil {
			return engine.Result{}, fmt.Errorf("deleting NonAdminBackup %s/%s: %w", nab.Namespace, nab.Name, err)
		}
		deleted++
	}
	return engine.Done(fmt.Sprintf("Asked %d NonAdminBackup(s) using %s to delete themselves", deleted, nabsl.Name),
		map[string]string{"deleted": fmt.Sprint(deleted)}), nil
}
