package tenantlocations_test

import (
	"context"
	"testing"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/internal/tenantlocations"
)

func Test(t *testing.T) { TestingT(t) }

type MapSuite struct{}

var _ = Suite(&MapSuite{})

// data returns the map's entries (nil when there is no map).
func data(c *C, cl client.Client) map[string]string {
	cm := &corev1.ConfigMap{}
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: "oadp", Name: tenantlocations.ConfigMapName}, cm); err != nil {
		return nil
	}
	if cm.Data == nil {
		return map[string]string{}
	}
	return cm.Data
}

func (s *MapSuite) TestRecordAndForget(c *C) {
	ctx := context.Background()
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
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
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	m := &tenantlocations.Map{Client: cl, Namespace: "oadp"}
	c.Assert(m.Ensure(context.Background()), IsNil)
	c.Check(data(c, cl), DeepEquals, map[string]string{})
}
