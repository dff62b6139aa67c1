package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type LocalCPUnitSuite struct{}

var _ = Suite(&LocalCPUnitSuite{})

// A /proc/net/tcp table as the kernel prints it: 127.0.0.1:8080 listening
// (inode 5555), a connection from port 8080 (not listening), 0.0.0.0:8091
// listening (inode 7777), and a listener on 8080 whose inode is 0 (a socket
// being torn down).
const tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5555 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 6666 1 0000000000000000 20 4 30 10 -1
   2: 00000000:1F9B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7777 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0
`

// The /proc/net/tcp6 table: [::]:8080 listening (inode 8888).
const tcp6Table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 8888 1 0000000000000000 100 0 0 10 0
`

func (s *LocalCPUnitSuite) TestListenersOnPort(c *C) {
	for _, t := range []struct {
		table string
		port  int
		want  []string
	}{
		{tcpTable, 8080, []string{"5555"}},
		{tcpTable, 8091, []string{"7777"}},
		{tcpTable, 53970, nil}, // 0xD2F0: only a connection's remote end
		{tcp6Table, 8080, []string{"8888"}},
		{"garbage\n\n1: 2\n", 8080, nil},
	} {
		got, err := listenersOnPort(strings.NewReader(t.table), t.port)
		c.Check(err, IsNil)
		c.Check(got, DeepEquals, t.want, Commentf("port %d", t.port))
	}
}

// fakeProc writes a /proc tree under a temporary directory: the tcp tables,
// and per pid its fd links, cmdline and stat.
func fakeProc(c *C) string {
	root := c.MkDir()
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		c.Assert(os.MkdirAll(filepath.Dir(p), 0o755), IsNil)
		c.Assert(os.WriteFile(p, []byte(data), 0o644), IsNil)
	}
	link := func(target, rel string) {
		p := filepath.Join(root, rel)
		c.Assert(os.MkdirAll(filepath.Dir(p), 0o755), IsNil)
		c.Assert(os.Symlink(target, p), IsNil)
	}
	write("net/tcp", tcpTable)
	write("net/tcp6", tcp6Table)
	// pid 40 holds a pipe and the 8091 listener; pid 1234 holds [::]:8080.
	link("pipe:[12]", "40/fd/0")
	link("socket:[7777]", "40/fd/5")
	write("40/cmdline", "/usr/bin/python3\x00-m\x00http.server\x008091\x00")
	link("/dev/null", "1234/fd/0")
	link("socket:[8888]", "1234/fd/9")
	write("1234/cmdline", "/work/main/bin/velero\x00server\x00--namespace\x00openshift-adp\x00")
	write("1234/stat", "1234 (velero (x) y) S 77 1234 1234 0 -1 4194560\n")
	write("1234/task/1234/children", "1300 1301 ")
	write("1234/task/1240/children", "")
	write("1234/task/1241/children", "1299")
	c.Assert(os.MkdirAll(filepath.Join(root, "self"), 0o755), IsNil)
	return root
}

func (s *LocalCPUnitSuite) TestPortHolderInFakeProc(c *C) {
	root := fakeProc(c)
	pid, cmdline, ok := portHolder(root, 8080)
	c.Check(ok, Equals, true)
	c.Check(pid, Equals, 1234) // through tcp6; tcp's 5555 is held by nobody readable
	c.Check(cmdline, Equals, "/work/main/bin/velero server --namespace openshift-adp")

	pid, cmdline, ok = portHolder(root, 8091)
	c.Check([]any{pid, cmdline, ok}, DeepEquals, []any{40, "/usr/bin/python3 -m http.server 8091", true})

	_, _, ok = portHolder(root, 9999)
	c.Check(ok, Equals, false)
	_, _, ok = portHolder(c.MkDir(), 8080) // no tables at all
	c.Check(ok, Equals, false)
}

