package e2e

import (
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// nac runs `kubectl nac ARGS` on st as user (e2estack.Stack.Nac).
func nac(st *e2estack.Stack, bin, user string, args ...string) (string, int) {
	return st.Nac(bin, user, args...)
}

// nac is the function nac on the suite's stack and binaries.
func (s *E2ESuite) nac(user string, args ...string) (string, int) {
	return nac(s.st, s.bin, user, args...)
}

// TestPluginAsATenant: a user bound only to the built-in admin role in
// their namespace backs up with --wait, describes, reads Velero's log,
// restores a deleted ConfigMap with --wait and deletes, all with the built
// plugin against the real stack; in another namespace they can do nothing.
func (s *E2ESuite) TestPluginAsATenant(c *C) {
	s.kubectl(c, "apply", "-f", "config/rbac/tenant_roles.yaml")
	for _, ns := range []string{"cli-a", "cli-b"} {
		s.kubectl(c, "create", "namespace", ns)
	}
	s.kubectl(c, "create", "rolebinding", "carol", "-n", "cli-a", "--clusterrole=admin", "--user=carol")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		got := s.canI("create", "nonadmindownloadrequests.oadp.openshift.io", "cli-a", "carol")
		return got == "yes", "carol may create NADRs in cli-a: " + got
	})
	s.kubectl(c, "create", "configmap", "-n", "cli-a", "app-config", "--from-literal=greeting=hello")

	// backup create --wait: progress lines (not a terminal), then success.
	out, code := s.nac("carol", "backup", "create", "b1", "-n", "cli-a", "--wait")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, s.drain()))
	// Off a terminal, a line per change: how many depends on Velero's speed.
	// Durations as Go prints them rounded: 5s, 2m21s (Velero under load).
	const d = `(?:[0-9]+m)?[0-9]+s`
	// The last line is the completed plan's: its summary (engine.Compact).
	c.Check(out, Matches, `NonAdminBackup request "b1" submitted successfully.\n.*\n(\s+`+d+`  (pending|\[[0-9]/[0-9]\] \S+ \(\S+\) \S+|complete)( · .*)?\n)+`+
		`NonAdminBackup b1 completed in `+d+`. Velero Backup openshift-adp/\S+ Completed: [0-9]+ of [0-9]+ items, 0 warnings, 0 errors\n`)
	backup := strings.TrimSpace(s.kubectl(c, "get", "nab", "-n", "cli-a", "b1", "-o", "jsonpath={.status.veleroBackup.name}"))
	c.Assert(backup, Not(Equals), "")

	// get and describe: the table, then the plan: a backup whose phases all
	// completed at their first attempt keeps the plan's summary, and the
	// events tell each phase.
	out, code = s.nac("carol", "backup", "get", "-n", "cli-a")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, `NAME\s+REQUEST-PHASE\s+VELERO-PHASE\s+PLAN-PHASE\s+CREATED\s+AGE\nb1\s+Created\s+Completed\s+.*\n`)
	out, code = s.nac("carol", "backup", "describe", "b1", "-n", "cli-a", "--details")
	c.Check(code, Equals, 0, Commentf(out))
	c.Check(out, Matches, `(?s).*Plan:\s+backup \(blueprint nonadminbackup, built-in\): complete, `+d+`\n.*`+
		`\s+Phases:\s+every phase completed at its first attempt \(the list is not kept; last: finalStatus: complete\)\n.*`+
		`Velero Backup:\s+openshift-adp/`+backup+`\n\s+Phase:\s+Completed\n.*`+
		`Resource List:\n.*v1/ConfigMap:\n.*- cli-a/app-config\n.*Events:.*Ended phase.*`)

	// logs: Velero's log of this backup; the request is removed afterwards.
	out, code = s.nac("carol", "backup", "logs", "b1", "-n", "cli-a")
	c.Assert(code, Equals, 0, Commentf("%.2000s", out))
	c.Check(strings.Contains(out, "backup=openshift-adp/"+backup), Equals, true, Commentf("the log names the backup: %.1000s", out))
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		left := s.kubectl(c, "get", "nadr", "-n", "cli-a", "-o", "name")
		return strings.TrimSpace(left) == "", "NonAdminDownloadRequests left: " + left
	})

	// restore create --wait brings back a deleted ConfigMap.
	s.kubectl(c, "delete", "configmap", "-n", "cli-a", "app-config")
	out, code = s.nac("carol", "restore", "create", "r1", "-n", "cli-a", "--from-backup", "b1", "--wait")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, s.drain()))
	c.Check(out, Matches, `(?s).*NonAdminRestore r1 completed in .*Velero Restore openshift-adp/\S+ Completed.*`)
	c.Check(s.kubectl(c, "get", "configmap", "-n", "cli-a", "app-config", "-o", "jsonpath={.data.greeting}"), Equals, "hello")
	out, code = s.nac("carol", "restore", "logs", "r1", "-n", "cli-a")
	c.Check(code, Equals, 0, Commentf("%.2000s", out))
	c.Check(out, Matches, `(?s).*restore=openshift-adp/.*`)
	out, code = s.nac("carol", "restore", "describe", "r1", "-n", "cli-a")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, `(?s).*Backup:\s+b1\n.*Phases:\s+every phase completed at its first attempt .*`)

	// Nothing in another namespace: every verb is refused by the API server.
	for _, args := range [][]string{
		{"backup", "get", "-n", "cli-b"},
		{"backup", "create", "x", "-n", "cli-b"},
		{"restore", "create", "x", "-n", "cli-b", "--from-backup", "b1"},
		{"backup", "logs", "b1", "-n", "cli-b"},
		{"bsl", "request", "get"},
	} {
		out, code = s.nac("carol", args...)
		c.Check(code, Equals, 2, Commentf("%v: %s", args, out))
		c.Check(out, Matches, `(?s)Error: .*forbidden.*`, Commentf("%v", args))
	}
	c.Check(strings.TrimSpace(s.kubectl(c, "get", "nab,nar,nadr", "-n", "cli-b", "-o", "name")), Equals, "")

	// A failing operation: --wait exits 1 with the failing phase's message.
	out, code = s.nac("carol", "restore", "create", "r2", "-n", "cli-a", "--from-backup", "missing", "--wait")
	c.Check(code, Equals, 1, Commentf(out))
	c.Check(out, Matches, `(?s).*Error: NonAdminRestore r2 failed: phase \S+ \(\S+\) failed: .*missing.*`)

	// delete: the restores, then the backup and its data.
	out, code = s.nac("carol", "restore", "delete", "--all", "-n", "cli-a", "--confirm")
	c.Check(code, Equals, 0, Commentf(out))
	out, code = s.nac("carol", "backup", "delete", "b1", "-n", "cli-a", "--confirm")
	c.Check(code, Equals, 0, Commentf(out))
	c.Check(out, Matches, `(?s)NonAdminBackup b1 marked for deletion.\n.*`)
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		left := s.kubectlAllowFail("get", "nab", "-n", "cli-a", "-o", "name")
		return strings.TrimSpace(left) == "", "NonAdminBackups left: " + left
	})
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		left := s.kubectlAllowFail("get", "backups.velero.io", "-n", "openshift-adp", backup, "-o", "name")
		return strings.Contains(left, "NotFound"), "Velero Backup: " + left
	})

	// Completion lists the tenant's own objects.
	s.kubectl(c, "create", "configmap", "-n", "cli-a", "keep", "--from-literal=a=b")
	out, code = s.nac("carol", "backup", "create", "b2", "-n", "cli-a")
	c.Assert(code, Equals, 0, Commentf(out))
	out, code = s.nac("", "__complete", "backup", "describe", "-n", "cli-a", "--as", "carol", "")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, "b2\n:4\n(?s).*")
}
