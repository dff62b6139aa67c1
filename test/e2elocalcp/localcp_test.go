// Package e2elocalcp checks how bin/localcp, the stack of `make run`, fails
// and stops (LocalCPSuite), each test on stacks of its own, beside the
// other end-to-end packages.
package e2elocalcp

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

// LocalCPSuite checks how bin/localcp, the stack of `make run`, fails and
// stops: a taken port is named at once; SIGINT while it waits for the
// default location stops everything; a location Velero refuses ends the run
// with Velero's reason and the fix; and `kill -9` of localcp leaves no
// process behind. Each test runs its own localcp and leaves nothing running.
type LocalCPSuite struct {
	root, assets, bin string
	run               *lcRun         // the test's localcp, stopped by TearDownTest
	procs             map[int]string // its processes as the test recorded them, killed by TearDownTest if left
}

var _ = Suite(&LocalCPSuite{})

func (s *LocalCPSuite) SetUpSuite(c *C) {
	root := e2estack.RepoRoot(c)
	s.root = root
	var err error
	s.assets, err = filepath.Abs(e2estack.Assets(root))
	c.Assert(err, IsNil)
	s.bin = c.MkDir()
	for _, b := range []struct{ out, pkg string }{{"nac", "./cmd/nac"}, {"localcp", "./hack/localcp"}} {
		build := exec.Command("go", "build", "-o", filepath.Join(s.bin, b.out), b.pkg)
		build.Dir = root
		out, err := build.CombinedOutput()
		c.Assert(err, IsNil, Commentf("go build %s: %s", b.pkg, out))
	}
}

// TearDownTest stops what the test left running, even when it failed: its
// localcp and every process of its stack (SIGKILL), so that the next test
// or suite can start Velero.
func (s *LocalCPSuite) TearDownTest(c *C) {
	r, procs := s.run, s.procs
	s.run, s.procs = nil, nil
	if procs == nil {
		procs = map[int]string{}
	}
	if r != nil {
		if _, done := r.exitErr(); !done {
			for pid, cmd := range descendants(r.cmd.Process.Pid) {
				procs[pid] = cmd
			}
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	}
	if ok, _ := allGone(procs); ok {
		return
	}
	for pid, cmd := range procs {
		if cmdline(pid) == cmd {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) { return allGone(procs) })
}

// lcRun is one localcp process and its output.
type lcRun struct {
	cmd    *exec.Cmd
	dir    string        // its --dir
	exited chan struct{} // closed once it exited and its output is read
	err    error         // Wait's error, once exited is closed

	mu  sync.Mutex
	out bytes.Buffer
}

// start runs localcp on dir (its --dir) with flags, from the repository
// root (for config/crd/bases), and the controller nac with controllerArgs
// (nil: no fixed ports).
func (s *LocalCPSuite) start(c *C, dir string, flags []string, controllerArgs ...string) *lcRun {
	if controllerArgs == nil {
		controllerArgs = []string{"--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:0"}
	}
	args := append([]string{"--assets", s.assets, "--dir", dir}, flags...)
	args = append(append(args, "--", filepath.Join(s.bin, "nac"), "--oadp-namespace", "openshift-adp"), controllerArgs...)
	r := &lcRun{cmd: exec.Command(filepath.Join(s.bin, "localcp"), args...), dir: dir, exited: make(chan struct{})}
	r.cmd.Dir = s.root
	r.cmd.SysProcAttr = childproc.SysProcAttr() // killed with the test binary
	pr, pw, err := os.Pipe()
	c.Assert(err, IsNil)
	r.cmd.Stdout, r.cmd.Stderr = pw, pw
	c.Assert(r.cmd.Start(), IsNil)
	pw.Close()
	s.run = r
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 32*1024)
		for {
			n, err := pr.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				pr.Close()
				return
			}
		}
	}()
	go func() {
		r.err = r.cmd.Wait()
		// Its children do not hold the pipe: the end of its output follows
		// at once (a bound, should one hold it).
		select {
		case <-drained:
		case <-time.After(2 * time.Second):
		}
		close(r.exited)
	}()
	return r
}

