package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nacflow/nacflow/internal/text"
)

// tcpListen is the state column value of a listening socket in
// /proc/net/tcp and /proc/net/tcp6 (TCP_LISTEN in the kernel's tcp_states.h).
const tcpListen = "0A"

// listenersOnPort returns the inodes (decimal, as the kernel prints them) of
// the sockets listening on TCP port in one table of the kernel's
// /proc/net/tcp or /proc/net/tcp6 format: a header line, then one socket a
// line, "sl local_address rem_address st tx_queue:rx_queue tr:tm->when
// retrnsmt uid timeout inode ...", local_address being HEXADDR:HEXPORT and
// st the hexadecimal state. Lines of another shape are skipped; the error is
// the reader's.
func listenersOnPort(table io.Reader, port int) ([]string, error) {
	var inodes []string
	sc := bufio.NewScanner(table)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port && f[9] != "0" {
			inodes = append(inodes, f[9])
		}
	}
	return inodes, sc.Err()
}

// socketOwner returns the smallest pid under procRoot (normally /proc) with
// a file descriptor on one of the socket inodes, and that process's command
// line (readCmdline). ok is false when no
// process it can read holds one: without privileges, other users' fd
// tables are not readable.
func socketOwner(procRoot string, inodes []string) (pid int, cmdline string, ok bool) {
	if len(inodes) == 0 {
		return 0, "", false
	}
	want := make(map[string]bool, len(inodes))
	for _, ino := range inodes {
		want["socket:["+ino+"]"] = true
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, "", false
	}
	var pids []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > 0 {
			pids = append(pids, n)
		}
	}
	sort.Ints(pids)
	for _, p := range pids {
		fdDir := filepath.Join(procRoot, strconv.Itoa(p), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && want[target] {
				return p, readCmdline(procRoot, p), true
			}
		}
	}
	return 0, "", false
}

// readCmdline returns the command line of pid under procRoot on one line
// (arguments joined by spaces, runs of white space made one space), cut to
// at most 300 bytes on a rune boundary ("…" marks a cut), or "" when it is
// unreadable (the process is gone) or empty (a zombie, a kernel thread).
func readCmdline(procRoot string, pid int) string {
	raw, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return ""
	}
	s := strings.Join(strings.Fields(strings.ReplaceAll(string(raw), "\x00", " ")), " ")
	return text.Truncate(s, 300)
}

// portHolder returns the pid and command line of a process listening on TCP
// port (any address, IPv4 or IPv6), matching the inodes of the listening
// sockets in procRoot/net/tcp and procRoot/net/tcp6 to the procRoot/*/fd
// links. ok is false when none is found (see socketOwner).
func portHolder(procRoot string, port int) (pid int, cmdline string, ok bool) {
	var inodes []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, "net", table))
		if err != nil {
			continue
		}
		found, _ := listenersOnPort(f, port)
		f.Close()
		inodes = append(inodes, found...)
	}
	return socketOwner(procRoot, inodes)
}

// childPIDs returns the pids of pid's children, read from
// procRoot/PID/task/*/children (one file per thread of pid, each the
// space-separated pids of the children that thread forked; Linux 3.5+ with
// CONFIG_PROC_CHILDREN). A child forked while it reads may be missed.
func childPIDs(procRoot string, pid int) ([]int, error) {
	tasks, err := os.ReadDir(filepath.Join(procRoot, strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, fmt.Errorf("listing the threads of pid %d: %w", pid, err)
	}
	var pids []int
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "task", t.Name(), "children"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, f := range strings.Fields(string(raw)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	sort.Ints(pids)
	return pids, nil
}

// parentPID returns the parent pid of pid from procRoot/PID/stat (the fourth
// field; the second, the command name in parentheses, may hold spaces and
// parentheses, so fields are counted after its last ')').
func parentPID(procRoot string, pid int) (int, error) {
	raw, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s/%d/stat: no command name", procRoot, pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("%s/%d/stat: too short", procRoot, pid)
	}
	return strconv.Atoi(f[1])
}
