//go:build linux

package main

// Children die with localcp, even when it is killed with SIGKILL: each gets
// the parent-death signal SIGKILL (prctl PR_SET_PDEATHSIG).
//
// For the processes localcp forks itself (the object store, Velero, the
// controller) os/exec sets it (SysProcAttr.Pdeathsig; Go also kills the
// child when the parent died before the prctl). envtest forks kube-apiserver
// and etcd with a SysProcAttr of its own (Setpgid only) and always takes
// their paths from a directory (Environment.BinaryAssetsDirectory; it
// overwrites ControlPlane.APIServer.Path and Etcd.Path), and Velero forks
// its plugins, so those start through a wrapper. The directory is
// DIR/pdeathsig, holding symlinks kube-apiserver, etcd, velero and
// plugins/<each plugin> to localcp's own executable; localcp started under a
// name in it (argv[0]) is the wrapper: it sets the parent-death signal,
// checks that its parent did not die meanwhile, and execs the real binary of
// the same name from --assets, leaving argv[0] the wrapper's path as a plain
// symlink would. Velero itself is started from that directory too because it
// runs its built-in plugins as "os.Args[0] run-plugins": so those start
// through the wrapper as well. The wrapper is localcp itself rather than
// util-linux's `setpriv --pdeathsig KILL` so that nothing beyond Go is
// needed, and so that it can check the parent (setpriv does not) and refuse
// to start while localcp is stopping.
//
// The parent-death signal fires when the thread that forked the child ends,
// not only the process. That is fine here: the Go runtime ends an OS thread
// only when a goroutine locked to it (runtime.LockOSThread) returns without
// unlocking, and neither localcp's dependencies nor Velero v1.18.3's (on
// Linux) call LockOSThread; the wrapper locks its thread and then execs.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// Environment variables through which localcp configures its wrappers. The
// wrapped binaries keep them: Velero passes them on to the plugins it starts
// through their wrappers.
const (
	envWrapDir  = "NACFLOW_LOCALCP_WRAPDIR"  // the wrappers' directory
	envAssets   = "NACFLOW_LOCALCP_ASSETS"   // where the real binaries are (--assets)
	envPID      = "NACFLOW_LOCALCP_PID"      // localcp's pid: the parent or grandparent of every wrapper
	envStopping = "NACFLOW_LOCALCP_STOPPING" // set once localcp stops: wrappers started now exit at once
	envPlugins  = "NACFLOW_LOCALCP_PLUGINS"  // --plugins: extra plugins, preferred to ASSETS/plugins
)

// runWrapperIfCalledSo runs the wrapper and never returns when argv[0] lies
// under $NACFLOW_LOCALCP_WRAPDIR; otherwise it returns at once.
func runWrapperIfCalledSo() {
	wrapDir := os.Getenv(envWrapDir)
	if wrapDir == "" {
		return
	}
	rel, err := filepath.Rel(wrapDir, os.Args[0])
	if err != nil || !filepath.IsLocal(rel) {
		return
	}
	os.Exit(wrapper(rel))
}

// wrapper sets the parent-death signal SIGKILL, checks that localcp is still
// this process's parent or grandparent (a plugin's parent is Velero), and
// execs $NACFLOW_LOCALCP_ASSETS/rel with this process's arguments, argv[0]
// included. It
// returns an exit status only when it does not exec: 1 when localcp is
// stopping or gone, 127 when the exec fails.
func wrapper(rel string) int {
	// The signal is kept per thread and across exec by the thread that
	// execs: set it and exec on one thread.
	runtime.LockOSThread()
	if os.Getenv(envStopping) != "" {
		fmt.Fprintf(os.Stderr, "localcp is stopping: not starting %s\n", rel)
		return 1
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "localcp wrapper of %s: prctl(PR_SET_PDEATHSIG): %v\n", rel, errno)
		return 127
	}
	// Had localcp (or Velero) died between the fork and the prctl, no signal
	// would come: check after setting it.
	want, _ := strconv.Atoi(os.Getenv(envPID))
	ppid := syscall.Getppid()
	if gp, err := parentPID("/proc", ppid); ppid != want && (err != nil || gp != want) {
		fmt.Fprintf(os.Stderr, "localcp wrapper of %s: localcp (pid %d) is gone: not starting\n", rel, want)
		return 1
	}
	path := filepath.Join(os.Getenv(envAssets), rel)
	if extra := os.Getenv(envPlugins); extra != "" && filepath.Dir(rel) == "plugins" {
		if p := filepath.Join(extra, filepath.Base(rel)); isFile(p) {
			path = p
		}
	}
	err := syscall.Exec(path, os.Args, os.Environ())
	fmt.Fprintf(os.Stderr, "localcp wrapper: exec %s: %v\n", path, err)
	return 127
}

// setUpWrappers (re)creates DIR/pdeathsig with the wrappers of assets'
// kube-apiserver, etcd, velero and plugins/*, and of extraPlugins/* (when
// not empty; a name in both runs the extra one), and sets the environment
// they read (inherited by envtest's processes and Velero). It returns the
// directory to take kube-apiserver, etcd and velero from (envtest's binary
// assets) and the plugin directory to give Velero.
func setUpWrappers(dir, assets, extraPlugins string) (binDir, pluginDir string, err error) {
	self, err := os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("finding localcp's executable for the wrappers: %w", err)
	}
	wrapDir, err := filepath.Abs(filepath.Join(dir, "pdeathsig"))
	if err != nil {
		return "", "", err
	}
	if err := os.RemoveAll(wrapDir); err != nil {
		return "", "", err
	}
	names := []string{"kube-apiserver", "kube-controller-manager", "etcd", "velero"}
	plugins, err := pluginNames(assets, extraPlugins)
	if err != nil {
		return "", "", err
	}
	for _, p := range plugins {
		names = append(names, filepath.Join("plugins", p))
	}
	if err := os.MkdirAll(filepath.Join(wrapDir, "plugins"), 0o755); err != nil {
		return "", "", err
	}
	for _, n := range names {
		if err := os.Symlink(self, filepath.Join(wrapDir, n)); err != nil {
			return "", "", fmt.Errorf("creating the wrapper %s: %w", n, err)
		}
	}
	for k, v := range map[string]string{envWrapDir: wrapDir, envAssets: assets, envPID: strconv.Itoa(os.Getpid()), envPlugins: extraPlugins} {
		if err := os.Setenv(k, v); err != nil {
			return "", "", err
		}
	}
	return wrapDir, filepath.Join(wrapDir, "plugins"), nil
}

// refuseStarts makes wrappers started from now on exit at once (envtest
// retries a failed control plane start up to five times).
func refuseStarts() {
	_ = os.Setenv(envStopping, "1")
}

// killChildren sends SIGKILL to every child of localcp (found in /proc) and
// returns how many it signalled.
func killChildren() int {
	pids, _ := childPIDs("/proc", os.Getpid())
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return len(pids)
}

// lookupPortHolder finds the process listening on TCP port through /proc.
func lookupPortHolder(port int) (int, string, bool) {
	return portHolder("/proc", port)
}
