package tenantlocations_test

import (
	"context"
	"testing"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/tenantlocations"
)

func Test(t *testing.T) { TestingT(t) }

type MapSuite struct{}

var _ = Suite(&MapSuite{})

// data returns the map's entries (nil when there is no map).
func data(c *C, cl client.Client) map[string]string {
	m := &v1alpha1.TenantLocations{}
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: "oadp", Name: v1alpha1.TenantLocationsName}, m); err != nil {
		return nil
	}
	if m.Spec.Locations == nil {
		return map[string]string{}
	}
	return m.Spec.Locations
}

// newClient returns a fake client of nacflow's kinds.
func newClient(c *C) client.Client {
	s := runtime.NewScheme()
	c.Assert(v1alpha1.AddToScheme(s), IsNil)
	return fake.NewClientBuilder().WithScheme(s).Build()
}

func (s *MapSuite) TestRecordAndForget(c *C) {
	ctx := context.Background()
	cl := newClient(c)
	m := &tenantlocations.Map{Client: cl, Namespace: "oadp"}

	// Forgetting without a map is no error and makes none.
	c.Assert(m.Forget(ctx, "a-loc-1"), IsNil)
	c.Check(data(c, cl), IsNil)

	// The first record makes the map; others add to it.
	c.Assert(m.Record(ctx, "a-loc-1", "a"), IsNil)
	c.Assert(m.Record(ctx, "b-loc-2", "b"), IsNil)
	c.Check(data(c, cl), DeepEquals, map[string]string{"a-loc-1": "a", "b-loc-2": "b"})

	// Ensure keeps what is there.
	c.Assert(m.Ensure(ctx), IsNil)
	c.Check(data(c, cl), DeepEquals, map[string]string{"a-loc-1": "a", "b-loc-2": "b"})

	// Forget drops one entry only; twice is no error.
	c.Assert(m.Forget(ctx, "a-loc-1"), IsNil)
	c.Assert(m.Forget(ctx, "a-loc-1"), IsNil)
	c.Check(data(c, cl), DeepEquals, map[string]string{"b-loc-2": "b"})
}

func (s *MapSuite) TestEnsureMakesAnEmptyMap(c *C) {
	cl := newClient(c)
	m := &tenantlocations.Map{Client: cl, Namespace: "oadp"}
	c.Assert(m.Ensure(context.Background()), IsNil)
	c.Check(data(c, cl), DeepEquals, map[string]string{})
}

// With a Reader, Ensure writes nothing when the map exists: a restart makes
// no write.
func (s *MapSuite) TestEnsureReadsFirst(c *C) {
	cl := newClient(c)
	creates := 0
	counting := interceptor.NewClient(cl.(client.WithWatch), interceptor.Funcs{Create: func(ctx context.Context, w client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		creates++
		return w.Create(ctx, obj, opts...)
	}})
	m := &tenantlocations.Map{Client: counting, Reader: cl, Namespace: "oadp"}
	c.Assert(m.Ensure(context.Background()), IsNil)
	c.Assert(m.Ensure(context.Background()), IsNil)
	c.Check(creates, Equals, 1)
	c.Check(data(c, cl), DeepEquals, map[string]string{})
}
