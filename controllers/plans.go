package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/patch"
)

// planKeeper is where a kind's plans live between reconciles: in the
// object's status.plan (statusPlans) or, for a CRD without it, in a Secret
// of the OADP namespace (*planstore.PlanStore).
type planKeeper interface {
	// Load puts obj's stored plan on obj, if it is kept apart, and returns
	// what Write compares with (nil: none). Errors: the API server's, a
	// stored plan that does not decode.
	Load(ctx context.Context, obj v1alpha1.Object) ([]byte, error)
	// Write patches obj's status (with c) from before's and stores its
	// plan. Errors: the API server's.
	Write(ctx context.Context, c client.Client, obj v1alpha1.Object, before client.Object, stored []byte) error
	// Forget removes obj's plan before its finalizer goes. Errors: the API
	// server's.
	Forget(ctx context.Context, obj v1alpha1.Object) error
}

// plans returns where d's kind keeps its plans: d.Plans, or status.plan.
func (d *Deps) plans() planKeeper {
	if d.Plans == nil {
		return statusPlans{}
	}
	return d.Plans
}

// statusPlans keeps plans in status.plan: loaded with the object, written
// with its status, gone with it.
type statusPlans struct{}

func (statusPlans) Load(context.Context, v1alpha1.Object) ([]byte, error) { return nil, nil }

func (statusPlans) Write(ctx context.Context, c client.Client, obj v1alpha1.Object, before client.Object, _ []byte) error {
	if p := obj.GetPlan(); p.IsSummary() {
		if b, ok := before.(v1alpha1.Object); ok && equality.Semantic.DeepEqual(p, b.GetPlan()) {
			// The cache holds only the ended plan's summary: the write
			// leaves the API server's whole plan as it is.
			return patch.StatusExcept(ctx, c, obj, before, "plan")
		}
		// A plan that has just ended with every phase plain is its
		// summary (engine.Compact): written whole.
	}
	return patch.Status(ctx, c, obj, before)
}

func (statusPlans) Forget(context.Context, v1alpha1.Object) error { return nil }
