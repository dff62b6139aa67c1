package phases

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// LimitActiveOperationsArgs are the args of LimitActiveOperations.
type LimitActiveOperationsArgs struct {
	// Max is how many operations of the same kind a namespace may have
	// running at once, this one excluded (at least 1).
	Max int `json:"max" doc:"at most this many other operations of the kind may be active in the namespace (>= 1)"`
}

// Validate implements engine.ArgsValidator.
func (a LimitActiveOperationsArgs) Validate() error {
	if a.Max < 1 {
		return fmt.Errorf("max: must be at least 1, got %d", a.Max)
	}
	return nil
}

// LimitActiveOperations is a per-tenant concurrency limit: it refuses the
// operation (terminal; Accepted=False/ActiveOperationsLimit, BackingOff, like
// every refusal) when the namespace already has max other
// NonAdminBackups (or NonAdminRestores, for a restore) whose plan is pending
// or running. It reads only the operation's own namespace. Output: active.
type LimitActiveOperations struct{}

// Name implements engine.Func.
func (*LimitActiveOperations) Name() string { return "LimitActiveOperations" }

// NewArgs implements engine.Func.
func (*LimitActiveOperations) NewArgs() any { return &LimitActiveOperationsArgs{} }

// Run implements engine.Func.
func (f *LimitActiveOperations) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*LimitActiveOperationsArgs)
	ns := op.Object.GetNamespace()
	var plans []*v1alpha1.PlanStatus
	var names []string
	kind := ""
	switch op.Object.(type) {
	case *v1alpha1.NonAdminBackup:
		kind = "NonAdminBackups"
		list := &v1alpha1.NonAdminBackupList{}
		if err := op.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return engine.Result{}, fmt.Errorf("listing NonAdminBackups in %s: %w", ns, err)
		}
		for i := range list.Items {
			plans, names = append(plans, list.Items[i].Status.Plan), append(names, list.Items[i].Name)
		}
	case *v1alpha1.NonAdminRestore:
		kind = "NonAdminRestores"
		list := &v1alpha1.NonAdminRestoreList{}
		if err := op.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return engine.Result{}, fmt.Errorf("listing NonAdminRestores in %s: %w", ns, err)
		}
		for i := range list.Items {
			plans, names = append(plans, list.Items[i].Status.Plan), append(names, list.Items[i].Name)
		}
	default:
		return engine.Result{}, engine.Terminalf("LimitActiveOperations serves NonAdminBackup and NonAdminRestore, not %T", op.Object)
	}
	active := 0
	for i, p := range plans {
		if names[i] == op.Object.GetName() || p == nil {
			continue
		}
		if p.State == v1alpha1.PlanPending || p.State == v1alpha1.PlanRunning {
			active++
		}
	}
	if active >= a.Max {
		return engine.Result{}, refuse(op.Object, v1alpha1.ReasonActiveOperationsLimit,
			fmt.Errorf("namespace %s already has %d active %s (the admin's limit is %d): try again when one has finished", ns, active, kind, a.Max))
	}
	return engine.Done(fmt.Sprintf("%d other active %s in %s (limit %d)", active, kind, ns, a.Max), map[string]string{"active": fmt.Sprint(active)}), nil
}