// output returns what localcp printed so far.
func (r *lcRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// exitErr returns Wait's error and true once localcp has exited.
func (r *lcRun) exitErr() (error, bool) {
	select {
	case <-r.exited:
		return r.err, true
	default:
		return nil, false
	}
}

// waitFor waits until localcp printed want, failing when it exits first or
// after timeout.
func (r *lcRun) waitFor(c *C, want string, timeout time.Duration) {
	deadline := time.After(timeout)
	for !strings.Contains(r.output(), want) {
		select {
		case <-r.exited:
			if strings.Contains(r.output(), want) {
				return
			}
			c.Fatalf("localcp exited (%v) before printing %q:\n%s", r.err, want, r.output())
		case <-deadline:
			c.Fatalf("localcp did not print %q within %s:\n%s", want, timeout, r.output())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitExit waits up to timeout for localcp to exit and returns how long it
// took and its exit code.
func (r *lcRun) waitExit(c *C, timeout time.Duration) (time.Duration, int) {
	t0 := time.Now()
	select {
	case <-r.exited:
	case <-time.After(timeout):
		c.Fatalf("localcp did not exit within %s:\n%s", timeout, r.output())
	}
	took := time.Since(t0)
	code := 0
	if ee, ok := r.err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if r.err != nil {
		c.Fatalf("waiting for localcp: %v", r.err)
	}
	return took, code
}

// descendants returns the command lines of pid's descendants by pid, read
// from /proc/PID/task/*/children, recursively.
func descendants(pid int) map[int]string {
	found := map[int]string{}
	var walk func(int)
	walk = func(p int) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, t := range tasks {
			raw, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(raw)) {
				child, err := strconv.Atoi(f)
				if err != nil || found[child] != "" {
					continue
				}
				found[child] = cmdline(child)
				walk(child)
			}
		}
	}
	walk(pid)
	return found
}

// cmdline returns the command line of pid, arguments joined by spaces ("" if
// it is gone or a zombie).
func cmdline(pid int) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
}

// allGone reports whether every process of procs (pid → command line) has
// ended: no /proc entry, a zombie (dead, not yet reaped), or its pid reused
// by another command. The message lists those still running.
func allGone(procs map[int]string) (bool, string) {
	var left []string
	for pid, cmd := range procs {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if st := string(stat); strings.Contains(st[strings.LastIndexByte(st, ')')+1:], " Z ") {
			continue
		}
		if cmdline(pid) != cmd {
			continue
		}
		left = append(left, fmt.Sprintf("%d %.150s", pid, cmd))
	}
	sort.Strings(left)
	return len(left) == 0, "still running:\n" + strings.Join(left, "\n")
}

// checkStack checks that procs holds the whole stack, by the executables
// the processes run: etcd, kube-apiserver, the store and Velero from the
// assets, and the controller when controller is true.
func (s *LocalCPSuite) checkStack(c *C, procs map[int]string, controller bool) {
	want := []string{"etcd", "kube-apiserver", "gofakes3", "velero"}
	for i, w := range want {
		want[i] = filepath.Join(s.assets, w)
	}
	if controller {
		want = append(want, filepath.Join(s.bin, "nac"))
	}
	var all []string
	exes := map[string]bool{}
	for pid, cmd := range procs {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		exes[exe] = true
		all = append(all, exe+": "+cmd)
	}
	for _, w := range want {
		c.Check(exes[w], Equals, true, Commentf("no %s among localcp's processes:\n%s", w, strings.Join(all, "\n")))
	}
}

// seedRefusedStore makes dir/s3.db a store whose bucket velero holds the
// object junk/x: a top-level folder Velero refuses in a location's bucket.
// With tenants, it also creates the bucket tenants (as a run before would).
func (s *LocalCPSuite) seedRefusedStore(c *C, dir string, tenants bool) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	addr := l.Addr().String()
	c.Assert(l.Close(), IsNil)
	store := exec.Command(filepath.Join(s.assets, "gofakes3"), "-host", addr, "-backend", "bolt",
		"-bolt.db", filepath.Join(dir, "s3.db"), "-initialbucket", "velero")
	var out bytes.Buffer
	store.Stdout, store.Stderr = &out, &out
	c.Assert(store.Start(), IsNil)
	defer func() {
		_ = store.Process.Signal(syscall.SIGTERM)
		_ = store.Wait()
	}()
	put := func(path, body string) {
		var resp *http.Response
		e2estack.Eventually(c, 10*time.Second, func() (bool, string) {
			req, err := http.NewRequest(http.MethodPut, "http://"+addr+path, strings.NewReader(body))
			c.Assert(err, IsNil)
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				return false, err.Error() + "\n" + out.String()
			}
			return true, ""
		})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.Assert(resp.StatusCode, Equals, http.StatusOK, Commentf("PUT %s: %s", path, b))
	}
	put("/velero/junk/x", "not a backup")
	if tenants {
		put("/tenants", "")
	}
}

