package e2e

import (
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// TestRestorePreview: a tenant bound only to admin backs up three
// ConfigMaps, deletes one, changes one and adds one; `kubectl nac restore
// preview` tells create for the deleted one, skip for the changed one
// (existingResourcePolicy none; update naming data.k with update) and says
// nothing of the new one; no Velero Restore is made and no NonAdminRestore
// is left. The real restore then does what the preview said. A preview is
// refused as its restore would be, and spec.preview cannot be turned on
// for an existing restore.
func (s *E2ESuite) TestRestorePreview(c *C) {
	const ns = "preview-a"
	s.kubectl(c, "apply", "-f", "config/rbac/tenant_roles.yaml")
	s.kubectl(c, "create", "namespace", ns)
	s.kubectl(c, "create", "rolebinding", "dave", "-n", ns, "--clusterrole=admin", "--user=dave")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		got := s.canI("create", "nonadminrestores.oadp.openshift.io", ns, "dave")
		return got == "yes", "dave may create NARs: " + got
	})
	for _, name := range []string{"gone", "changed", "same"} {
		s.kubectl(c, "create", "configmap", "-n", ns, name, "--from-literal=k=before")
	}
	out, code := s.nac("dave", "backup", "create", "b1", "-n", ns, "--wait")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, s.drain()))

	s.kubectl(c, "delete", "configmap", "-n", ns, "gone")
	s.kubectl(c, "patch", "configmap", "-n", ns, "changed", "--type", "merge", "-p", `{"data":{"k":"after"}}`)
	s.kubectl(c, "create", "configmap", "-n", ns, "added", "--from-literal=k=new")
	restores := func() string {
		return strings.TrimSpace(s.kubectl(c, "get", "restores.velero.io", "-n", "openshift-adp", "-o", "name"))
	}
	before := restores()

	out, code = s.nac("dave", "restore", "preview", "-n", ns, "--from-backup", "b1")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, s.drain()))
	c.Check(out, Matches, `(?s).*Preview of Velero Backup \S+: [0-9]+ items of Velero Backup \S+ for namespace preview-a: 1 create, [0-9]+ skip, 0 update, [0-9]+ excluded\..*`)
	c.Check(out, Matches, `(?s).*\ncreate\s+configmaps\s+gone\s*\n.*`)
	c.Check(out, Matches, `(?s).*\nskip\s+configmaps\s+changed\s+exists and differs; existingResourcePolicy none leaves it as it is; fields: data.k\n.*`)
	c.Check(out, Matches, `(?s).*\nskip\s+configmaps\s+same\s+exists, as backed up\n.*`)
	c.Check(strings.Contains(out, " added "), Equals, false, Commentf("the new ConfigMap is not the backup's: %s", out))

	out, code = s.nac("dave", "restore", "preview", "-n", ns, "--from-backup", "b1", "--existing-resource-policy", "update", "--include-resources", "configmaps")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, s.drain()))
	c.Check(out, Matches, `(?s).*: 1 create, [0-9]+ skip, 1 update, [0-9]+ excluded\..*\nupdate\s+configmaps\s+changed\s+fields: data.k\n.*`)

	c.Check(restores(), Equals, before, Commentf("a preview makes no Velero Restore"))
	c.Check(strings.TrimSpace(s.kubectl(c, "get", "nar", "-n", ns, "-o", "name")), Equals, "", Commentf("the preview's NonAdminRestore is deleted"))

	// The real restore does what the preview said.
	out, code = s.nac("dave", "restore", "create", "r1", "-n", ns, "--from-backup", "b1", "--existing-resource-policy", "update", "--include-resources", "configmaps", "--wait")
	c.Assert(code, Equals, 0, Commentf("%s\n%s", out, s.drain()))
	for name, want := range map[string]string{"gone": "before", "changed": "before", "same": "before", "added": "new"} {
		c.Check(s.kubectl(c, "get", "configmap", "-n", ns, name, "-o", "jsonpath={.data.k}"), Equals, want, Commentf("%s", name))
	}

	// Refused as the restore would be: a cluster-scoped kind, a backup of
	// no NonAdminBackup of the namespace; spec.preview is immutable.
	out, code = s.nac("dave", "restore", "preview", "-n", ns, "--from-backup", "b1", "--include-resources", "namespaces")
	c.Check(code, Equals, 1, Commentf(out))
	c.Check(out, Matches, `(?s).*Error: NonAdminRestore b1-preview-\S+ failed: phase validate \(ValidateRestoreSpec\) failed: .*namespaces.*`)
	out, code = s.nac("dave", "restore", "preview", "-n", ns, "--from-backup", "missing")
	c.Check(code, Equals, 1, Commentf(out))
	c.Check(out, Matches, `(?s).*Error: NonAdminRestore missing-preview-\S+ failed: .*missing.*`)
	out = s.kubectlAllowFail("patch", "nar", "-n", ns, "r1", "--type", "merge", "-p", `{"spec":{"preview":true}}`, "--as", "dave")
	c.Check(out, Matches, `(?s).*spec.preview is immutable.*`)
	c.Check(restores(), Not(Equals), before, Commentf("r1 made its Velero Restore"))
}
