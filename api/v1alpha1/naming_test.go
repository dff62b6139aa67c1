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

// TestRestoreTestSandbox: one name per namespace, "<ns>-rt-<8 hex>", at
// most 63 characters, a valid namespace name; namespaces sharing a long
// prefix get different sandboxes.
func (s *NamingSuite) TestRestoreTestSandbox(c *C) {
	c.Check(v1alpha1.RestoreTestSandbox("team-a"), Matches, `team-a-rt-[0-9a-f]{8}`)
	c.Check(v1alpha1.RestoreTestSandbox("team-a"), Equals, v1alpha1.RestoreTestSandbox("team-a"))
	c.Check(v1alpha1.RestoreTestSandbox("team-a"), Not(Equals), v1alpha1.RestoreTestSandbox("team-b"))
	long1, long2 := strings.Repeat("a", 62)+"1", strings.Repeat("a", 62)+"2"
	for _, ns := range []string{long1, long2, strings.Repeat("b", 54) + "-x", "x"} {
		got := v1alpha1.RestoreTestSandbox(ns)
		c.Check(len(got) <= 63, Equals, true, Commentf(got))
		c.Check(got, Matches, `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, Commentf(got))
		c.Check(strings.Contains(got, "--"), Equals, false, Commentf(got))
	}
	c.Check(v1alpha1.RestoreTestSandbox(long1), Not(Equals), v1alpha1.RestoreTestSandbox(long2))
}

// TestLocationNACUUIDIsAName: a location's derived NACUUID is
// "<namespace>-<name>-<uuid>" (OADP NAC's shape) and names its objects; a
// bare UUID (what nacflow recorded for locations before) still names the
// objects NACObjectName made; other kinds keep the bare UUID.
func (s *NamingSuite) TestLocationNACUUIDIsAName(c *C) {
	loc := &v1alpha1.NonAdminBackupStorageLocation{}
	loc.Namespace, loc.Name, loc.UID = "team-a", "mine", "0a1b2c3d-0000-4000-8000-000000000001"
	bare := v1alpha1.NACUUIDOf(loc.UID)
	derived := v1alpha1.DerivedNACUUID(loc)
	c.Check(derived, Equals, "team-a-mine-"+bare)
	c.Check(v1alpha1.OperationObjectName(loc, derived), Equals, derived)
	c.Check(v1alpha1.OperationObjectName(loc, bare), Equals, "team-a-mine-"+bare)
	const oadp = "team-a-mine-96dfa8b7-3f6f-4c8d-a168-8527b00fbed8"
	c.Check(v1alpha1.OperationObjectName(loc, oadp), Equals, oadp)

	long := &v1alpha1.NonAdminBackupStorageLocation{}
	long.Namespace, long.Name, long.UID = strings.Repeat("n", 30), "location", loc.UID
	c.Check(len(v1alpha1.DerivedNACUUID(long)) <= 63, Equals, true)
	c.Check(strings.HasSuffix(v1alpha1.DerivedNACUUID(long), bare), Equals, true)

	nab := &v1alpha1.NonAdminBackup{}
	nab.Namespace, nab.Name, nab.UID = "team-a", "mine", loc.UID
	c.Check(v1alpha1.DerivedNACUUID(nab), Equals, bare)
	c.Check(v1alpha1.OperationObjectName(nab, bare), Equals, "team-a-mine-"+bare)
}