// TestPortInUseFailsAtOnce: a fixed port localcp needs (the controller's,
// as make run gives them; everything else takes a free port) is taken by
// this test process; localcp fails before starting anything, naming the
// port, what needs it and this process's pid.
func (s *LocalCPSuite) TestPortInUseFailsAtOnce(c *C) {
	pid := strconv.Itoa(os.Getpid())
	// The health probe's port, as --health-probe-bind-address ADDR, with
	// Velero (the default).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	r := s.start(c, c.MkDir(), nil, "--metrics-bind-address", "0", "--health-probe-bind-address", l.Addr().String())
	took, code := r.waitExit(c, 10*time.Second)
	c.Check(l.Close(), IsNil)
	c.Check(code, Equals, 1)
	c.Check(took < 5*time.Second, Equals, true, Commentf("took %s", took)) // the control plane alone takes longer
	c.Check(r.output(), Matches, fmt.Sprintf(`(?s)localcp: port %d \(the controller's --health-probe-bind-address\) is in use by pid %s: \S*e2elocalcp\.test.* — stop it \(kill %s\) and run make run again\n`,
		l.Addr().(*net.TCPAddr).Port, pid, pid))
	c.Check(r.output(), Not(Matches), `(?s).*starting kube-apiserver.*`)

	// The controller's port, given as --metrics-bind-address=ADDR after --.
	l, err = net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	defer l.Close()
	r = s.start(c, c.MkDir(), []string{"--velero=false"}, "--metrics-bind-address="+l.Addr().String(), "--health-probe-bind-address", "0")
	_, code = r.waitExit(c, 10*time.Second)
	c.Check(code, Equals, 1)
	c.Check(r.output(), Matches, fmt.Sprintf(`localcp: port %d \(the controller's --metrics-bind-address\) is in use by pid %s: .*\n`,
		l.Addr().(*net.TCPAddr).Port, pid))
}

// TestKill9LeavesNoProcess: localcp killed with SIGKILL once the controller
// runs takes every process of its stack with it (parent-death signal),
// kube-apiserver and etcd, which envtest starts, included. The run also
// shows the buckets of the store.
func (s *LocalCPSuite) TestKill9LeavesNoProcess(c *C) {
	r := s.start(c, c.MkDir(), nil)
	r.waitFor(c, `"Starting workers"`, 4*time.Minute)
	out := r.output()
	c.Check(out, Matches, `(?s).*object store: +http://127\.0\.0\.1:[0-9]+, buckets velero \(default location\) and tenants \(for tenants' own locations\)\n.*`)
	store := regexp.MustCompile(`object store: +(http://127\.0\.0\.1:[0-9]+)`).FindStringSubmatch(out)
	c.Assert(store, HasLen, 2)
	for _, b := range []string{"velero", "tenants"} {
		resp, err := http.Get(store[1] + "/" + b)
		c.Assert(err, IsNil)
		resp.Body.Close()
		c.Check(resp.StatusCode, Equals, http.StatusOK, Commentf("bucket %s", b))
	}

	procs := descendants(r.cmd.Process.Pid)
	s.procs = procs
	s.checkStack(c, procs, true)
	c.Assert(r.cmd.Process.Signal(syscall.SIGKILL), IsNil)
	<-r.exited
	t0 := time.Now()
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) { return allGone(procs) })
	c.Logf("the %d processes of the stack were gone %.1fs after localcp's SIGKILL", len(procs), time.Since(t0).Seconds())
	// Nothing else started for this run's directory either.
	e2estack.Eventually(c, 5*time.Second, func() (bool, string) {
		var left []string
		pids, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range pids {
			pid, _ := strconv.Atoi(filepath.Base(p))
			if cmd := cmdline(pid); strings.Contains(cmd, r.dir+string(filepath.Separator)) {
				left = append(left, cmd)
			}
		}
		return len(left) == 0, strings.Join(left, "\n")
	})
}

