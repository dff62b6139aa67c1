package e2estorage

import (
	"strconv"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// retentionNamespace holds the schedule of TestZRetentionKeepsLastTwo.
const retentionNamespace = "retention-e2e"

// startRetentionSchedule creates, when the suite starts, a NonAdminSchedule
// running every minute with spec.retention keepLast 2: Velero's schedules
// run at most once a minute, so the four runs the check needs take four
// minutes, part of which the suite's other tests cover.
func (s *StorageSuite) startRetentionSchedule(c *C) {
	s.st.Kubectl(c, "create", "namespace", retentionNamespace)
	s.st.Kubectl(c, "create", "configmap", "-n", retentionNamespace, "app-config", "--from-literal=k=v")
	s.st.KubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminSchedule
metadata:
  name: keep-two
  namespace: `+retentionNamespace+`
spec:
  schedule: "*/1 * * * *"
  retention:
    keepLast: 2
  template:
    backupSpec:
      snapshotVolumes: false
`, "apply", "-f", "-")
}

// TestZRetentionKeepsLastTwo (Z: gocheck runs a suite's tests in name
// order, and this one checks a schedule that ran while the others did):
// after at least four runs of a schedule with retention keepLast 2, once it
// is paused, exactly two NonAdminBackups and two Velero Backups of it
// remain, Completed, the pruned runs' files are gone from the bucket, and
// status.retention tells it.
func (s *StorageSuite) TestZRetentionKeepsLastTwo(c *C) {
	ns := retentionNamespace
	e2estack.Eventually(c, 6*time.Minute, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "nas", "-n", ns, "keep-two", "-o", "jsonpath={.status.retention.pruned}")
		n, _ := strconv.Atoi(out)
		return n >= 2, "runs pruned: " + out
	})
	s.st.Kubectl(c, "patch", "nas", "-n", ns, "keep-two", "--type", "merge", "-p", `{"spec":{"paused":true}}`)
	schedule := s.st.Kubectl(c, "get", "nas", "-n", ns, "keep-two", "-o", "jsonpath={.status.veleroSchedule.name}")
	c.Assert(schedule, Not(Equals), "")
	var kept []string
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		nabs := s.st.Kubectl(c, "get", "nab", "-n", ns, "-l", "oadp.openshift.io/nonadminschedule=keep-two", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.veleroBackup.status.phase}={.spec.deleteBackup}={.status.plan.action}/{.status.plan.state}{" "}{end}`)
		backups := s.st.Kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "-l", "velero.io/schedule-name="+schedule, "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.phase}{" "}{end}`)
		kept = nil
		for _, f := range strings.Fields(backups) {
			name, phase, _ := strings.Cut(f, "=")
			if phase != "Completed" {
				return false, "a run still going: " + backups
			}
			kept = append(kept, name)
		}
		n := strings.Fields(nabs)
		ok := len(n) == 2 && len(kept) == 2 && !strings.Contains(nabs, "=true")
		for _, f := range n {
			ok = ok && strings.Contains(f, "=Completed==")
		}
		return ok, "NonAdminBackups: " + nabs + "; Velero Backups: " + backups
	})
	// In the bucket: the files of the two kept runs only.
	var names []string
	for _, k := range e2estack.KeysIn(c, s3URL(c, s.st), "velero", "backups/"+schedule+"-") {
		name, _, _ := strings.Cut(strings.TrimPrefix(k, "backups/"), "/")
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
	}
	c.Check(names, DeepEquals, kept, Commentf("the pruned runs' files are deleted with them"))
	out := s.st.Kubectl(c, "get", "nas", "-n", ns, "keep-two", "-o", "jsonpath={.status.retention.policy}|{.status.retention.kept}")
	c.Check(out, Equals, "keepLast 2|2")
	c.Check(s.st.Kubectl(c, "get", "events", "-n", ns, "--field-selector", "reason=PrunedBackup", "-o", "jsonpath={.items[0].message}"),
		Matches, `NonAdminBackup keep-two-20[0-9]{12} pruned by spec.retention \(keepLast 2\): it is deleted with its data`)
}

// s3URL is the object store's URL, from the default location's config.
func s3URL(c *C, st *e2estack.Stack) string {
	u := st.Kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", "default", "-o", "jsonpath={.spec.config.s3Url}")
	c.Assert(u, Matches, `http://127\.0\.0\.1:[0-9]+`)
	return u
}
