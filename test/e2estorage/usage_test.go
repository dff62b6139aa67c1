package e2estorage

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/test/e2estack"
)

// quotaBlueprint returns a per-tenant Blueprint (YAML) named name for the
// Namespaces labelled usage=<name>: the built-in backup action with quota as
// its checkQuota phase's args (as examples/blueprints/nonadminbackup-quota.yaml).
func quotaBlueprint(c *C, name string, quota map[string]any) string {
	return blueprintYAML(c, name, "usage", func(a *v1alpha1.BlueprintAction) {
		for i := range a.Phases {
			if a.Phases[i].Func == "CheckQuota" {
				a.Phases[i].Args = jsonArgs(c, quota)
				return
			}
		}
		c.Fatalf("the built-in backup action has no CheckQuota phase")
	})
}

// nabUsage waits until NonAdminBackup ns/name has status.usage and returns
// it.
func (s *StorageSuite) nabUsage(c *C, ns, name string) *v1alpha1.BackupUsage {
	var nab v1alpha1.NonAdminBackup
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, err := s.st.Run("", "get", "nab", "-n", ns, name, "-o", "json")
		if err != nil {
			return false, out
		}
		nab = v1alpha1.NonAdminBackup{}
		c.Assert(json.Unmarshal([]byte(out), &nab), IsNil)
		return nab.Status.Usage != nil && nab.Status.Plan != nil && nab.Status.Plan.State == v1alpha1.PlanComplete,
			fmt.Sprintf("usage of %s/%s: %+v, plan %+v", ns, name, nab.Status.Usage, nab.Status.Plan)
	})
	return nab.Status.Usage
}

// TestUsage: three backups of one namespace each record status.usage (the
// contents' size, read through Velero, measured by nac after each plan with
// no blueprint of the admin's); the gauge
// nacflow_tenant_backup_bytes equals their sum and nacflow_tenant_backups
// counts them; `kubectl nac usage` prints the same to the tenant.
func (s *StorageSuite) TestUsage(c *C) {
	const ns, user = "use-a", "grace"
	s.st.Kubectl(c, "create", "namespace", ns)
	s.st.Kubectl(c, "create", "rolebinding", user, "-n", ns, "--clusterrole=admin", "--user="+user)
	s.st.Kubectl(c, "create", "configmap", "-n", ns, "payload", "--from-literal=blob="+strings.Repeat("0123456789", 2000))
	var sum int64
	for _, b := range []string{"b1", "b2", "b3"} {
		s.backup(c, ns, b, user)
		u := s.nabUsage(c, ns, b)
		c.Check(u.ContentsBytes > 1000, Equals, true, Commentf("%s: %+v", b, u))
		c.Check(u.TotalBytes, Equals, u.ContentsBytes+u.VolumeBytes)
		c.Check(u.StorageLocation, Equals, "default")
		sum += u.TotalBytes
	}
	token := strings.TrimSpace(s.st.Kubectl(c, "create", "token", "metrics-scraper", "-n", "openshift-adp"))
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		code, page, err := e2estack.Scrape(s.metrics, token)
		if err != nil || code != 200 {
			return false, fmt.Sprintf("%d %v", code, err)
		}
		bytes, ok1 := e2estack.Sample(page, `nacflow_tenant_backup_bytes{location="default",namespace="use-a"}`)
		count, ok2 := e2estack.Sample(page, `nacflow_tenant_backups{location="default",namespace="use-a"}`)
		return ok1 && ok2 && int64(bytes) == sum && count == 3, fmt.Sprintf("bytes %v (want %d), backups %v", bytes, sum, count)
	})
	out, code := s.st.Nac(s.bin, user, "usage", "-n", ns)
	c.Assert(code, Equals, 0, Commentf(out))
	q := resource.NewQuantity(sum, resource.BinarySI).String()
	c.Check(out, Matches, fmt.Sprintf(`(?s)LOCATION\s+BACKUPS\s+BYTES\s+NOT MEASURED\ndefault\s+3\s+%s\s+0\ntotal\s+3\s+%s\s+0\n`, q, q))
}

