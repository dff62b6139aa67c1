// Package e2estack runs the stack of `make run` for the end-to-end test
// packages: bin/localcp (kube-apiserver, etcd, an S3-compatible object
// store, a real Velero server and, with Start, the controller nac) on a
// directory, driven by kubectl from the repository root. It is a regular
// package so that each package under test/ starts the same stack; it fails
// the calling test through gopkg.in/check.v1.
package e2estack

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/xml"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
	"github.com/nacflow/nacflow/internal/localstack/testwait"
)

// Stack is one run of bin/localcp on a directory that may outlive it: a
// second stack on the same directory finds the first's object store, as
// `make run` does after Ctrl-C.
type Stack struct {
	Root       string // the repository root: localcp and kubectl run there
	Dir        string // localcp's --dir: kubeconfig, logs and object store
	Kubeconfig string // Dir/kubeconfig, the cluster admin's

	cmd    *exec.Cmd
	mu     sync.Mutex      // guards out
	out    strings.Builder // localcp's output so far, read as it comes
	exited chan error      // localcp's Wait error, once it exited
}

// RepoRoot returns the repository root as an absolute path: two levels
// above the working directory, which go test makes the package's own
// (test/NAME).
func RepoRoot(c *check.C) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	c.Assert(err, check.IsNil)
	return root
}

// Assets returns the directory of the stack's prebuilt binaries
// (kube-apiserver, etcd, velero, …): $NACFLOW_ASSETS, or root/bin when it
// is unset or empty. The path is as given, not made absolute.
func Assets(root string) string {
	if assets := os.Getenv("NACFLOW_ASSETS"); assets != "" {
		return assets
	}
	return filepath.Join(root, "bin")
}

// EnvBinaries names the environment variable of a directory that already
// holds what BuildBinaries builds (make test sets it to bin/, which make
// build filled: one link of each binary for every package under test/).
const EnvBinaries = "NACFLOW_BINARIES"

// BuildBinaries returns a directory holding nac, kubectl-nac, localcp and
// plugins/velero-plugin-nacflow (which Start gives Velero): $NACFLOW_BINARIES
// when it is set (made absolute; the test fails when one is missing there),
// else a new directory of the test's that it builds them into from root. A
// failed build fails the test with go build's output.
func BuildBinaries(c *check.C, root string) string {
	binaries := []struct{ out, pkg string }{{"nac", "./cmd/nac"}, {"kubectl-nac", "./cmd/kubectl-nac"}, {"localcp", "./hack/localcp"},
		{"plugins/velero-plugin-nacflow", "./cmd/velero-plugin-nacflow"}}
	if dir := os.Getenv(EnvBinaries); dir != "" {
		dir, err := filepath.Abs(dir)
		c.Assert(err, check.IsNil)
		for _, b := range binaries {
			_, err := os.Stat(filepath.Join(dir, b.out))
			c.Assert(err, check.IsNil, check.Commentf("$%s=%s lacks %s: run make build", EnvBinaries, dir, b.out))
		}
		return dir
	}
	bin := c.MkDir()
	for _, b := range binaries {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, b.out), b.pkg)
		build.Dir = root
		out, err := build.CombinedOutput()
		c.Assert(err, check.IsNil, check.Commentf("go build %s: %s", b.pkg, out))
	}
	return bin
}

// Start runs bin/localcp (bin as BuildBinaries returns it) on dir with the
// controller bin/nac, and returns once the controller runs its workers
// (its "Starting workers" log line). localcpArgs are localcp flags added to
// Launch's, before "--"; nacArgs are the controller's after
// --oadp-namespace (nil: no metrics or health endpoints). Failures are
// Launch's.
func Start(c *check.C, root, bin, dir string, localcpArgs, nacArgs []string) *Stack {
	if nacArgs == nil {
		nacArgs = []string{"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	}
	args := slices.Concat(localcpArgs, []string{"--", filepath.Join(bin, "nac"), "--oadp-namespace", "openshift-adp"}, nacArgs)
	return Launch(c, root, bin, dir, `"Starting workers"`, args...)
}

// Launch runs bin/localcp from root with --assets Assets(root), --dir dir,
// --oadp-namespace openshift-adp, --plugins bin/plugins,
// --velero-concurrent-backups 4 and then args, and
// returns once a line of its output (stdout and stderr) contains ready. It
// fails the test, with the output so far, when localcp exits first or
// ready is not printed within 4 minutes (then it kills localcp).
func Launch(c *check.C, root, bin, dir, ready string, args ...string) *Stack {
	// Velero runs up to four backups at once here: with its default of one,
	// Velero 1.18 leaves a backup queued behind one that has just ended for
	// up to a minute (its queue's recheck period), and the tests' backups
	// follow each other.
	args = append([]string{"--assets", Assets(root), "--dir", dir, "--oadp-namespace", "openshift-adp",
		"--plugins", filepath.Join(bin, "plugins"), "--velero-concurrent-backups", "4"}, args...)
	st := &Stack{Root: root, Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"),
		cmd: exec.Command(filepath.Join(bin, "localcp"), args...), exited: make(chan error, 1)}
	st.cmd.Dir = root
	// Killed with the test binary (a timeout, a Ctrl-C, kill): localcp's own
	// children die with it, so an interrupted test leaves no stack behind.
	st.cmd.SysProcAttr = childproc.SysProcAttr()
	pr, pw, err := os.Pipe()
	c.Assert(err, check.IsNil)
	st.cmd.Stdout, st.cmd.Stderr = pw, pw
	c.Assert(st.cmd.Start(), check.IsNil)
	pw.Close()
	go func() { st.exited <- st.cmd.Wait() }()
	started := make(chan struct{})
	// The output is read as it comes, whether or not a test looks at it:
	// localcp writes the controller's log through to it, so output left
	// unread (a full pipe) would block the controller's next log line and
	// with it the reconcile that logs.
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			st.mu.Lock()
			st.out.WriteString(line + "\n")
			st.mu.Unlock()
			if !announced && strings.Contains(line, ready) {
				announced = true
				close(started)
			}
		}
		// A line past the scanner's bound ends the scan, not the reading.
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case <-started:
	case err := <-st.exited:
		c.Fatalf("localcp exited before printing %s: %v\n%s", ready, err, st.Drain())
	case <-time.After(4 * time.Minute):
		st.Kill()
		c.Fatalf("localcp did not print %s within 4m:\n%s", ready, st.Drain())
	}
	return st
}

