package kcm

import "syscall"

// sysProcAttr kills kube-controller-manager when its parent dies, so a
// killed test run leaves none behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
