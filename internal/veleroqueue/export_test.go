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
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.NonAdminBackup{})
	for _, i := range turnsIndexes {
		b = b.WithIndex(i.obj, i.field, i.value)
	}
	return b.Build()
}