// Drain returns localcp's output so far, one line a "\n".
func (st *Stack) Drain() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.out.String()
}

// Interrupt sends localcp SIGINT (Ctrl-C) and checks that everything stops
// within 15 s: InterruptWithin(c, 15*time.Second).
func (st *Stack) Interrupt(c *check.C) { st.InterruptWithin(c, 15*time.Second) }

// InterruptWithin sends localcp SIGINT and waits up to timeout for it to
// exit: a non-zero exit fails the test (and the test goes on); no exit in
// time kills it and fails the test at once, both with the output.
func (st *Stack) InterruptWithin(c *check.C, timeout time.Duration) {
	c.Assert(st.cmd.Process.Signal(syscall.SIGINT), check.IsNil)
	select {
	case err := <-st.exited:
		c.Check(err, check.IsNil, check.Commentf("localcp should stop cleanly:\n%s", st.Drain()))
	case <-time.After(timeout):
		st.Kill()
		c.Fatalf("localcp did not stop within %s after SIGINT:\n%s", timeout, st.Drain())
	}
}

// Kill stops localcp at once with SIGKILL (its children die with it).
func (st *Stack) Kill() {
	if st.cmd.Process != nil {
		_ = st.cmd.Process.Kill()
	}
}

// Run runs kubectl args against the stack (KUBECONFIG=Kubeconfig) from
// Root with stdin, killing it after 30 s, and returns its combined output
// and its error (an *exec.ExitError when it failed).
func (st *Stack) Run(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Dir = st.Root
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+st.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Kubectl is Run without stdin that fails the test (with the command line
// and output) when kubectl fails; it returns the output.
func (st *Stack) Kubectl(c *check.C, args ...string) string {
	return st.KubectlIn(c, "", args...)
}

// KubectlIn is Kubectl with stdin.
func (st *Stack) KubectlIn(c *check.C, stdin string, args ...string) string {
	out, err := st.Run(stdin, args...)
	c.Assert(err, check.IsNil, check.Commentf("kubectl %s: %s", strings.Join(args, " "), out))
	return out
}

// Eventually calls cond until it returns true, and fails the test with
// cond's last message when it has not after timeout scaled by
// testwait.Bound (3× unless NACFLOW_TEST_TIMEOUT_SCALE says otherwise).
// Once a second at first, then less often as the wait grows, at most every
// 3 s (testwait.Pause): a cond usually runs kubectl, a process that costs
// a tenth of a CPU-second, and the end-to-end packages run side by side on
// two cores.
func Eventually(c *check.C, timeout time.Duration, cond func() (bool, string)) {
	timeout = testwait.Bound(timeout)
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		checked := time.Now()
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.Fatalf("not true after %s: %s", timeout, msg)
		}
		time.Sleep(testwait.Pause(time.Second, 3*time.Second, time.Since(start), time.Since(checked)))
	}
}

// InOrder reports whether every string of want appears in text, in that
// order and without overlapping.
func InOrder(text string, want ...string) bool {
	for _, w := range want {
		i := strings.Index(text, w)
		if i < 0 {
			return false
		}
		text = text[i+len(w):]
	}
	return true
}

