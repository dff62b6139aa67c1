// Package e2ewalk runs docs/getting-started.md as a newcomer does: every
// command of its shell blocks, in the page's order, through bash, from a
// directory laid out as the repository root (examples/, bin/, .local/), on
// the stack of `make run`; then Ctrl-C and `make run` again on the same
// state. The page's commands are read from the page itself, and the test
// holds one step for each: a command added to the page, or a step taken out
// of the test, fails it (TestWalkIsThePage).
package e2ewalk

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

// WalkSuite is one walk of the page on one stack and state directory.
type WalkSuite struct {
	root, bin string
	work      string // the reader's working directory: examples, bin and .local link to the real ones
	dir       string // localcp's --dir: the reader's .local
	st        *e2estack.Stack
	// prelude holds the page's lines that change the shell's state
	// (export, variable assignments, source), run again before each command:
	// the reader's one terminal.
	prelude []string
	// request is the storage location's approval request, read off
	// `kubectl get nabslrequest` for the step that names it NAME.
	request string
}

var _ = Suite(&WalkSuite{})

// validation is Velero's --store-validation-frequency on the walk's stack
// (make run: 1m), so that the second run sees the default location
// revalidated within seconds; nothing else differs from make run.
const validation = 5 * time.Second

func (s *WalkSuite) SetUpSuite(c *C) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		c.Fatalf("kubectl is not on PATH: %v", err)
	}
	s.root = e2estack.RepoRoot(c)
	s.bin = e2estack.BuildBinaries(c, s.root)
	s.work, s.dir = c.MkDir(), c.MkDir()
	for link, target := range map[string]string{"examples": filepath.Join(s.root, "examples"), "bin": s.bin, ".local": s.dir} {
		c.Assert(os.Symlink(target, filepath.Join(s.work, link)), IsNil)
	}
}

func (s *WalkSuite) TearDownSuite(c *C) {
	if s.st != nil {
		s.st.Interrupt(c)
	}
}

// start is `make run` on the suite's state directory.
func (s *WalkSuite) start(c *C) {
	s.st = e2estack.Start(c, s.root, s.bin, s.dir, []string{"--velero-store-validation-frequency", validation.String()}, nil)
}

// pageCommands returns the commands of docs/getting-started.md's ```sh
// blocks in order: one a line, comment lines dropped, a trailing
// "  # comment" cut off.
func pageCommands(c *C, root string) []string {
	f, err := os.Open(filepath.Join(root, "docs", "getting-started.md"))
	c.Assert(err, IsNil)
	defer f.Close()
	trailing := regexp.MustCompile(`\s+# .*$`)
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			line = strings.TrimSpace(trailing.ReplaceAllString(line, ""))
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	c.Assert(sc.Err(), IsNil)
	return out
}

// pageOutput returns the first plain ``` block (a sample output) holding
// marker among those between the shell block that holds cmd and the next
// shell block.
func pageOutput(c *C, root, cmd, marker string) string {
	page, err := os.ReadFile(filepath.Join(root, "docs", "getting-started.md"))
	c.Assert(err, IsNil)
	lines := strings.Split(string(page), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, cmd) })
	c.Assert(i >= 0, Equals, true, Commentf("the page lacks %q", cmd))
	inShell, inOutput := true, false
	var block []string
	for _, l := range lines[i+1:] {
		switch {
		case inShell && l == "```":
			inShell = false
		case inShell:
		case !inOutput && strings.HasPrefix(l, "```sh"):
			c.Fatalf("no sample output holding %q after %q", marker, cmd)
		case !inOutput && l == "```":
			inOutput, block = true, nil
		case inOutput && l == "```":
			if out := strings.Join(block, "\n"); strings.Contains(out, marker) {
				return out
			}
			inOutput = false
		case inOutput:
			block = append(block, l)
		}
	}
	c.Fatalf("no sample output holding %q after %q", marker, cmd)
	return ""
}

