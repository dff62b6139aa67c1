package version

import (
	"runtime"
	"testing"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type VersionSuite struct{}

var _ = Suite(&VersionSuite{})

// The stamped version and commit win; the toolchain and platform are the
// running ones.
func (s *VersionSuite) TestStamped(c *C) {
	old, oldRev := version, revision
	defer func() { version, revision = old, oldRev }()
	version, revision = "v0.1.0-3-gabc1234", "abc1234def"
	i := Get()
	c.Check(i.Version, Equals, "v0.1.0-3-gabc1234")
	c.Check(i.Revision, Equals, "abc1234def")
	c.Check(i.GoVersion, Equals, runtime.Version())
	c.Check(i.String(), Equals, "v0.1.0-3-gabc1234 (commit abc1234def, "+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")")
}

// Unstamped, a version is still given.
func (s *VersionSuite) TestUnstamped(c *C) {
	old, oldRev := version, revision
	defer func() { version, revision = old, oldRev }()
	version, revision = "", ""
	c.Check(Get().Version, Matches, "devel.*")
	c.Check(Info{Version: "v1", GoVersion: "go1", Platform: "linux/amd64"}.String(), Equals, "v1 (go1, linux/amd64)")
}