// soleListener listens on addr (port 0: any) on a port that no other socket
// listens on at any address: each address has its own ports, so another
// process (a test's etcd on 127.0.0.1) may hold the port the kernel gave
// [::1], and portHolder, which matches the port alone, may name it.
func soleListener(addr string) (net.Listener, int, error) {
	for range 20 {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		n := 0
		for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			if f, err := os.Open(table); err == nil {
				found, _ := listenersOnPort(f, port)
				f.Close()
				n += len(found)
			}
		}
		if n == 1 {
			return l, port, nil
		}
		l.Close()
	}
	return nil, 0, fmt.Errorf("no port of %s free at every address in 20 tries", addr)
}

func (s *LocalCPUnitSuite) TestPortHolderFindsThisProcess(c *C) {
	if runtime.GOOS != "linux" {
		c.Skip("/proc is Linux's")
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", ":0"} {
		l, port, err := soleListener(addr)
		if err != nil {
			c.Logf("no %s here: %v", addr, err)
			continue
		}
		pid, cmdline, ok := portHolder("/proc", port)
		l.Close()
		c.Check(ok, Equals, true, Commentf(addr))
		c.Check(pid, Equals, os.Getpid(), Commentf(addr))
		c.Check(strings.Contains(cmdline, filepath.Base(os.Args[0])), Equals, true, Commentf("%s: %q", addr, cmdline))
	}
}

func (s *LocalCPUnitSuite) TestCheckFreeNamesTheHolder(c *C) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	err = checkFree(boundAddr{fmt.Sprintf(":%d", port), "Velero's metrics"})
	c.Assert(err, NotNil)
	if runtime.GOOS == "linux" {
		pid := strconv.Itoa(os.Getpid())
		c.Check(err, ErrorMatches, fmt.Sprintf(`port %d \(Velero's metrics\) is in use by pid %s: .*%s.* — stop it \(kill %s\) and run make run again`,
			port, pid, regexp.QuoteMeta(filepath.Base(os.Args[0])), pid))
	} else {
		c.Check(err, ErrorMatches, fmt.Sprintf(`port %d \(Velero's metrics\) is in use by another process — .*`, port))
	}
	l.Close()
	c.Check(checkFree(boundAddr{fmt.Sprintf("127.0.0.1:%d", port), "x"}), IsNil)
	c.Check(checkFree(), IsNil)
}

func (s *LocalCPUnitSuite) TestChildPIDsAndParentPID(c *C) {
	root := fakeProc(c)
	pids, err := childPIDs(root, 1234)
	c.Check(err, IsNil)
	c.Check(pids, DeepEquals, []int{1299, 1300, 1301})
	_, err = childPIDs(root, 99)
	c.Check(err, NotNil)
	ppid, err := parentPID(root, 1234)
	c.Check(err, IsNil)
	c.Check(ppid, Equals, 77) // the command name "velero (x) y" holds a space and parentheses

	if runtime.GOOS != "linux" {
		return
	}
	sleep := exec.Command("sleep", "30")
	c.Assert(sleep.Start(), IsNil)
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	pids, err = childPIDs("/proc", os.Getpid())
	c.Check(err, IsNil)
	c.Check(pids, Contains, sleep.Process.Pid)
	ppid, err = parentPID("/proc", sleep.Process.Pid)
	c.Check(err, IsNil)
	c.Check(ppid, Equals, os.Getpid())
}

func (s *LocalCPUnitSuite) TestFlagValue(c *C) {
	for _, t := range []struct {
		args  []string
		value string
		ok    bool
	}{
		{[]string{"--metrics-bind-address", "127.0.0.1:8090"}, "127.0.0.1:8090", true},
		{[]string{"-metrics-bind-address=:8090", "--oadp-namespace", "x"}, ":8090", true},
		{[]string{"--metrics-bind-address=:1", "-metrics-bind-address", ":2"}, ":2", true}, // the last wins
		{[]string{"--metrics-bind-address="}, "", true},
		{[]string{"--metrics-bind-address"}, "", false}, // no value
		{[]string{"--", "--metrics-bind-address", ":8090"}, "", false},
		{[]string{"--metrics-bind-addresses", ":8090", "metrics-bind-address", ":1"}, "", false},
		{nil, "", false},
	} {
		v, ok := flagValue(t.args, "metrics-bind-address")
		c.Check([]any{v, ok}, DeepEquals, []any{t.value, t.ok}, Commentf("%q", t.args))
	}
}