// run runs cmd through bash in the reader's directory after the prelude,
// with the environment of a new terminal (no KUBECONFIG: the page sets it),
// within timeout, and returns its combined output and exit status.
func (s *WalkSuite) run(cmd string, timeout time.Duration) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	script := strings.Join(append(append([]string{}, s.prelude...), cmd), "\n")
	sh := exec.CommandContext(ctx, "bash", "-c", script)
	sh.Dir = s.work
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			sh.Env = append(sh.Env, kv)
		}
	}
	sh.Env = append(sh.Env, "PWD="+s.work)
	out, err := sh.CombinedOutput()
	return string(out), e2estack.ExitCode(err)
}

// step is what the test does with one command of the page.
type step struct {
	cmd string
	// state: the line changes the shell's state (export, NAME=…,
	// source); it is kept in the prelude of every later command.
	state bool
	// skip: the suite does it itself (make run).
	skip bool
	// until: the reader runs the command again until the output is right
	// (a get or describe of something that takes a while), within timeout
	// (1 minute when zero); nil: the command runs once and must exit 0
	// unless codes allows its status.
	until   func(out string) bool
	timeout time.Duration
	codes   []int
	// check, when set, checks the output of the run that ended the step.
	check func(c *C, s *WalkSuite, out string)
}

// contains is an until that waits for every want in out, in order.
func contains(want ...string) func(string) bool {
	return func(out string) bool { return e2estack.InOrder(out, want...) }
}

