package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "gopkg.in/check.v1"
)

// stack is one run of bin/localcp (the make run stack) on a directory that
// may outlive it: a second stack on the same directory finds the first's
// object store, as `make run` does after Ctrl-C.
type stack struct {
	root, dir, kubeconfig string
	cmd                   *exec.Cmd
	output                *syncBuffer
	exited                chan error
}

// startStack starts bin/localcp (built by buildBinaries) on dir with the
// controller bin/nac, from the repository root, and returns once the
// controller runs its workers. localcpArgs are localcp flags before "--",
// nacArgs the controller's after --oadp-namespace (nil: no metrics or
// health endpoints).
func startStack(c *C, root, bin, dir string, localcpArgs, nacArgs []string) *stack {
	assets := os.Getenv("NACFLOW_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	if nacArgs == nil {
		nacArgs = []string{"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	}
	args := append([]string{"--assets", assets, "--dir", dir, "--oadp-namespace", "openshift-adp",
		"--plugins", filepath.Join(bin, "plugins")}, localcpArgs...)
	args = append(append(args, "--", filepath.Join(bin, "nac"), "--oadp-namespace", "openshift-adp"), nacArgs...)
	st := &stack{root: root, dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig"),
		cmd: exec.Command(filepath.Join(bin, "localcp"), args...), exited: make(chan error, 1)}
	st.cmd.Dir = root
	pr, pw, err := os.Pipe()
	c.Assert(err, IsNil)
	st.cmd.Stdout, st.cmd.Stderr = pw, pw
	c.Assert(st.cmd.Start(), IsNil)
	pw.Close()
	go func() { st.exited <- st.cmd.Wait() }()
	st.output = &syncBuffer{lines: make(chan string, 10000)}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			st.output.lines <- line
			if !announced && strings.Contains(line, `"Starting workers"`) {
				announced = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case err := <-st.exited:
		c.Fatalf("localcp exited before the controller started: %v\n%s", err, st.drain())
	case <-time.After(4 * time.Minute):
		st.kill()
		c.Fatalf("the controller did not start within 4m:\n%s", st.drain())
	}
	return st
}

// buildBinaries builds nac, kubectl-nac, localcp and plugins/velero-plugin-nacflow
// (which startStack gives Velero) into a new directory and returns it.
func buildBinaries(c *C, root string) string {
	bin := c.MkDir()
	for _, b := range []struct{ out, pkg string }{{"nac", "./cmd/nac"}, {"kubectl-nac", "./cmd/kubectl-nac"}, {"localcp", "./hack/localcp"},
		{"plugins/velero-plugin-nacflow", "./cmd/velero-plugin-nacflow"}} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, b.out), b.pkg)
		build.Dir = root
		out, err := build.CombinedOutput()
		c.Assert(err, IsNil, Commentf("go build %s: %s", b.pkg, out))
	}
	return bin
}

// drain returns the output collected so far.
func (st *stack) drain() string {
	for {
		select {
		case l := <-st.output.lines:
			st.output.buf.WriteString(l + "\n")
		default:
			return st.output.buf.String()
		}
	}
}

// interrupt sends Ctrl-C and checks that everything stops within 15 s and
// localcp exits cleanly.
func (st *stack) interrupt(c *C) {
	c.Assert(st.cmd.Process.Signal(syscall.SIGINT), IsNil)
	select {
	case err := <-st.exited:
		c.Check(err, IsNil, Commentf("localcp should stop cleanly:\n%s", st.drain()))
	case <-time.After(15 * time.Second):
		st.kill()
		c.Fatalf("localcp did not stop within 15s after SIGINT:\n%s", st.drain())
	}
}

// kill stops localcp at once (its children die with it).
func (st *stack) kill() {
	if st.cmd.Process != nil {
		_ = st.cmd.Process.Kill()
	}
}

// kubectl runs kubectl against the stack from the repository root, with
// stdin, and returns its output and error.
func (st *stack) run(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Dir = st.root
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+st.kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectl runs kubectl and fails the test when it fails.
func (st *stack) kubectl(c *C, args ...string) string {
	return st.kubectlIn(c, "", args...)
}

// kubectlIn is kubectl with stdin.
func (st *stack) kubectlIn(c *C, stdin string, args ...string) string {
	out, err := st.run(stdin, args...)
	c.Assert(err, IsNil, Commentf("kubectl %s: %s", strings.Join(args, " "), out))
	return out
}