func (s *LocalCPUnitSuite) TestControllerAddrs(c *C) {
	c.Check(controllerAddrs([]string{"--oadp-namespace", "openshift-adp", "--metrics-bind-address", "127.0.0.1:8090", "--health-probe-bind-address=:8091"}),
		DeepEquals, []boundAddr{
			{"127.0.0.1:8090", "the controller's --metrics-bind-address"},
			{":8091", "the controller's --health-probe-bind-address"},
		})
	// "0" disables serving; port 0 is any free port; no flag, nothing to check.
	for _, args := range [][]string{
		{"--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:0"},
		{"--metrics-bind-address=:0", "--health-probe-bind-address=[::1]:0"},
		{"--metrics-bind-address", "", "--health-probe-bind-address", "localhost:http"},
		{"--backup-sync-period", "2s"},
	} {
		c.Check(controllerAddrs(args), HasLen, 0, Commentf("%q", args))
	}
}

func (s *LocalCPUnitSuite) TestFixedPort(c *C) {
	for addr, want := range map[string]int{":8080": 8080, "127.0.0.1:8090": 8090, "[::1]:65535": 65535,
		"0": 0, "": 0, ":0": 0, "host:0": 0, "8080": 0, ":99999": 0, ":http": 0} {
		port, ok := fixedPort(addr)
		c.Check([]any{port, ok}, DeepEquals, []any{want, want != 0}, Commentf("%q", addr))
	}
}

// Contains checks that a []int holds an int.
var Contains Checker = &containsChecker{&CheckerInfo{Name: "Contains", Params: []string{"obtained", "expected"}}}

type containsChecker struct{ *CheckerInfo }

func (containsChecker) Check(params []any, names []string) (bool, string) {
	list, ok := params[0].([]int)
	if !ok {
		return false, "obtained must be []int"
	}
	for _, v := range list {
		if v == params[1] {
			return true, ""
		}
	}
	return false, ""
}

// The ready message tells how to scrape the controller's metrics as its
// flags serve them: HTTPS with the scraper's token by default, plain HTTP
// only with --metrics-secure=false, nothing when metrics are off.
func (s *LocalCPUnitSuite) TestScrapeHint(c *C) {
	const token = `curl -sk -H "Authorization: Bearer $(kubectl create token metrics-scraper -n openshift-adp)" `
	for _, t := range []struct {
		args  []string
		bound bool
		want  string
	}{
		{[]string{"--metrics-bind-address", "127.0.0.1:8090"}, true, token + "https://127.0.0.1:8090/metrics"},
		{nil, true, token + "https://127.0.0.1:8090/metrics"}, // nac's default :8090
		{[]string{"--metrics-bind-address=[::1]:9443", "--metrics-secure"}, true, token + "https://[::1]:9443/metrics"},
		{[]string{"--metrics-bind-address", ":8090", "--metrics-secure=false"}, true, "curl -s http://127.0.0.1:8090/metrics "},
		{[]string{"--metrics-secure=false", "--metrics-secure=true"}, true, token},
		{[]string{"--metrics-bind-address", "127.0.0.1:8090"}, false, "# the controller's metrics: https://127.0.0.1:8090/metrics, with a bearer token of a user bound to ClusterRole nacflow-metrics-reader"},
		{[]string{"--metrics-bind-address", "0"}, true, ""},
	} {
		got := scrapeHint(t.args, "openshift-adp", t.bound)
		if t.want == "" {
			c.Check(got, Equals, "", Commentf("%q", t.args))
			continue
		}
		c.Check(strings.Contains(got, t.want), Equals, true, Commentf("%q: %q", t.args, got))
		c.Check(strings.HasSuffix(got, "\n"), Equals, true)
	}
}