// steps are the page's commands, in its order, with what each must show.
func steps() []step {
	created := contains(" created")
	return []step{
		{cmd: "make run", skip: true},
		{cmd: "export KUBECONFIG=$PWD/.local/kubeconfig", state: true},
		{cmd: "kubectl create configmap app-config -n demo --from-literal=greeting=hello", until: created},
		{cmd: "kubectl apply -f examples/nonadminbackup.yaml", until: created},
		{cmd: "kubectl get nab -n demo", until: contains("NAME", "REQUEST-PHASE", "VELERO-PHASE", "PLAN", "PLAN-PHASE", "AGE", "sample", "Created")},
		{cmd: "kubectl get nab -n demo sample", until: contains("sample", "Created", "Completed", "complete", "finalStatus: complete"), timeout: 2 * time.Minute},
		{cmd: "kubectl get backups.velero.io -n openshift-adp --show-labels", until: contains("demo-sample-", "openshift.io/oadp=True")},
		{cmd: "kubectl describe nab -n demo sample", until: contains("Events:", "PhaseWaiting", "Started action backup of blueprint nonadminbackup", "EndedAction", "Ended action backup")},
		{cmd: "kubectl apply -f examples/nonadminbackup-invalid.yaml", until: created},
		{cmd: `kubectl get nab -n demo other-namespace -o jsonpath='{.status.conditions[?(@.type=="Accepted")].message}{"\n"}'`, until: contains("spec.backupSpec.includedNamespaces")},
		{cmd: "kubectl describe nab -n demo other-namespace", until: contains("Warning", "PhaseFailed", "ActionFailed")},
		{cmd: "kubectl delete configmap app-config -n demo", until: contains("deleted")},
		{cmd: "kubectl apply -f examples/nonadminrestore.yaml", until: created},
		{cmd: "kubectl get nar -n demo", until: contains("sample-restore", "Completed"), timeout: 2 * time.Minute},
		{cmd: `kubectl get configmap app-config -n demo -o jsonpath='{.data.greeting}{"\n"}'`, until: func(out string) bool { return out == "hello\n" }},
		{cmd: "kubectl describe nar -n demo sample-restore", until: contains("validate", "waitForBackup", "checkItems", "waitForTurn", "createRestore", "waitForRestore", "syncStatus")},
		{cmd: "kubectl apply -f examples/nonadmindownloadrequest.yaml", until: created},
		{cmd: "kubectl get nadr -n demo", until: contains("sample-log", "Created", "Processed")},
		{cmd: `curl -s "$(kubectl get nadr -n demo sample-log -o jsonpath='{.status.velero.status.downloadURL}')" | gunzip | head -3`, until: contains("time=", "backup=openshift-adp/demo-sample-")},
		{cmd: "kubectl create namespace other", until: created},
		{cmd: "sed 's/namespace: demo/namespace: other/' examples/nonadmindownloadrequest.yaml | kubectl apply -f -", until: created},
		{cmd: `kubectl get nadr -n other sample-log -o jsonpath='{.status.conditions[?(@.type=="NonAdminBackupNotAvailable")].message}{"\n"}'`,
			until: contains("cannot get nonadminbackup: NonAdminBackup other/sample does not exist (yet): the request waits for it")},
		{cmd: "export PATH=$PWD/bin:$PATH", state: true},
		{cmd: "kubectl nac backup create b1 -n demo --wait", timeout: 3 * time.Minute, check: checkWaitOutput},
		{cmd: "kubectl nac backup describe b1 -n demo", check: checkTimeline},
		{cmd: "kubectl nac backup describe b1 -n demo --details", check: func(c *C, _ *WalkSuite, out string) {
			c.Check(out, Matches, `(?s).*Resource List:.*app-config.*`)
		}},
		{cmd: "kubectl nac backup logs b1 -n demo | head -3", check: func(c *C, _ *WalkSuite, out string) {
			c.Check(out, Matches, `(?s)time=.*backup=openshift-adp/demo-b1-.*`)
		}},
		{cmd: "kubectl delete configmap app-config -n demo", until: contains("deleted")},
		{cmd: "kubectl nac restore create r1 -n demo --from-backup b1 --wait", timeout: 3 * time.Minute},
		{cmd: `kubectl get configmap app-config -n demo -o jsonpath='{.data.greeting}{"\n"}'`, until: func(out string) bool { return out == "hello\n" }},
		{cmd: "source <(kubectl nac completion bash)", state: true, check: checkCompletion},
		{cmd: "kubectl apply -f examples/nonadminschedule.yaml", until: created},
		{cmd: "kubectl get nas -n demo -o wide", until: contains("NAME", "NEXT-RUN", "PAUSED", "RPO-MET", "nightly", "Created")},
		{cmd: "kubectl get nab -n demo -l oadp.openshift.io/nonadminschedule=nightly", until: contains("No resources found")},
		{cmd: "kubectl nac schedule create protected -n demo --schedule '*/1 * * * *' --rpo 2m"},
		{cmd: "kubectl get nab -n demo -l oadp.openshift.io/nonadminschedule=protected", until: contains("protected-", "Completed"), timeout: 3 * time.Minute},
		{cmd: `kubectl patch nas protected -n demo --type merge -p '{"spec":{"paused":true}}'`, until: contains("patched")},
		{cmd: `kubectl get nas protected -n demo -o jsonpath='{.status.conditions[?(@.type=="RPOMet")].message}{"\n"}'`,
			until: contains("the last successful backup completed at", "more than the objective of 2m0s ago", "the schedule is paused"), timeout: 4 * time.Minute},
		{cmd: `kubectl patch nab -n demo sample --type merge -p '{"spec":{"deleteBackup":true}}'`, until: contains("patched")},
		{cmd: "kubectl delete nab -n demo b1", until: contains("deleted")},
		{cmd: "kubectl create rolebinding alice -n demo --clusterrole=admin --user=alice", until: created},
		{cmd: "kubectl auth can-i create nonadminbackups.oadp.openshift.io -n demo --as=alice", until: func(out string) bool { return out == "yes\n" }},
		{cmd: "kubectl auth can-i create nonadminbackups.oadp.openshift.io -n openshift-adp --as=alice", codes: []int{1}, until: func(out string) bool { return out == "no\n" }},
		{cmd: "kubectl auth can-i get backups.velero.io -n openshift-adp --as=alice", codes: []int{1}, until: func(out string) bool { return out == "no\n" }},
		{cmd: "kubectl delete namespace demo", timeout: time.Minute, check: func(c *C, _ *WalkSuite, out string) {
			c.Check(out, Equals, "namespace \"demo\" deleted\n")
		}},
		{cmd: "kubectl create namespace demo", until: created},
		// Velero's sync (every minute) brings the Backups back from the
		// bucket, then nacflow's backup sync the NAB: b1 (its data stayed),
		// not sample (deleteBackup removed its data).
		{cmd: "kubectl get nab -n demo", until: contains("b1", "Created", "Completed"), timeout: 4 * time.Minute, check: func(c *C, _ *WalkSuite, out string) {
			c.Check(out, Not(Matches), `(?s).*\nsample .*`)
		}},
		{cmd: "S3=$(kubectl get bsl -n openshift-adp default -o jsonpath='{.spec.config.s3Url}')", state: true},
		{cmd: `sed "s|http://127.0.0.1:9000|$S3|" examples/nonadminbackupstoragelocation.yaml | kubectl apply -f -`, until: created},
		{cmd: "kubectl get nabsl -n demo", until: contains("my-bucket", "Created", "Available"), timeout: 2 * time.Minute},
		{cmd: "kubectl get nab -n demo to-my-bucket", until: contains("to-my-bucket", "Created", "Completed"), timeout: 3 * time.Minute},
		{cmd: "kubectl get nabslrequest -n openshift-adp", until: contains("NAME", "demo"), check: func(c *C, s *WalkSuite, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			c.Assert(len(lines) >= 2, Equals, true, Commentf("%s", out))
			s.request = strings.Fields(lines[1])[0]
		}},
		{cmd: `kubectl patch nabslrequest -n openshift-adp NAME --type merge -p '{"spec":{"approvalDecision":"approve"}}'`, until: contains("patched")},
	}
}

