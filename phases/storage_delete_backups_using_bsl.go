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

// SafetyExceptions implements engine.Excepted: the cascade deletes the
// tenant's own NonAdminBackups, in the operation's namespace.
func (*DeleteBackupsUsingBSL) SafetyExceptions() []engine.Exception {
	return []engine.Exception{{Verbs: []string{"delete"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminBackup").GroupKind(),
		Scope: engine.InOperationNamespace, Why: "a deleted location takes the tenant's backups that use it along (seed design non_admin_backupstoragelocation.md)"}}
}

// Run implements phaseFunc.
func (f *DeleteBackupsUsingBSL) Run(ctx context.Context, op *engine.Operation, nabsl *v1alpha1.NonAdminBackupStorageLocation, _ *noArgs) (engine.Result, error) {
	deleted, err := deleteReferring(ctx, op, nabsl.Namespace, &v1alpha1.NonAdminBackupList{}, func(o client.Object) bool {
		spec := o.(*v1alpha1.NonAdminBackup).Spec.BackupSpec
		return spec != nil && spec.StorageLocation == nabsl.Name
	}, nil)
	if err != nil {
		return engine.Result{}, err
	}
	return engine.Done(fmt.Sprintf("Asked %d NonAdminBackup(s) using %s to delete themselves", deleted, nabsl.Name),
		map[string]string{"deleted": fmt.Sprint(deleted)}), nil
}

// Doc implements engine.Documented.
func (*DeleteBackupsUsingBSL) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Deletes the NonAdminBackups of the location's namespace whose storageLocation names it.", Outputs: []string{"deleted: how many"}, Errors: apiRetried}
}
