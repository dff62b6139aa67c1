// Package childproc runs the helper processes of the local stack
// (hack/localcp) and the integration suite (internal/localstack/kcm):
// kube-controller-manager, Velero and the object store. Each runs in its
// own process group, killed with its parent on Linux (SysProcAttr), its
// output appended to a log file; Stop ends it with SIGTERM and, after a
// grace period, SIGKILL.
package childproc

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process started by Start.
type Process struct {
	// Name is what messages call the process, e.g. "velero".
	Name string
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

// Start runs bin with args and env added to this process's environment,
// its output appended to logPath (created 0644), with SysProcAttr. Errors:
// the log file's and exec's, unwrapped (the caller names the process).
func Start(name, logPath string, env []string, bin string, args ...string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &Process{Name: name, cmd: cmd, log: log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// Stop sends SIGTERM, waits up to grace, then sends SIGKILL and waits for
// the exit; it closes the log. killed reports the SIGKILL. A nil p is a
// no-op.
func (p *Process) Stop(grace time.Duration) (killed bool) {
	if p == nil {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(grace):
		killed = true
		_ = p.cmd.Process.Kill()
		p.done <- <-p.done
	}
	p.log.Close()
	return killed
}

// Exited returns the exit error and true once p has exited.
func (p *Process) Exited() (error, bool) {
	select {
	case err := <-p.done:
		p.done <- err
		return err, true
	default:
		return nil, false
	}
}

// LogPath returns the file p's output is appended to.
func (p *Process) LogPath() string { return p.log.Name() }

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
