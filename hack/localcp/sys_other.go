//go:build !linux

package main

import (
	"path/filepath"
	"syscall"
)

// childAttr is the SysProcAttr of every child localcp forks: its own
// process group, so that the terminal's Ctrl-C reaches localcp only, which
// stops the children in order. Outside Linux there is no parent-death
// signal: children outlive a localcp killed with SIGKILL.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// runWrapperIfCalledSo does nothing outside Linux: there are no wrappers.
func runWrapperIfCalledSo() {}

// setUpWrappers returns the assets as they are outside Linux (no
// parent-death signal to set): the directory of kube-apiserver, etcd and
// velero, and the plugin directory.
func setUpWrappers(dir, assets string) (binDir, pluginDir string, err error) {
	return assets, filepath.Join(assets, "plugins"), nil
}

// refuseStarts does nothing outside Linux.
func refuseStarts() {}

// killChildren cannot list children outside Linux; it signals none.
func killChildren() int { return 0 }

// lookupPortHolder does not know who holds a port outside Linux.
func lookupPortHolder(port int) (int, string, bool) { return 0, "", false }