// checkWaitOutput: the --wait of `backup create` ends as the page shows:
// its last progress line ("<elapsed>  <state> · …") says the state the
// page's last one says.
func checkWaitOutput(c *C, s *WalkSuite, out string) {
	c.Check(out, Matches, `(?s)NonAdminBackup request "b1" submitted successfully\.\n.*NonAdminBackup b1 completed in [0-9]+s\. Velero Backup openshift-adp/demo-b1-\S+ Completed: .*`)
	sample := pageOutput(c, s.root, "kubectl nac backup create b1 -n demo --wait", "submitted successfully")
	progress := regexp.MustCompile(`(?m)^ *[0-9][0-9hms]*  ([^·\n]*?)(?: · .*)?$`)
	lastState := func(text string) string {
		all := progress.FindAllStringSubmatch(text, -1)
		if len(all) == 0 {
			return ""
		}
		return all[len(all)-1][1]
	}
	want := lastState(sample)
	c.Assert(want, Not(Equals), "", Commentf("the page shows no progress line after backup create --wait"))
	c.Check(lastState(out), Equals, want, Commentf("kubectl nac printed:\n%s", out))
}

// checkTimeline: `backup describe` tells the plan of the page's plainly
// completed backup as the page does: its Phases line.
func checkTimeline(c *C, s *WalkSuite, out string) {
	sample := pageOutput(c, s.root, "kubectl nac backup describe b1 -n demo", "Plan:")
	line := regexp.MustCompile(`(?m)^  Phases:\s+(.*)$`)
	want := line.FindStringSubmatch(sample)
	c.Assert(want, NotNil, Commentf("the page shows no Phases line"))
	got := line.FindStringSubmatch(out)
	c.Assert(got, NotNil, Commentf("kubectl nac printed:\n%s", out))
	c.Check(got[1], Equals, want[1])
}

// checkCompletion: after the page's `source`, bash completes `kubectl nac
// <TAB>` with the plugin's commands and `kubectl nac backup describe
// <TAB>` with the namespace's backups (bash-completion loaded first, as in
// a login shell).
func checkCompletion(c *C, s *WalkSuite, _ string) {
	for line, want := range map[string]string{"kubectl nac ": "backup", "kubectl nac backup describe -n demo ": "b1"} {
		words := strings.Fields(line)
		script := fmt.Sprintf(`source /usr/share/bash-completion/bash_completion
%s
COMP_LINE=%q; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(%s ""); COMP_CWORD=%d
complete -p kubectl
f=$(complete -p kubectl | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
"$f" kubectl "" %q 2>/dev/null
printf '%%s\n' "${COMPREPLY[@]}"`, strings.Join(s.prelude, "\n"), line, strings.Join(words, " "), len(words), words[len(words)-1])
		sh := exec.Command("bash", "-c", script)
		sh.Dir = s.work
		out, err := sh.CombinedOutput()
		c.Check(err, IsNil, Commentf("%s", out))
		c.Check(string(out), Matches, `(?s)complete -o default -F __kubectl_nac_kubectl kubectl\n.*`)
		c.Check(strings.Contains("\n"+string(out), "\n"+want+"\n"), Equals, true, Commentf("%q completes to:\n%s", line, out))
	}
}

