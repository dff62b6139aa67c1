package phases

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
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

// limitedKinds are the NAC kinds LimitActiveOperations serves: those whose
// objects are one-off operations, which are the kinds that take a turn in a
// Velero queue (the registry's Kind.VeleroQueue).
var limitedKinds = v1alpha1.QueuedKindNames()

// LimitActiveOperations is a per-tenant concurrency limit: it refuses the
// operation (terminal; Accepted=False/ActiveOperationsLimit, BackingOff, like
// every refusal) when the namespace already has max other
// NonAdminBackups (or NonAdminRestores, for a restore) whose plan is pending
// or running — a scheduled run's NonAdminBackup counts while its Velero
// Backup has not finished. Operations checked at the same moment on parallel workers do
// not all pass: the count also holds the operations it admitted within the
// last minute that the cache does not show yet, checked and recorded under
// one lock (an in-memory ledger of the controller, injected). It reads only
// the operation's own namespace. Output: active.
type LimitActiveOperations struct {
	ledger *admissions
}

// Run implements phaseFunc.
func (f *LimitActiveOperations) Run(ctx context.Context, op *engine.Operation, _ engine.Object, a *LimitActiveOperationsArgs) (engine.Result, error) {
	ns := op.Object.GetNamespace()
	k, _ := v1alpha1.KindOf(op.Object)
	if !slices.Contains(limitedKinds, k.Kind) {
		return engine.Result{}, engine.Terminalf("LimitActiveOperations serves NonAdminBackup and NonAdminRestore, not %T", op.Object)
	}
	kind := k.Kind + "s"
	list := k.NewList()
	if err := op.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return engine.Result{}, fmt.Errorf("listing %s in %s: %w", kind, ns, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return engine.Result{}, fmt.Errorf("reading the %s of %s: %w", kind, ns, err)
	}
	var plans []*v1alpha1.PlanStatus
	var names []string
	for _, item := range items {
		obj := item.(v1alpha1.Object)
		p := obj.GetPlan()
		if nab, ok := obj.(*v1alpha1.NonAdminBackup); ok && scheduledRunActive(nab) {
			// A scheduled run's plan (adopt) ends at once; Velero's
			// backup is what runs.
			p = &v1alpha1.PlanStatus{State: v1alpha1.PlanRunning}
		}
		plans, names = append(plans, p), append(names, obj.GetName())
	}
	cached := make(map[string]planActivity, len(plans))
	for i, p := range plans {
		switch {
		case p == nil:
			cached[names[i]] = planNone
		case p.State == v1alpha1.PlanPending || p.State == v1alpha1.PlanRunning:
			cached[names[i]] = planActive
		default:
			cached[names[i]] = planEnded
		}
	}
	if f.ledger == nil {
		return engine.Result{}, engine.Terminalf("LimitActiveOperations has no admission ledger: build it with phases.NewRegistry")
	}
	active, admitted := f.ledger.admit(ns+"/"+kind, op.Object.GetName(), cached, a.Max)
	if !admitted {
		return engine.Result{}, refuse(op.Object, v1alpha1.ReasonActiveOperationsLimit,
			fmt.Errorf("namespace %s already has %d active %s (the admin's limit is %d): try again when one has finished", ns, active, kind, a.Max))
	}
	return engine.Done(fmt.Sprintf("%d other active %s in %s (limit %d)", active, kind, ns, a.Max), map[string]string{"active": fmt.Sprint(active)}), nil
}

// scheduledRunActive reports whether nab is the NonAdminBackup of a
// NonAdminSchedule's run whose Velero Backup has not finished.
func scheduledRunActive(nab *v1alpha1.NonAdminBackup) bool {
	if _, scheduled := nab.Labels[v1alpha1.NasOriginNACUUIDLabel]; !scheduled {
		return false
	}
	vb := nab.Status.VeleroBackup
	return vb != nil && (vb.Status == nil || !v1alpha1.BackupFinished(vb.Status.Phase))
}

// Doc implements engine.Documented.
func (*LimitActiveOperations) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "A per-tenant concurrency limit: refuses the operation when its namespace already has args.max other NonAdminBackups (or NonAdminRestores) whose plan is pending or running.",
		Outputs: []string{"active: how many others were active"},
		Errors:  "over the limit is terminal; " + apiRetried,
	}
}
