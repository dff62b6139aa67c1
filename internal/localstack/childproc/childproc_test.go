package childproc_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
)

func Test(t *testing.T) { TestingT(t) }

type ProcessSuite struct{}

var _ = Suite(&ProcessSuite{})

// A child that ends on SIGTERM is stopped without a kill, its output and
// environment reach the log, and Exited reports it gone.
func (s *ProcessSuite) TestStartStop(c *C) {
	log := filepath.Join(c.MkDir(), "child.log")
	p, err := childproc.Start("sh", log, []string{"CHILDPROC_WORD=hello"}, "/bin/sh", "-c", "echo $CHILDPROC_WORD; exec sleep 60")
	c.Assert(err, IsNil)
	c.Assert(p.LogPath(), Equals, log)
	_, gone := p.Exited()
	c.Assert(gone, Equals, false)
	waitLog(c, log, "hello\n")
	c.Assert(p.Stop(10*time.Second), Equals, false)
	_, gone = p.Exited()
	c.Assert(gone, Equals, true)
}

// A child that ignores SIGTERM is killed after the grace period.
func (s *ProcessSuite) TestStopKills(c *C) {
	log := filepath.Join(c.MkDir(), "child.log")
	p, err := childproc.Start("sh", log, nil, "/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done")
	c.Assert(err, IsNil)
	waitLog(c, log, "ready\n") // the trap is set
	c.Assert(p.Stop(200*time.Millisecond), Equals, true)
}

// A nil process stops as a no-op; a missing binary is exec's error.
func (s *ProcessSuite) TestNilAndMissing(c *C) {
	var p *childproc.Process
	c.Assert(p.Stop(time.Second), Equals, false)
	_, err := childproc.Start("none", filepath.Join(c.MkDir(), "none.log"), nil, "/nonexistent/binary")
	c.Assert(err, NotNil)
}

func (s *ProcessSuite) TestFreePort(c *C) {
	port, err := childproc.FreePort()
	c.Assert(err, IsNil)
	c.Assert(port > 0, Equals, true)
}

// waitLog waits up to 10 s for the file log to hold want.
func waitLog(c *C, log, want string) {
	deadline := time.Now().Add(10 * time.Second)
	for data, _ := os.ReadFile(log); string(data) != want; data, _ = os.ReadFile(log) {
		c.Assert(time.Now().Before(deadline), Equals, true, Commentf("log: %q", data))
		time.Sleep(10 * time.Millisecond)
	}
}
