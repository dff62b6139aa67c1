package v1alpha1_test

import (
	"strings"
	"testing"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

func Test(t *testing.T) { TestingT(t) }

type NamingSuite struct{}

var _ = Suite(&NamingSuite{})

const id = "ce241bd0-d16b-5123-8c48-620d5cb5b409"

func (s *NamingSuite) TestNACObjectName(c *C) {
	for _, tc := range []struct{ ns, name, want string }{
		{"demo", "sample", "demo-sample-" + id},
		// 25 characters are left for namespace and name: the name is cut first.
		{"team-a", strings.Repeat("n", 30), "team-a-" + strings.Repeat("n", 19) + "-" + id},
		// then the namespace.
		{strings.Repeat("s", 40), "nightly", strings.Repeat("s", 25) + "--" + id},
		{"Team", "Backup", "team-backup-" + id},
	} {
		got := v1alpha1.NACObjectName(tc.ns, tc.name, id)
		c.Check(got, Equals, tc.want, Commentf("%s/%s", tc.ns, tc.name))
		c.Check(len(got) <= 63, Equals, true)
		c.Check(strings.HasSuffix(got, id), Equals, true)
	}
}
