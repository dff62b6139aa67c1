package restmapper_test

import (
	"testing"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nacflow/nacflow/internal/runtime/restmapper"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

type RESTMapperSuite struct{}

var _ = Suite(&RESTMapperSuite{})

// countingMapper counts the RESTMapping calls that reach it.
type countingMapper struct {
	*meta.DefaultRESTMapper
	calls int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls++
	return m.DefaultRESTMapper.RESTMapping(gk, versions...)
}

// A kind's mapping is asked of the underlying mapper once per version; a
// kind it does not know is asked again each time, and found once it is
// added.
func (s *RESTMapperSuite) TestMappingsKept(c *C) {
	backups := schema.GroupVersionKind{Group: "velero.io", Version: "v1", Kind: "Backup"}
	under := &countingMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper([]schema.GroupVersion{backups.GroupVersion()})}
	under.Add(backups, meta.RESTScopeNamespace)
	m := restmapper.NewCaching(under)

	first, err := m.RESTMapping(backups.GroupKind())
	c.Assert(err, IsNil)
	c.Assert(first.Resource.Resource, Equals, "backups")
	again, err := m.RESTMapping(backups.GroupKind())
	c.Assert(err, IsNil)
	c.Assert(again, Equals, first)
	_, err = m.RESTMapping(backups.GroupKind(), "v1")
	c.Assert(err, IsNil)
	_, err = m.RESTMapping(backups.GroupKind(), "v1")
	c.Assert(err, IsNil)
	c.Assert(under.calls, Equals, 2)

	restores := schema.GroupVersionKind{Group: "velero.io", Version: "v1", Kind: "Restore"}
	_, err = m.RESTMapping(restores.GroupKind())
	c.Assert(meta.IsNoMatchError(err), Equals, true)
	under.Add(restores, meta.RESTScopeNamespace)
	found, err := m.RESTMapping(restores.GroupKind())
	c.Assert(err, IsNil)
	c.Assert(found.Scope.Name(), Equals, meta.RESTScopeNameNamespace)
	c.Assert(under.calls, Equals, 4)
}
