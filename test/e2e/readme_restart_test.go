package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// ReadmeRestartSuite follows the walk-through (docs/getting-started.md, once
// README.md's) in order on one
// directory, as a newcomer would — backup, invalid request, restore, the
// same with kubectl nac, the tenant's own location with a backup into it
// (the one-file example) — then
// Ctrl-C and a second `make run` on the same state: the stack comes up, the
// admin's default location is Available after Velero revalidated it, and a
// new backup completes (a tenant location once made Velero mark the default
// location Unavailable, and the next run waited forever).
type ReadmeRestartSuite struct {
	root, bin, dir string
	st             *e2estack.Stack
}

var _ = Suite(&ReadmeRestartSuite{})

// validation is Velero's --store-validation-frequency in this suite: how
// often it revalidates every location (the default is 1m).
const validation = 5 * time.Second

func (s *ReadmeRestartSuite) SetUpSuite(c *C) {
	root := e2estack.RepoRoot(c)
	s.root, s.bin, s.dir = root, e2estack.BuildBinaries(c, root), c.MkDir()
}

func (s *ReadmeRestartSuite) TearDownSuite(c *C) {
	if s.st != nil {
		s.st.Interrupt(c)
	}
}

func (s *ReadmeRestartSuite) start(c *C) {
	s.st = e2estack.Start(c, s.root, s.bin, s.dir, []string{"--velero-store-validation-frequency", validation.String()}, nil)
}

// completed waits until the NAB ns/name's Velero backup is Completed and
// returns the Velero backup's name.
func completed(c *C, st *e2estack.Stack, ns, name string, timeout time.Duration) string {
	var veleroName string
	e2estack.Eventually(c, timeout, func() (bool, string) {
		out, _ := st.Run("", "get", "nab", "-n", ns, name, "-o", "jsonpath={.status.veleroBackup.status.phase}|{.status.veleroBackup.name}|{.status.plan.current}")
		parts := strings.Split(out, "|")
		if len(parts) == 3 {
			veleroName = parts[1]
		}
		return strings.HasPrefix(out, "Completed|"), out
	})
	return veleroName
}

// defaultAvailable checks that the admin's default location is Available
// after Velero validated it again (waits two validation periods first).
func defaultAvailable(c *C, st *e2estack.Stack) {
	time.Sleep(2*validation + time.Second)
	out := st.Kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", "default",
		"-o", "jsonpath={.status.phase}|{.status.message}|{.status.lastValidationTime}")
	c.Check(strings.HasPrefix(out, "Available|"), Equals, true, Commentf("default location: %s", out))
}

func (s *ReadmeRestartSuite) TestReadmeTwice(c *C) {
	s.start(c)
	st := s.st
	// Walk-through: a backup of demo.
	st.Kubectl(c, "create", "configmap", "app-config", "-n", "demo", "--from-literal=greeting=hello")
	st.Kubectl(c, "apply", "-f", "examples/nonadminbackup.yaml")
	completed(c, st, "demo", "sample", 2*time.Minute)
	// An invalid request is refused.
	st.Kubectl(c, "apply", "-f", "examples/nonadminbackup-invalid.yaml")
	e2estack.Eventually(c, 20*time.Second, func() (bool, string) {
		out := st.Kubectl(c, "get", "nab", "-n", "demo", "other-namespace", "-o", "jsonpath={.status.phase}|{.status.conditions[?(@.type==\"Accepted\")].status}")
		return out == "BackingOff|False", out
	})
	// Restore.
	st.Kubectl(c, "delete", "configmap", "app-config", "-n", "demo")
	st.Kubectl(c, "apply", "-f", "examples/nonadminrestore.yaml")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := st.Run("", "get", "configmap", "app-config", "-n", "demo", "-o", "jsonpath={.data.greeting}")
		return out == "hello", out
	})
	// The command line: kubectl nac, as getting-started.md runs it.
	out, code := nac(st, s.bin, "", "backup", "create", "b1", "-n", "demo", "--wait")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, st.Drain()))
	c.Check(out, Matches, `(?s).*NonAdminBackup b1 completed in [0-9]+s\. Velero Backup openshift-adp/\S+ Completed: .*`)
	out, code = nac(st, s.bin, "", "backup", "describe", "b1", "-n", "demo")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, `(?s).*PHASE\s+FUNCTION\s+STATE\s+START\s+DURATION\s+ATTEMPTS\s+MESSAGE\n\s+validate\s+ValidateBackupSpec\s+complete\s+\+[0-9]+s\s+[0-9]+s\s+1\s+.*`)
	out, code = nac(st, s.bin, "", "backup", "logs", "b1", "-n", "demo")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, `(?s)time=.*backup=openshift-adp/demo-b1-.*`)
	st.Kubectl(c, "delete", "configmap", "app-config", "-n", "demo")
	out, code = nac(st, s.bin, "", "restore", "create", "r1", "-n", "demo", "--from-backup", "b1", "--wait")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, st.Drain()))
	c.Check(st.Kubectl(c, "get", "configmap", "app-config", "-n", "demo", "-o", "jsonpath={.data.greeting}"), Equals, "hello")
	out, code = nac(st, s.bin, "", "completion", "bash")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, `# bash completion V2 for kubectl-nac(?s).*`)

	// The tenant's own location and a backup into it, in one file.
	s3 := st.Kubectl(c, "get", "bsl", "-n", "openshift-adp", "default", "-o", "jsonpath={.spec.config.s3Url}")
	example, err := os.ReadFile(filepath.Join(s.root, "examples", "nonadminbackupstoragelocation.yaml"))
	c.Assert(err, IsNil)
	st.KubectlIn(c, strings.ReplaceAll(string(example), "http://127.0.0.1:9000", s3), "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := st.Kubectl(c, "get", "nabsl", "-n", "demo", "my-bucket", "-o", "jsonpath={.status.phase}|{.status.veleroBackupStorageLocation.status.phase}")
		return out == "Created|Available", out
	})
	name := completed(c, st, "demo", "to-my-bucket", 3*time.Minute)
	c.Check(keysIn(c, s3, "tenants", "demo/my-backups/backups/"+name+"/"), Not(HasLen), 0)
	c.Check(keysIn(c, s3, "velero", "demo/"), HasLen, 0, Commentf("nothing of the tenant in the admin's bucket root"))
	defaultAvailable(c, st)

	// Ctrl-C, then make run again on the same directory.
	st.Interrupt(c)
	s.st = nil
	s.start(c)
	st = s.st
	c.Check(st.Drain(), Matches, `(?s).*BackupStorageLocation default Available.*`)
	defaultAvailable(c, st)
	st.KubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: after-restart, namespace: demo}\nspec:\n  backupSpec: {}\n",
		"apply", "-f", "-")
	completed(c, st, "demo", "after-restart", 2*time.Minute)
	// The plugin's backup came back through Velero's sync and nacflow's.
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := nac(st, s.bin, "", "backup", "get", "b1", "-n", "demo")
		return strings.Contains(out, "Completed"), out
	})
}