// Nac runs `kubectl nac ARGS` the way a user with the plugin on PATH does
// (kubectl finds kubectl-nac in bin), against st, as user (impersonated with
// --as; "" is the cluster admin of the kubeconfig), within 4 minutes, and
// returns its combined output and exit status (-1 when it could not run).
func (st *Stack) Nac(bin, user string, args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if user != "" {
		args = append(args, "--as", user)
	}
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"nac"}, args...)...)
	cmd.Dir = st.Root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+st.Kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), ExitCode(err)
}

// ExitCode returns the exit status a command's Run or CombinedOutput error
// stands for: 0 for nil, the process's status for an *exec.ExitError, -1
// when the command could not run.
func ExitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		return -1
	}
	return 0
}

// Scrape GETs the controller's metrics at url (HTTPS, its self-signed
// certificate not checked) with the bearer token ("" none), within 10 s, and
// returns the status code and body. Errors: the HTTP client's.
func Scrape(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Sample returns the value of the sample series (its name and labels, as
// the text format writes them: `nacflow_x{a="b"}`) in a metrics page, and
// whether it is there.
func Sample(page, series string) (float64, bool) {
	for _, line := range strings.Split(page, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// KeysIn lists the keys under prefix in bucket of the object store at s3
// (the local store answers anonymous S3 ListObjects), sorted; the test
// fails when the store does not answer 200.
func KeysIn(c *check.C, s3, bucket, prefix string) []string {
	resp, err := http.Get(s3 + "/" + bucket + "?prefix=" + url.QueryEscape(prefix))
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, check.Equals, http.StatusOK, check.Commentf("listing bucket %s", bucket))
	var list struct {
		Contents []struct {
			Key string `xml:"Key"`
		} `xml:"Contents"`
	}
	c.Assert(xml.NewDecoder(resp.Body).Decode(&list), check.IsNil)
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, o.Key)
	}
	sort.Strings(keys)
	return keys
}

// ApplyApprovalDPA installs OADP's DataProtectionApplication CRD (a copy in
// test/crds) and a DPA named dpa in openshift-adp whose spec.nonAdmin
// enables the non-admin feature and requires an admin's approval of
// tenants' storage locations (requireApprovalForBSL), waiting until the CRD
// is served.
func (st *Stack) ApplyApprovalDPA(c *check.C) {
	st.Kubectl(c, "apply", "-f", "test/crds/oadp.openshift.io_dataprotectionapplications.yaml")
	Eventually(c, 30*time.Second, func() (bool, string) {
		out, err := st.Run(`apiVersion: oadp.openshift.io/v1alpha1
kind: DataProtectionApplication
metadata: {name: dpa, namespace: openshift-adp}
spec:
  nonAdmin: {enable: true, requireApprovalForBSL: true}
  configuration: {velero: {defaultPlugins: [aws]}}
`, "apply", "-f", "-")
		return err == nil, out // the CRD is served within seconds
	})
}

// CreateBucket makes bucket in the object store at s3 (an S3 PUT; an
// existing bucket is fine); a failure fails the test.
func CreateBucket(c *check.C, s3, bucket string) {
	req, err := http.NewRequest(http.MethodPut, s3+"/"+bucket, nil)
	c.Assert(err, check.IsNil)
	resp, err := http.DefaultClient.Do(req)
	c.Assert(err, check.IsNil)
	resp.Body.Close()
	c.Assert(resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusConflict, check.Equals, true, check.Commentf("PUT bucket %s: %s", bucket, resp.Status))
}

// LocalWebhookConfiguration is the name localcp gives the requester
// webhook's configuration (make deploy's is nacflow-requester).
const LocalWebhookConfiguration = "nacflow-requester-local"

// RequesterWebhook returns the localcp and nac arguments that install and
// serve nacflow's requester webhook as make run does, on a free port of
// 127.0.0.1 (stacks run side by side) with its certificate files under
// dir.
func RequesterWebhook(c *check.C, dir string) (localcpArgs, nacArgs []string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, check.IsNil)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	c.Assert(l.Close(), check.IsNil)
	return []string{"--requester-webhook", "config/webhook/mutating_webhook_configuration.yaml",
			"--requester-webhook-url", "https://localhost:" + port + "/mutate-nacflow-requester"},
		[]string{"--webhook-port", port, "--webhook-host", "127.0.0.1", "--webhook-cert-dir", filepath.Join(dir, "webhook-certs"),
			"--webhook-configuration", LocalWebhookConfiguration}
}

// AwaitRequesterWebhook waits (up to a minute) until the API server's calls
// to the requester webhook succeed: a server-side dry run of a
// NonAdminRestore in namespace ns (which must exist) passes admission.
func (st *Stack) AwaitRequesterWebhook(c *check.C, ns string) {
	nar := "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: webhook-probe, namespace: " + ns + "}\n" +
		"spec:\n  restoreSpec: {backupName: none}\n"
	Eventually(c, time.Minute, func() (bool, string) {
		out, err := st.Run(nar, "create", "--dry-run=server", "-f", "-")
		return err == nil, out
	})
}
