//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "gopkg.in/check.v1"
)

// TestMain lets the test binary act as localcp's wrapper, as localcp does
// when it is started under a name in the wrappers' directory.
func TestMain(m *testing.M) {
	runWrapperIfCalledSo()
	os.Exit(m.Run())
}

type WrapperSuite struct {
	wrapDir, assets string
}

var _ = Suite(&WrapperSuite{})

// SetUpTest makes an assets directory with "sleep" and "echo" (links to
// the system's) and a wrappers' directory whose "sleep" and "echo" are this
// test binary.
func (s *WrapperSuite) SetUpTest(c *C) {
	self, err := os.Executable()
	c.Assert(err, IsNil)
	s.assets, s.wrapDir = c.MkDir(), c.MkDir()
	for _, name := range []string{"sleep", "echo"} {
		real, err := exec.LookPath(name)
		c.Assert(err, IsNil)
		c.Assert(os.Symlink(real, filepath.Join(s.assets, name)), IsNil)
		c.Assert(os.Symlink(self, filepath.Join(s.wrapDir, name)), IsNil)
	}
}

// env is the wrappers' environment with localcp's pid set to pid.
func (s *WrapperSuite) env(pid int, extra ...string) []string {
	return append(append(os.Environ(), envWrapDir+"="+s.wrapDir, envAssets+"="+s.assets, envPID+"="+strconv.Itoa(pid)), extra...)
}

func (s *WrapperSuite) TestExecsTheRealBinary(c *C) {
	cmd := exec.Command(filepath.Join(s.wrapDir, "echo"), "hello", "there")
	cmd.Env = s.env(os.Getpid())
	out, err := cmd.CombinedOutput()
	c.Check(err, IsNil)
	c.Check(string(out), Equals, "hello there\n")

	// argv[0] stays the wrapper's path, as with a plain symlink (Velero runs
	// its built-in plugins as os.Args[0]).
	sh, err := exec.LookPath("sh")
	c.Assert(err, IsNil)
	c.Assert(os.Symlink(sh, filepath.Join(s.assets, "sh")), IsNil)
	self, _ := os.Executable()
	c.Assert(os.Symlink(self, filepath.Join(s.wrapDir, "sh")), IsNil)
	cmd = exec.Command(filepath.Join(s.wrapDir, "sh"), "-c", `echo "$0"`)
	cmd.Env = s.env(os.Getpid())
	out, err = cmd.CombinedOutput()
	c.Check(err, IsNil)
	c.Check(string(out), Equals, filepath.Join(s.wrapDir, "sh")+"\n")
}

func (s *WrapperSuite) TestRefusesWhenLocalcpIsGoneOrStopping(c *C) {
	cmd := exec.Command(filepath.Join(s.wrapDir, "echo"), "hello")
	cmd.Env = s.env(1) // "localcp" is neither the parent nor the grandparent
	out, err := cmd.CombinedOutput()
	c.Check(err, ErrorMatches, "exit status 1")
	c.Check(string(out), Matches, `localcp wrapper of echo: localcp \(pid 1\) is gone: not starting\n`)

	cmd = exec.Command(filepath.Join(s.wrapDir, "echo"), "hello")
	cmd.Env = s.env(os.Getpid(), envStopping+"=1")
	out, err = cmd.CombinedOutput()
	c.Check(err, ErrorMatches, "exit status 1")
	c.Check(string(out), Equals, "localcp is stopping: not starting echo\n")
}

// TestChildDiesWithItsParent: the wrapped process gets SIGKILL when its
// parent dies of SIGKILL. Its parent is a shell, a child of this test (as
// Velero is localcp's child and the parent of a wrapped plugin).
func (s *WrapperSuite) TestChildDiesWithItsParent(c *C) {
	sh := exec.Command("sh", "-c", `"$0" 300 & echo $!; wait`, filepath.Join(s.wrapDir, "sleep"))
	sh.Env = s.env(os.Getpid())
	stdout, err := sh.StdoutPipe()
	c.Assert(err, IsNil)
	c.Assert(sh.Start(), IsNil)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	c.Assert(err, IsNil)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	c.Assert(err, IsNil)
	// Once it runs the real sleep (after the wrapper's exec), kill the shell.
	real, _ := filepath.EvalSymlinks(filepath.Join(s.assets, "sleep"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if exe == real {
			break
		}
		c.Assert(time.Now().Before(deadline), Equals, true, Commentf("pid %d runs %q, not %s", pid, exe, real))
		time.Sleep(10 * time.Millisecond)
	}
	c.Assert(sh.Process.Kill(), IsNil)
	_ = sh.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')'):]), " Z ") {
			return // gone, or dead and waiting to be reaped
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			c.Fatalf("pid %d (wrapped sleep) outlived its parent by 5s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
