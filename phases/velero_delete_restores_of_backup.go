package phases

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// DeleteRestoresOfBackup deletes the NonAdminRestores of the NonAdminBackup's
// own namespace whose restoreSpec.backupName names it: a backup deleted for
// good takes the restores made from it along (OADP NAC). Each one's own
// finalize action then removes its Velero Restore. It touches nothing
// outside the NonAdminBackup's namespace.
//
// Output: deleted (how many). Errors: API errors are retryable.
type DeleteRestoresOfBackup struct{}

// SafetyExceptions implements engine.Excepted: the cascade deletes the
// tenant's own NonAdminRestores, in the operation's namespace.
func (*DeleteRestoresOfBackup) SafetyExceptions() []engine.Exception {
	return []engine.Exception{{Verbs: []string{"delete"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(),
		Scope: engine.InOperationNamespace, Why: "a backup deleted for good takes the tenant's restores made from it along (OADP NAC)"}}
}

// Run implements phaseFunc.
func (f *DeleteRestoresOfBackup) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, _ *noArgs) (engine.Result, error) {
	deleted, err := deleteReferring(ctx, op, nab.Namespace, &v1alpha1.NonAdminRestoreList{}, func(o client.Object) bool {
		spec := o.(*v1alpha1.NonAdminRestore).AcceptedRestoreSpec()
		return spec != nil && spec.BackupName == nab.Name
	}, apierrors.IsConflict)
	if err != nil {
		return engine.Result{}, err
	}
	return engine.Done(fmt.Sprintf("Deleted %d NonAdminRestore(s) of NonAdminBackup %s", deleted, nab.Name),
		map[string]string{"deleted": fmt.Sprint(deleted)}), nil
}

// Doc implements engine.Documented.
func (*DeleteRestoresOfBackup) Doc() engine.FuncDoc {
	return engine.FuncDoc{Summary: "Deletes the NonAdminRestores of the NonAdminBackup's namespace whose backupName names it.", Outputs: []string{"deleted: how many"}, Errors: apiRetried}
}