// TestWalkIsThePage: the test's steps are the page's commands, one for
// one, in order.
func (s *WalkSuite) TestWalkIsThePage(c *C) {
	var have []string
	for _, st := range steps() {
		have = append(have, st.cmd)
	}
	c.Check(have, DeepEquals, pageCommands(c, s.root))
}

// TestZWalkThenRunAgain walks the page on `make run`, then stops the stack
// with Ctrl-C and starts it again on the same state: the default location
// is Available after Velero revalidated it, a new backup completes, and b1
// is back through Velero's and nacflow's sync.
func (s *WalkSuite) TestZWalkThenRunAgain(c *C) {
	page := pageCommands(c, s.root)
	s.start(c)
	for i, st := range steps() {
		c.Assert(i < len(page) && page[i] == st.cmd, Equals, true, Commentf("step %d %q is not the page's (TestWalkIsThePage)", i+1, st.cmd))
		s.do(c, i+1, st)
	}

	s.st.Interrupt(c)
	c.Check(s.st.Drain(), Matches, `(?s).*>> stopping the control plane.*`)
	s.st = nil
	s.start(c)
	c.Check(s.st.Drain(), Matches, `(?s).*BackupStorageLocation default Available.*all logs: .*velero\.log.*`)
	time.Sleep(2*validation + time.Second)
	out := s.st.Kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", "default", "-o", "jsonpath={.status.phase}|{.status.message}")
	c.Check(strings.HasPrefix(out, "Available|"), Equals, true, Commentf("default location after the restart: %s", out))
	s.st.KubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: after-restart, namespace: demo}\nspec:\n  backupSpec: {}\n", "apply", "-f", "-")
	for _, st := range []step{
		{cmd: "kubectl get nab -n demo after-restart", until: contains("after-restart", "Created", "Completed"), timeout: 2 * time.Minute},
		{cmd: "kubectl get nab -n demo b1", until: contains("b1", "Created", "Completed"), timeout: 4 * time.Minute},
	} {
		s.do(c, 0, st)
	}
}

// do runs one step: state lines join the prelude (and run once to show
// they work), until steps run until their output is right, the others
// once.
func (s *WalkSuite) do(c *C, n int, st step) {
	if st.skip {
		return
	}
	cmd := st.cmd
	if s.request != "" {
		cmd = strings.ReplaceAll(cmd, " NAME ", " "+s.request+" ")
	}
	timeout := st.timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ok := func(code int) bool {
		if code == 0 {
			return true
		}
		for _, allowed := range st.codes {
			if code == allowed {
				return true
			}
		}
		return false
	}
	started := time.Now()
	var out string
	var code int
	if st.until == nil {
		out, code = s.run(cmd, 2*timeout)
		c.Assert(ok(code), Equals, true, Commentf("step %d: %s: exit %d:\n%s\nlocalcp:\n%s", n, cmd, code, out, s.st.Drain()))
	} else {
		e2estack.Eventually(c, timeout, func() (bool, string) {
			out, code = s.run(cmd, time.Minute)
			return ok(code) && st.until(out), fmt.Sprintf("step %d: %s: exit %d:\n%s", n, cmd, code, out)
		})
	}
	c.Logf("step %d (%s): %s", n, time.Since(started).Round(time.Second), cmd)
	if st.state {
		s.prelude = append(s.prelude, cmd)
	}
	if st.check != nil {
		st.check(c, s, out)
	}
}
