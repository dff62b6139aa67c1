package phases

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// Recheck periods of WaitFor. Watches on Velero objects wake the controller
// sooner; these are only the fallback.
const (
	// recheckMissing is used while an object the operation just created is
	// not yet in the cache.
	recheckMissing = 2 * time.Second
	// recheckRunning is used while Velero works on an object.
	recheckRunning = 30 * time.Second
)

// WaitForArgs are the args of WaitFor.
type WaitForArgs struct {
	// Kind of the object to wait for: Backup (a Velero Backup in the OADP
	// namespace).
	Kind string `json:"kind"`
	// Name of the object, usually {{ .Phases.<create phase>.Output.name }}.
	Name string `json:"name"`
}

// WaitFor waits until an object is ready, after Velero's "wait for additional
// items to be ready" design: a per-kind readiness check, re-run until it
// passes or the phase's timeout expires (the runner applies timeout and
// onTimeout). Objects are always read in the OADP namespace.
//
// Readiness: Backup — its phase is terminal (Completed, PartiallyFailed,
// Failed, FailedValidation). Output: phase. Errors: an unknown kind or an
// empty name is terminal; API errors are retryable.
type WaitFor struct {
	clients Clients
}

// Name implements engine.Func.
func (*WaitFor) Name() string { return "WaitFor" }

// NewArgs implements engine.Func.
func (*WaitFor) NewArgs() any { return &WaitForArgs{} }

// Run implements engine.Func.
func (f *WaitFor) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*WaitForArgs)
	if a.Name == "" {
		return engine.Result{}, engine.Terminalf("WaitFor: args.name is empty")
	}
	switch a.Kind {
	case "Backup":
		b := &velerov1.Backup{}
		err := f.clients.Client.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: a.Name}, b)
		if apierrors.IsNotFound(err) {
			return engine.Wait(fmt.Sprintf("Velero Backup %s not found yet", a.Name), recheckMissing), nil
		}
		if err != nil {
			return engine.Result{}, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, a.Name, err)
		}
		if !v1alpha1.BackupFinished(b.Status.Phase) {
			phase := string(b.Status.Phase)
			if phase == "" {
				phase = "not started"
			}
			return engine.Wait(fmt.Sprintf("Velero Backup %s is %s", a.Name, phase), recheckRunning), nil
		}
		return engine.Done(fmt.Sprintf("Velero Backup %s is %s", a.Name, b.Status.Phase),
			map[string]string{"phase": string(b.Status.Phase)}), nil
	default:
		return engine.Result{}, engine.Terminalf("WaitFor: args.kind %q is not supported (supported: Backup)", a.Kind)
	}
}
