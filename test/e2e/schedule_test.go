package e2e

import (
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// TestScheduleWithRealVelero: a tenant's NonAdminSchedule "*/1 * * * *"
// becomes a Velero Schedule the real Velero runs every minute; within about
// 2.5 minutes two Completed NonAdminBackups labelled with the schedule are
// in the namespace, and one of them restores a deleted ConfigMap; kubectl
// get nas shows the next run; paused reaches Velero; deleting the schedule
// removes the Velero Schedule and keeps the backups.
func (s *E2ESuite) TestScheduleWithRealVelero(c *C) {
	s.kubectl(c, "create", "namespace", "sched-e2e")
	s.kubectl(c, "create", "configmap", "-n", "sched-e2e", "app-config", "--from-literal=greeting=hello")
	s.kubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminSchedule
metadata:
  name: every-minute
  namespace: sched-e2e
spec:
  schedule: "*/1 * * * *"
  template:
    backupSpec:
      snapshotVolumes: false
      ttl: 1h
`, "apply", "-f", "-")
	var veleroSchedule string
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nas", "-n", "sched-e2e", "every-minute", "-o",
			`jsonpath={.status.phase}|{.status.veleroSchedule.status.phase}|{.status.nextRun}|{.status.veleroSchedule.name}`)
		f := strings.Split(out, "|")
		if len(f) == 4 {
			veleroSchedule = f[3]
		}
		return strings.HasPrefix(out, "Created|Enabled|20"), out
	})
	c.Check(s.kubectl(c, "get", "nas", "-n", "sched-e2e"), Matches, `NAME\s+REQUEST-PHASE\s+VELERO-PHASE\s+NEXT-RUN\s+PAUSED\s+AGE\nevery-minute\s+Created\s+Enabled\s+20\S+\s+(false\s+)?[0-9]+s\n`)

	// Two runs, each a Completed NonAdminBackup of the namespace.
	var nabs []string
	e2estack.Eventually(c, 210*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "sched-e2e", "-l", "oadp.openshift.io/nonadminschedule=every-minute", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.veleroBackup.status.phase}{" "}{end}`)
		nabs = nil
		for _, f := range strings.Fields(out) {
			if name, phase, _ := strings.Cut(f, "="); phase == "Completed" {
				nabs = append(nabs, name)
			}
		}
		return len(nabs) >= 2, out
	})
	for _, n := range nabs {
		c.Check(n, Matches, `every-minute-20[0-9]{12}`)
	}
	c.Check(s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "-l", "velero.io/schedule-name="+veleroSchedule, "-o",
		`jsonpath={range .items[*]}{.metadata.annotations.openshift\.io/oadp-nab-origin-namespace}{" "}{end}`), Matches, `(sched-e2e )+`)
	out := s.kubectl(c, "get", "nas", "-n", "sched-e2e", "every-minute", "-o", `jsonpath={.status.lastSuccessfulBackup}|{.status.recentBackups[*].name}`)
	c.Check(out, Matches, `20\S+\|every-minute-20[0-9]{12} every-minute-20[0-9]{12}.*`)

	// A run restores like any backup.
	s.kubectl(c, "delete", "configmap", "-n", "sched-e2e", "app-config")
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata:\n  name: from-schedule\n  namespace: sched-e2e\nspec:\n  restoreSpec:\n    backupName: "+nabs[0]+"\n",
		"apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "configmap", "-n", "sched-e2e", "app-config", "-o", "jsonpath={.data.greeting}")
		return out == "hello", out
	})

	// paused reaches Velero: the tenant's pause, no longer the fair
	// share's hold between runs.
	s.kubectl(c, "patch", "nas", "-n", "sched-e2e", "every-minute", "--type", "merge", "-p", `{"spec":{"paused":true}}`)
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "schedules.velero.io", "-n", "openshift-adp", veleroSchedule, "-o",
			`jsonpath={.spec.paused}/{.metadata.annotations.openshift\.io/oadp-nacflow-paused-by-share}`)
		return out == "true/", out
	})

	// Deleting the schedule: the Velero Schedule goes, the backups stay.
	s.kubectl(c, "delete", "nas", "-n", "sched-e2e", "every-minute")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectlAllowFail("get", "schedules.velero.io", "-n", "openshift-adp", veleroSchedule)
		return strings.Contains(out, "NotFound"), out
	})
	for _, n := range nabs {
		c.Check(s.kubectl(c, "get", "nab", "-n", "sched-e2e", n, "-o", "jsonpath={.status.veleroBackup.status.phase}"), Equals, "Completed")
	}
}
