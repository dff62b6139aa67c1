package e2e

import (
	"encoding/json"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// TestScopedFiltersWithRealVelero: a tenant using Velero's newer filters
// (includedNamespaceScopedResources) gets a Completed backup: nacflow adds
// its exclusions in the same filter style, as Velero refuses a mix ("They
// cannot be used together").
func (s *E2ESuite) TestScopedFiltersWithRealVelero(c *C) {
	s.tenant(c, "tenant-scoped")
	s.kubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackup
metadata: {name: configmaps-only, namespace: tenant-scoped}
spec:
  backupSpec:
    includedNamespaceScopedResources: [configmaps]
`, "apply", "-f", "-")
	var name, out string
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out = s.kubectl(c, "get", "nab", "-n", "tenant-scoped", "configmaps-only", "-o",
			"jsonpath={.status.veleroBackup.status.phase}|{.status.veleroBackup.name}|{.status.plan.state}|{.status.veleroBackup.status.validationErrors}")
		name = strings.Split(out, "|")[1]
		phase := strings.Split(out, "|")[0]
		return phase == "Completed" || phase == "PartiallyFailed" || phase == "Failed" || phase == "FailedValidation", out
	})
	c.Assert(out, Matches, `Completed\|.*`)

	var spec velerov1.BackupSpec
	c.Assert(json.Unmarshal([]byte(s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", name, "-o", "jsonpath={.spec}")), &spec), IsNil)
	c.Check(spec.ExcludedResources, HasLen, 0, Commentf("no old-style filter mixed in"))
	c.Check(contains(spec.ExcludedNamespaceScopedResources, "nonadminbackups.oadp.openshift.io"), Equals, true, Commentf("%v", spec.ExcludedNamespaceScopedResources))
	c.Check(contains(spec.ExcludedClusterScopedResources, "clusterroles"), Equals, true, Commentf("%v", spec.ExcludedClusterScopedResources))

	list := s.resourceList(c, name)
	c.Check(contains(list["v1/ConfigMap"], "tenant-scoped/cm"), Equals, true, Commentf("%v", list))
	c.Check(list["v1/Secret"], HasLen, 0, Commentf("only configmaps were asked for: %v", list))
}
