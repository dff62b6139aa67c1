package childproc

import "syscall"

// SysProcAttr is the SysProcAttr of every child: its own process group (a
// terminal's Ctrl-C reaches the parent only, which stops the children in
// order, as envtest does for its processes) and SIGKILL when the parent
// dies, so that a killed run leaves none behind.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
