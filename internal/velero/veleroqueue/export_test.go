package veleroqueue

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// NewTurnsFakeClient returns a fake client holding objs with the cache
// indexes Turns reads, for unit tests of the turns.
func NewTurnsFakeClient(scheme *runtime.Scheme, objs ...client.Object) client.WithWatch {
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.NonAdminBackup{}, &v1alpha1.NonAdminRestore{})
	for _, l := range lanes {
		b = b.WithIndex(l.newVelero(), l.veleroIndex, func(obj client.Object) []string {
			if ns := l.origin(obj); ns != "" {
				return []string{ns}
			}
			return nil
		}).WithIndex(l.newWaiting(), l.waitingIndex, func(obj client.Object) []string {
			if o, ok := obj.(v1alpha1.Object); ok && WaitingTurn(o) != nil {
				return []string{turnsAll, obj.GetNamespace()}
			}
			return nil
		})
	}
	return b.Build()
}
