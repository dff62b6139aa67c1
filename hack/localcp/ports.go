package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// controllerAddrFlags are the controller's flags whose addresses localcp
// checks before starting it (controller-runtime's, as cmd/nac names them),
// with what the message calls them.
var controllerAddrFlags = []struct{ name, what string }{
	{"metrics-bind-address", "the controller's --metrics-bind-address"},
	{"health-probe-bind-address", "the controller's --health-probe-bind-address"},
}

// boundAddr is an address a process will listen on, and what to call it in
// a message ("the controller's --metrics-bind-address").
type boundAddr struct {
	addr, what string
}

// flagValue returns the value of flag name (without dashes) in args as Go's
// flag package reads it: -name=v, --name=v, -name v or --name v, the last
// one winning; parsing stops at "--". ok is false when args do not set it.
func flagValue(args []string, name string) (value string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		n, v, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if n != name {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
			v = args[i]
		}
		value, ok = v, true
	}
	return value, ok
}

// fixedPort returns the port of a listen address host:port, and false for
// the addresses that bind no fixed port: "0" (controller-runtime: serving
// disabled), "" (disabled too), ":0" and "host:0" (the kernel picks a free
// port), and anything that is not host:NUMBER.
func fixedPort(addr string) (int, bool) {
	if addr == "0" || addr == "" {
		return 0, false
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, false
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return 0, false
	}
	return port, true
}

// controllerAddrs returns the fixed-port listen addresses the controller
// command's arguments set (controllerAddrFlags), in that order. Flags the
// arguments leave out are not checked: their defaults belong to the
// controller.
func controllerAddrs(args []string) []boundAddr {
	var out []boundAddr
	for _, f := range controllerAddrFlags {
		if v, ok := flagValue(args, f.name); ok {
			if _, fixed := fixedPort(v); fixed {
				out = append(out, boundAddr{addr: v, what: f.what})
			}
		}
	}
	return out
}

// checkFree returns nil when each address can be listened on now (it
// listens and closes at once). When one is in use, the error names the
// port, what needs it, and the process holding it (pid and command line,
// found through /proc on Linux) with how to stop it.
func checkFree(addrs ...boundAddr) error {
	for _, a := range addrs {
		l, err := net.Listen("tcp", a.addr)
		if err == nil {
			l.Close()
			continue
		}
		port, _ := fixedPort(a.addr)
		if !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("cannot listen on %s (%s): %w", a.addr, a.what, err)
		}
		if pid, cmdline, ok := lookupPortHolder(port); ok {
			return fmt.Errorf("port %d (%s) is in use by pid %d: %s — stop it (kill %d) and run make run again",
				port, a.what, pid, cmdline, pid)
		}
		return fmt.Errorf("port %d (%s) is in use by another process — stop it and run make run again", port, a.what)
	}
	return nil
}
