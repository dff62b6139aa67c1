package e2e

import (
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// TestHostileTenantModifiers: a tenant's resource modifiers whose effect
// nacflow could not judge in advance are refused when
// the NonAdminRestore is validated, naming the rule, and nothing reaches
// Velero: a rule with a matches condition (Velero evaluates it on the item
// after its own and other plugins' changes), one whose groupResource glob
// reaches Secrets, and one that patches the status.
func (s *E2ESuite) TestHostileTenantModifiers(c *C) {
	const ns = "hostile-a"
	s.tenant(c, ns)
	// The tenant roles give namespace admins the NAC kinds (another test
	// removes them with make undeploy).
	s.kubectl(c, "apply", "-f", "config/rbac/tenant_roles.yaml")
	s.kubectl(c, "create", "rolebinding", "-n", ns, "alice", "--clusterrole=admin", "--user=alice")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		got := s.canI("create", "nonadminrestores.oadp.openshift.io", ns, "alice")
		return got == "yes", "alice may create NARs: " + got
	})
	s.nabCompletes(c, ns, "all", "")

	for _, t := range []struct{ name, rules, want string }{
		{"matches", "    - conditions:\n        groupResource: configmaps\n        matches: [{path: /metadata/annotations/velero.io~1must-include-additional-items, value: \"true\"}]\n" +
			"      mergePatches:\n      - patchData: '{\"data\":{\"k\":\"w\"}}'\n",
			`spec.restoreSpec.resourceModifier: ConfigMap matches: resourceModifierRules\[0\]: conditions.matches: Velero evaluates it on the item after its own and other plugins' changes, which nacflow cannot reproduce exactly.*`},
		{"everything", "    - conditions: {groupResource: '*'}\n      patches:\n      - {operation: add, path: /metadata/labels/x, value: '\"y\"'}\n",
			`spec.restoreSpec.resourceModifier: ConfigMap everything: resourceModifierRules\[0\]: conditions.groupResource "\*" matches serviceaccounts: .*`},
		{"status", "    - conditions: {groupResource: services}\n      mergePatches:\n      - patchData: '{\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"10.0.0.1\"}]}}}'\n",
			`spec.restoreSpec.resourceModifier: ConfigMap status: resourceModifierRules\[0\]: patchData sets status: whether a status is restored is nacflow's to decide`},
	} {
		s.kubectlIn(c, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+t.name+", namespace: "+ns+"}\ndata:\n  modifiers.yaml: |\n    version: v1\n    resourceModifierRules:\n"+t.rules,
			"--as", "alice", "create", "-f", "-")
		s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: "+t.name+", namespace: "+ns+"}\n"+
			"spec:\n  restoreSpec: {backupName: all, resourceModifier: {kind: ConfigMap, name: "+t.name+"}}\n", "--as", "alice", "create", "-f", "-")
		e2estack.Eventually(c, time.Minute, func() (bool, string) {
			out := s.narCondition(c, ns, t.name, "Accepted")
			return strings.HasPrefix(out, "False|"), out
		})
		c.Check(s.narCondition(c, ns, t.name, "Accepted"), Matches, `False\|InvalidRestoreSpec\|`+t.want, Commentf(t.name))
		c.Check(s.kubectl(c, "get", "nar", "-n", ns, t.name, "-o", "jsonpath={.status.phase}|{.status.veleroRestore.name}"), Equals, "BackingOff|", Commentf(t.name))
	}
}

// TestPlantedRestoreRecreatedByVelero: a tenant plants a NonAdminRestore
// into a namespace it holds nothing in (refused for it); the cluster
// admin's own Velero backup and restore of the tenant's namespace (disaster
// recovery) re-creates it, and the API server says Velero created it. That
// restore runs with no one's rights but a tenant's: its record names no
// tenant (RequesterVerified=False/RequesterNotATenant), so the mapping is
// refused and nothing reaches the victim's namespace.
func (s *E2ESuite) TestPlantedRestoreRecreatedByVelero(c *C) {
	const ns, victim = "hostile-b", "hostile-b-victim"
	s.tenant(c, ns)
	s.kubectl(c, "create", "namespace", victim)
	// The tenant roles give namespace admins the NAC kinds (another test
	// removes them with make undeploy).
	s.kubectl(c, "apply", "-f", "config/rbac/tenant_roles.yaml")
	s.kubectl(c, "create", "rolebinding", "-n", ns, "alice", "--clusterrole=admin", "--user=alice")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		got := s.canI("create", "nonadminrestores.oadp.openshift.io", ns, "alice")
		return got == "yes", "alice may create NARs: " + got
	})
	s.nabCompletes(c, ns, "all", "")
	planted := "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: planted, namespace: " + ns + "}\n" +
		"spec:\n  restoreSpec: {backupName: all, namespaceMapping: {" + ns + ": " + victim + "}}\n"
	s.kubectlIn(c, planted, "--as", "alice", "create", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.narCondition(c, ns, "planted", "Accepted")
		return strings.HasPrefix(out, "False|"), out
	})

	// The admin backs the namespace's NonAdminRestores up with Velero
	// itself, loses them, and restores them.
	s.kubectlIn(c, "apiVersion: velero.io/v1\nkind: Backup\nmetadata: {name: dr-"+ns+", namespace: openshift-adp}\n"+
		"spec: {includedNamespaces: ["+ns+"], includedResources: [nonadminrestores.oadp.openshift.io]}\n", "create", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "dr-"+ns, "-o", "jsonpath={.status.phase}")
		return out == "Completed", out
	})
	s.kubectl(c, "delete", "nar", "-n", ns, "planted")
	s.kubectlIn(c, "apiVersion: velero.io/v1\nkind: Restore\nmetadata: {name: dr-"+ns+", namespace: openshift-adp}\n"+
		"spec: {backupName: dr-"+ns+"}\n", "create", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "restores.velero.io", "-n", "openshift-adp", "dr-"+ns, "-o", "jsonpath={.status.phase}")
		return out == "Completed", out
	})
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.narCondition(c, ns, "planted", "Accepted")
		return strings.HasPrefix(out, "False|"), out
	})
	c.Check(s.narCondition(c, ns, "planted", "RequesterVerified"), Matches, `False\|RequesterNotATenant\|created by \S+, who is not a tenant \(.*\): .*`)
	c.Check(s.narCondition(c, ns, "planted", "Accepted"), Matches,
		`False\|InvalidRestoreSpec\|spec.restoreSpec.namespaceMapping: `+ns+` to `+victim+`: a restore into another namespace is held to the rights there of whoever asked, and no one is known \(condition RequesterVerified: RequesterNotATenant\)`)
	c.Check(s.kubectl(c, "get", "nar", "-n", ns, "planted", "-o", "jsonpath={.status.phase}|{.status.veleroRestore.name}"), Equals, "BackingOff|")
	c.Check(s.kubectlAllowFail("get", "configmap", "-n", victim, "cm"), Matches, `(?s).*NotFound.*`)
}