// TestInterruptWhileWaitingForLocation: SIGINT while localcp waits for a
// default location Velero refuses stops Velero, the store and the control
// plane within 15 s; localcp says it was interrupted and exits 1.
func (s *LocalCPSuite) TestInterruptWhileWaitingForLocation(c *C) {
	dir := c.MkDir()
	s.seedRefusedStore(c, dir, false)
	r := s.start(c, dir, nil)
	r.waitFor(c, ">> the default BackupStorageLocation is Unavailable: ", 4*time.Minute)
	procs := descendants(r.cmd.Process.Pid)
	s.procs = procs
	s.checkStack(c, procs, false)
	c.Assert(r.cmd.Process.Signal(syscall.SIGINT), IsNil)
	took, code := r.waitExit(c, 30*time.Second)
	c.Logf("localcp exited %.1fs after SIGINT", took.Seconds())
	c.Check(took < 15*time.Second, Equals, true, Commentf("took %s", took))
	c.Check(code, Equals, 1)
	c.Check(e2estack.InOrder(r.output(), ">> SIGINT: stopping", ">> stopping Velero and the object store", ">> stopping the control plane",
		"localcp: interrupted by SIGINT while "), Equals, true, Commentf(r.output()))
	e2estack.Eventually(c, 2*time.Second, func() (bool, string) { return allGone(procs) })
}

// TestLocationNeverAvailable: when the store holds a top-level folder Velero
// refuses in the default location's bucket (and the bucket tenants exists
// already, as after an earlier run), localcp gives up 60 s after Velero's
// start with Velero's reason and the fix, exits 1 and leaves nothing
// running.
func (s *LocalCPSuite) TestLocationNeverAvailable(c *C) {
	dir := c.MkDir()
	s.seedRefusedStore(c, dir, true)
	r := s.start(c, dir, nil)
	r.waitFor(c, ">> starting the object store and the Velero server", 4*time.Minute)
	t0 := time.Now()
	r.waitFor(c, ">> the default BackupStorageLocation is Unavailable: ", time.Minute)
	procs := descendants(r.cmd.Process.Pid)
	s.procs = procs
	s.checkStack(c, procs, false)
	_, code := r.waitExit(c, 90*time.Second)
	took := time.Since(t0)
	c.Logf("localcp gave up %.1fs after starting the store and Velero", took.Seconds())
	c.Check(took < 75*time.Second, Equals, true, Commentf("took %s", took))
	c.Check(code, Equals, 1)
	c.Check(r.output(), Matches, `(?s).*\nlocalcp: the default BackupStorageLocation openshift-adp/default is not Available 1m0s after Velero's start \(phase Unavailable\): `+
		`.*Backup store contains invalid top-level directories: \[junk\]\n`+
		`   the object store in .*/s3\.db holds data that Velero does not accept in the default location's bucket; `+
		"`make clean-local` removes the local state \\(.*\\), then `make run` again\n")
	e2estack.Eventually(c, 2*time.Second, func() (bool, string) { return allGone(procs) })
}
