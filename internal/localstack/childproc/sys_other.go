//go:build !linux

package childproc

import "syscall"

// SysProcAttr is the SysProcAttr of every child: its own process group, so
// that a terminal's Ctrl-C reaches the parent only, which stops the
// children in order. Outside Linux there is no parent-death signal:
// children outlive a parent killed with SIGKILL.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
