package phases

import (
	"fmt"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// outsideOADPNamespace returns the refusal of op's NAC object when it was
// made in the OADP namespace, nil elsewhere: NAC objects are served in
// tenants' namespaces only (OADP NAC), never in the one holding Velero's
// objects.
func outsideOADPNamespace(op *engine.Operation) error {
	if op.Object.GetNamespace() != op.OADPNamespace {
		return nil
	}
	kind := fmt.Sprintf("%T", op.Object)
	if k, ok := v1alpha1.KindOf(op.Object); ok {
		kind = k.Kind
	}
	return fmt.Errorf("metadata.namespace: %ss are not served in the OADP namespace %s", kind, op.OADPNamespace)
}