// TestQuota: with maxBackups 2 for the namespace, the third backup is
// refused — Accepted=False, QuotaExceeded naming the figure, the limit and
// what to delete — and nothing is made for it in the OADP namespace; the
// second is accepted with a Warning (past 80 %); deleting one
// (spec.deleteBackup) makes room for the next.
func (s *StorageSuite) TestQuota(c *C) {
	const ns, user = "quota-a", "heidi"
	s.st.KubectlIn(c, quotaBlueprint(c, ns+"-quota", map[string]any{"maxBackups": 2}), "apply", "-f", "-")
	s.waitValid(c, ns+"-quota")
	s.st.Kubectl(c, "create", "namespace", ns)
	s.st.Kubectl(c, "label", "namespace", ns, "usage="+ns+"-quota")
	s.st.Kubectl(c, "create", "rolebinding", user, "-n", ns, "--clusterrole=admin", "--user="+user)
	s.st.Kubectl(c, "create", "configmap", "-n", ns, "settings", "--from-literal=k=v")
	for _, b := range []string{"b1", "b2"} {
		s.backup(c, ns, b, user)
		s.nabUsage(c, ns, b)
	}
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "events", "-n", ns, "--field-selector", "reason=QuotaNearlyReached,type=Warning", "-o", "jsonpath={.items[*].message}")
		return strings.Contains(out, "holds 2 of the 2 backups"), out
	})
	// The namespace's Velero Backups (other tests' schedules run meanwhile).
	backupsOf := func() string {
		return s.st.Kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "-o",
			`jsonpath={range .items[?(@.metadata.annotations.openshift\.io/oadp-nab-origin-namespace=="`+ns+`")]}{.metadata.name}{" "}{end}`)
	}
	backupsBefore := backupsOf()
	c.Check(strings.Fields(backupsBefore), HasLen, 2)

	s.backup(c, ns, "b3", user)
	var cond string
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		cond = s.st.Kubectl(c, "get", "nab", "-n", ns, "b3", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].status}/{.status.conditions[?(@.type=="Accepted")].reason}: {.status.conditions[?(@.type=="Accepted")].message}`)
		return strings.HasPrefix(cond, "False/QuotaExceeded"), cond
	})
	c.Check(cond, Matches, `False/QuotaExceeded: .*quota exceeded: namespace quota-a holds 2 backups, the most its quota allows \(maxBackups 2\): delete one \(spec.deleteBackup: true on a NonAdminBackup\) to make room`)
	c.Check(backupsOf(), Equals, backupsBefore, Commentf("nothing made for the refused backup"))
	c.Check(s.st.Kubectl(c, "get", "nab", "-n", ns, "b3", "-o", "jsonpath={.status.veleroBackup.name}"), Equals, "")

	// A schedule of the full namespace is paused before its first run,
	// saying why; deleted, it leaves nothing.
	s.st.KubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminSchedule
metadata:
  name: every-minute
  namespace: `+ns+`
spec:
  schedule: "*/1 * * * *"
  template:
    backupSpec: {}
`, "apply", "--as", user, "-f", "-")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		cond = s.st.Kubectl(c, "get", "nas", "-n", ns, "every-minute", "-o", `jsonpath={.status.conditions[?(@.type=="WithinQuota")].status}/{.status.conditions[?(@.type=="WithinQuota")].reason}: {.status.conditions[?(@.type=="WithinQuota")].message}`)
		return strings.HasPrefix(cond, "False/QuotaExceeded"), cond
	})
	c.Check(cond, Matches, `False/QuotaExceeded: schedule paused until there is room: quota exceeded: namespace quota-a holds 2 backups.*`)
	vs := s.st.Kubectl(c, "get", "nas", "-n", ns, "every-minute", "-o", "jsonpath={.status.veleroSchedule.name}")
	c.Check(s.st.Kubectl(c, "get", "schedules.velero.io", "-n", "openshift-adp", vs, "-o", `jsonpath={.spec.paused}/{.metadata.annotations.openshift\.io/oadp-nacflow-paused-by-quota}`), Equals, "true/true")
	s.st.Kubectl(c, "delete", "nas", "-n", ns, "every-minute", "--as", user, "--wait")
	c.Check(backupsOf(), Equals, backupsBefore, Commentf("the paused schedule took no run"))

	// Deleting one frees room.
	s.st.Kubectl(c, "patch", "nab", "-n", ns, "b1", "--type", "merge", "--as", user, "-p", `{"spec":{"deleteBackup":true}}`)
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "nab", "-n", ns, "b1")
		return strings.Contains(out, "NotFound"), out
	})
	s.backup(c, ns, "b4", user)
	s.nabUsage(c, ns, "b4")
	out, code := s.st.Nac(s.bin, user, "usage", "-n", ns)
	c.Assert(code, Equals, 0, Commentf(out))
	c.Check(out, Matches, `(?s).*\ndefault\s+2\s+.*`)
}
