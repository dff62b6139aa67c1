package phases

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

// restoreModifiers returns the resource modifiers Velero will apply to
// nar's items: the tenant's, as its requester's record holds them
// (requesterVerdict.recordedModifiers: the ConfigMap recorded at admission,
// unchanged since), else the admin's enforced ones (the accepted spec's,
// a ConfigMap of the OADP namespace: validation keeps no tenant's name
// there), nil when none. refusal is the tenant's modifiers' refusal.
// Errors: the API server's, and an admin's ConfigMap Velero could not read.
func restoreModifiers(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, who requesterVerdict) (m *tenantmodifiers.Modifiers, refusal, err error) {
	cm, m, refusal, err := who.recordedModifiers(ctx, op, nar)
	if err != nil || refusal != nil || cm != nil {
		return m, refusal, err
	}
	spec := nar.AcceptedRestoreSpec()
	if spec == nil || spec.ResourceModifier == nil || !strings.EqualFold(spec.ResourceModifier.Kind, "configmap") {
		return nil, nil, nil
	}
	admins := &corev1.ConfigMap{}
	if err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: spec.ResourceModifier.Name}, admins); err != nil {
		return nil, nil, fmt.Errorf("reading the enforced resource modifiers, ConfigMap %s/%s: %w", op.OADPNamespace, spec.ResourceModifier.Name, err)
	}
	m, err = tenantmodifiers.ParseAsVelero(admins)
	return m, nil, err
}

// asCreated is walkContents' view of an item as Velero creates it under m
// (tenantmodifiers.AsCreated).
func asCreated(m *tenantmodifiers.Modifiers) func(schema.GroupResource, map[string]any) (map[string]any, schema.GroupResource, string) {
	if m == nil {
		return nil
	}
	return func(gr schema.GroupResource, obj map[string]any) (map[string]any, schema.GroupResource, string) {
		return tenantmodifiers.AsCreated(m, obj, gr)
	}
}
