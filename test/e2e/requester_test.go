package e2e

import (
	"fmt"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// forgedRecord is a requester record a tenant writes itself: the cluster
// admin, with a signature nacflow's key never made.
const forgedRecord = `    openshift.io/oadp-nacflow-requester: '{"user":{"username":"system:admin","groups":["system:masters"]},"at":"%s"}'
    openshift.io/oadp-nacflow-requester-signature: Zm9yZ2VkLXNpZ25hdHVyZS0wMDAwMDAwMDAwMDAwMDA=
`

// narAs creates NonAdminRestore name of backup in ns as user (kubectl
// --as; "" for the admin), with forged requester annotations when forged.
func (s *E2ESuite) narAs(c *C, user, ns, name, backup string, forged bool) {
	meta := fmt.Sprintf("metadata:\n  name: %s\n  namespace: %s\n", name, ns)
	if forged {
		meta += "  annotations:\n" + fmt.Sprintf(forgedRecord, time.Now().UTC().Format(time.RFC3339))
	}
	args := []string{"create", "-f", "-"}
	if user != "" {
		args = append([]string{"--as", user}, args...)
	}
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\n"+meta+"spec:\n  restoreSpec: {backupName: "+backup+"}\n", args...)
}

// narDone waits until NonAdminRestore name's Velero Restore completed and
// returns its name.
func (s *E2ESuite) narDone(c *C, ns, name string) string {
	var restore, out string
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out = s.kubectl(c, "get", "nar", "-n", ns, name, "-o", "jsonpath={.status.veleroRestore.status.phase}|{.status.plan.state}|{.status.veleroRestore.name}")
		restore = out[strings.LastIndex(out, "|")+1:]
		return strings.Contains(out, "|complete|") || strings.Contains(out, "|failed|"), out
	})
	if !strings.HasPrefix(out, "Completed|complete|") {
		log := gunzip(c, getObject(c, s.s3URL(c), "velero", "restores/"+restore+"/restore-"+restore+"-logs.gz"))
		c.Fatalf("restore %s: %s; its log:\n%s", name, out, log)
	}
	return restore
}

// condition returns type's status|reason|message on NonAdminRestore name.
func (s *E2ESuite) narCondition(c *C, ns, name, typ string) string {
	return s.kubectl(c, "get", "nar", "-n", ns, name, "-o",
		fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%[1]s")].status}|{.status.conditions[?(@.type=="%[1]s")].reason}|{.status.conditions[?(@.type=="%[1]s")].message}`, typ))
}

// TestRestoreBoundedByTheRequester: with nacflow's requester webhook (as
// make run installs it), a restore is held to what the person who asked
// could do, with the real Velero and nacflow's plugin. eddie, edit in his
// namespace, restores a backup holding a RoleBinding to admin: the
// ConfigMap comes back, the binding does not (edit may not create
// RoleBindings), and both the pre-check and the plugin say so naming
// eddie's missing right; the admin's restore of the same backup (the admin
// is no tenant: the tenant role alone) brings the binding back. A record eddie forges is replaced by his own. Without the
// webhook (the admin deletes its configuration), a forged record is
// refused, and an unrecorded restore is bounded by the tenant role alone,
// as before, saying so in condition RequesterVerified.
func (s *E2ESuite) TestRestoreBoundedByTheRequester(c *C) {
	const ns = "tenant-q"
	s3 := s.s3URL(c)
	s.tenant(c, ns)
	s.kubectl(c, "create", "rolebinding", "-n", ns, "eddie", "--clusterrole=edit", "--user=eddie")
	s.kubectl(c, "create", "rolebinding", "-n", ns, "to-admin", "--clusterrole=admin", "--user=zed")
	s.nabCompletes(c, ns, "all", "")
	s.kubectl(c, "delete", "rolebinding", "-n", ns, "to-admin")
	s.kubectl(c, "delete", "configmap", "-n", ns, "cm")

	// eddie's restore, with a record he forged: corrected to his own.
	s.narAs(c, "eddie", ns, "by-eddie", "all", true)
	restore := s.narDone(c, ns, "by-eddie")
	c.Check(s.narCondition(c, ns, "by-eddie", "RequesterVerified"), Matches,
		`True\|RequesterRecorded\|created by eddie \(groups system:authenticated\), as recorded by nacflow's webhook: every item is checked as eddie \(SubjectAccessReview\), within ClusterRole admin`)
	c.Check(s.kubectl(c, "get", "nar", "-n", ns, "by-eddie", "-o", `jsonpath={.metadata.annotations.openshift\.io/oadp-nacflow-requester}`),
		Matches, `\{"user":\{"username":"eddie","groups":\["system:authenticated"\]\},"at":".*"\}`)
	c.Check(s.narCondition(c, ns, "by-eddie", "RestoreItemsChecked"), Matches,
		`False\|ItemsExcluded\|2 of [0-9]+ items of Velero Backup \S+ are beyond what ClusterRole admin allows in namespace tenant-q and eddie may do there and are not restored: `+
			`rolebindings.rbac.authorization.k8s.io tenant-q/eddie: eddie may not create rolebindings.rbac.authorization.k8s.io in namespace tenant-q; `+
			`rolebindings.rbac.authorization.k8s.io tenant-q/to-admin: eddie may not create rolebindings.rbac.authorization.k8s.io in namespace tenant-q`)
	c.Check(s.kubectl(c, "get", "restores.velero.io", "-n", "openshift-adp", restore, "-o", `jsonpath={.metadata.annotations.nacflow\.io/restore-requester}`),
		Matches, `\{"username":"eddie","groups":\["system:authenticated"\]\}`)
	c.Check(s.kubectl(c, "get", "configmap", "-n", ns, "cm", "-o", "jsonpath={.data.k}"), Equals, "v")
	c.Check(s.kubectlAllowFail("get", "rolebinding", "-n", ns, "to-admin"), Matches, `(?s).*NotFound.*`)
	log := gunzip(c, getObject(c, s3, "velero", "restores/"+restore+"/restore-"+restore+"-logs.gz"))
	c.Check(strings.Contains(log, "nacflow: not restoring rolebindings.rbac.authorization.k8s.io tenant-q/to-admin: eddie may not create rolebindings.rbac.authorization.k8s.io in namespace tenant-q"),
		Equals, true, Commentf("restore log:\n%s", log))

	// The admin's restore of the same backup brings the binding back: the
	// admin is no tenant, so the tenant role alone bounds it.
	s.narAs(c, "", ns, "by-admin", "all", false)
	s.narDone(c, ns, "by-admin")
	c.Check(s.narCondition(c, ns, "by-admin", "RequesterVerified"), Matches, `False\|RequesterNotATenant\|created by \S+, who is not a tenant \(.*\): a NonAdminRestore runs only with a tenant's rights, so every item is checked against ClusterRole admin alone, .*`)
	c.Check(s.kubectl(c, "get", "rolebinding", "-n", ns, "to-admin", "-o", "jsonpath={.roleRef.name}"), Equals, "admin")

	// The admin removes the webhook: nacflow keeps today's rules and says so.
	hook := s.kubectl(c, "get", "mutatingwebhookconfiguration", e2estack.LocalWebhookConfiguration, "-o", "yaml")
	s.kubectl(c, "delete", "mutatingwebhookconfiguration", e2estack.LocalWebhookConfiguration)
	defer func() {
		// Back as it was (the controller injects its CA again).
		s.kubectlIn(c, stripServerFields(hook), "create", "-f", "-")
		s.st.AwaitRequesterWebhook(c, ns)
	}()
	s.kubectl(c, "delete", "rolebinding", "-n", ns, "to-admin")
	// A record eddie forges is refused: nothing restored.
	var name string
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		// The API server forgets the configuration within moments.
		name = fmt.Sprintf("forged-%d", time.Now().UnixNano())
		s.narAs(c, "eddie", ns, name, "all", true)
		out := s.kubectl(c, "get", "nar", "-n", ns, name, "-o", `jsonpath={.metadata.annotations.openshift\.io/oadp-nacflow-requester-signature}`)
		return strings.HasPrefix(out, "Zm9yZ2Vk"), out
	})
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.narCondition(c, ns, name, "Accepted")
		return strings.HasPrefix(out, "False|"), out
	})
	c.Check(s.narCondition(c, ns, name, "Accepted"), Matches,
		`False\|InvalidRestoreSpec\|metadata.annotations\[openshift.io/oadp-nacflow-requester\]: the requester record was not written by nacflow's admission webhook for this object: its signature does not match; refusing to restore \(delete the NonAdminRestore and create it again\)`)
	c.Check(s.narCondition(c, ns, name, "RequesterVerified"), Matches, `False\|RequesterForged\|.*`)
	c.Check(s.kubectl(c, "get", "nar", "-n", ns, name, "-o", "jsonpath={.status.phase}|{.status.veleroRestore.name}"), Equals, "BackingOff|")

	// An unrecorded restore: the tenant role alone, as before the webhook.
	s.narAs(c, "eddie", ns, "unrecorded", "all", false)
	s.narDone(c, ns, "unrecorded")
	c.Check(s.narCondition(c, ns, "unrecorded", "RequesterVerified"), Matches,
		`False\|WebhookNotInstalled\|nacflow's requester webhook \(MutatingWebhookConfiguration nacflow-requester-local\) is not installed, so no one recorded who asked: every item is checked against ClusterRole admin alone, whoever asked; .*`)
	c.Check(s.kubectl(c, "get", "rolebinding", "-n", ns, "to-admin", "-o", "jsonpath={.roleRef.name}"), Equals, "admin")
}

// stripServerFields drops what the API server sets from an object's YAML,
// so that it can be created again.
func stripServerFields(yaml string) string {
	var out []string
	for _, l := range strings.Split(yaml, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "resourceVersion:") || strings.HasPrefix(t, "uid:") || strings.HasPrefix(t, "creationTimestamp:") || strings.HasPrefix(t, "generation:") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestRestoreIntoAnotherNamespace: namespaceMapping into a namespace the
// requester holds rights in, with the real Velero. alice, admin in map-a
// and map-b, restores map-a's backup into map-b: its objects are there,
// map-a untouched. bob, admin in map-a and view in map-b, is refused
// before any Velero Restore, naming the missing right; nothing is made in
// map-b. A protected namespace and a missing one are refused.
func (s *E2ESuite) TestRestoreIntoAnotherNamespace(c *C) {
	const a, b = "map-a", "map-b"
	s.tenant(c, a)
	s.kubectl(c, "create", "namespace", b)
	for _, rb := range [][]string{{a, "alice", "admin"}, {b, "alice", "admin"}, {a, "bob", "admin"}, {b, "bob", "view"}} {
		s.kubectl(c, "create", "rolebinding", "-n", rb[0], rb[1], "--clusterrole="+rb[2], "--user="+rb[1])
	}
	s.nabCompletes(c, a, "all", "")
	before := s.kubectl(c, "get", "configmap", "-n", a, "cm", "-o", "jsonpath={.metadata.resourceVersion}")

	mapped := func(user, name, to string) {
		s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: "+name+", namespace: "+a+"}\n"+
			"spec:\n  restoreSpec: {backupName: all, namespaceMapping: {"+a+": "+to+"}}\n", "--as", user, "create", "-f", "-")
	}
	mapped("alice", "copy", b)
	restore := s.narDone(c, a, "copy")
	c.Check(s.kubectl(c, "get", "configmap", "-n", b, "cm", "-o", "jsonpath={.data.k}|{.metadata.labels.velero\\.io/restore-name}"), Equals, "v|"+restore)
	c.Check(s.kubectl(c, "get", "secret", "-n", b, "creds", "-o", "jsonpath={.metadata.labels.velero\\.io/restore-name}"), Equals, restore)
	c.Check(s.kubectl(c, "get", "configmap", "-n", a, "cm", "-o", "jsonpath={.metadata.resourceVersion}"), Equals, before, Commentf("map-a untouched"))
	c.Check(s.narCondition(c, a, "copy", "RestoreItemsChecked"), Matches, `True\|ItemsAllowed\|[0-9]+ items of Velero Backup \S+ checked: all within what ClusterRole admin allows in namespace map-b and alice may do there`)

	// Previews, as each user, of the same restore into map-b.
	preview := func(user, name string) string {
		s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: "+name+", namespace: "+a+"}\n"+
			"spec:\n  preview: true\n  restoreSpec: {backupName: all, namespaceMapping: {"+a+": "+b+"}}\n", "--as", user, "create", "-f", "-")
		var out string
		e2estack.Eventually(c, time.Minute, func() (bool, string) {
			out = s.kubectl(c, "get", "nar", "-n", a, name, "-o", `jsonpath={.status.preview.message}|{range .status.preview.items[*]}{.outcome} {.resource} {.name}: {.reason};{end}`)
			return !strings.HasPrefix(out, "|"), out
		})
		return out
	}
	c.Check(preview("alice", "peek"), Matches, `[0-9]+ items of Velero Backup \S+ for namespace map-b: 0 create, [0-9]+ skip, 0 update, 0 excluded\|.*skip configmaps cm: .*`)
	c.Check(preview("bob", "bob-peek"), Matches, `.*for namespace map-b: .*\|.*excluded configmaps cm: bob may not create configmaps in namespace map-b;.*`)

	mapped("bob", "bobs", b)
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.narCondition(c, a, "bobs", "Accepted")
		return strings.HasPrefix(out, "False|"), out
	})
	c.Check(s.narCondition(c, a, "bobs", "Accepted"), Matches, `False\|ItemsExcluded\|[0-9]+ of [0-9]+ items .* beyond what ClusterRole admin allows in namespace map-b and bob may do there .*`+
		`configmaps map-a/cm: bob may not create configmaps in namespace map-b.*: refusing the whole restore into namespace map-b`)
	c.Check(s.kubectl(c, "get", "nar", "-n", a, "bobs", "-o", "jsonpath={.status.phase}|{.status.veleroRestore.name}"), Equals, "BackingOff|")
	c.Check(s.kubectl(c, "get", "configmaps,secrets,rolebindings", "-n", b, "-l", "velero.io/restore-name,velero.io/restore-name!="+restore, "-o", "name"), Equals, "")

	for _, t := range []struct{ name, to, want string }{
		{"protected", "kube-public", `spec.restoreSpec.namespaceMapping: map-a to kube-public: namespace kube-public is protected \(its name matches kube-\*\): a NonAdminRestore never restores into it`},
		{"missing", "map-none", `spec.restoreSpec.namespaceMapping: map-a to map-none: namespace map-none does not exist \(Velero would create it with its own rights\): create it first`},
		{"oadp", "openshift-adp", `spec.restoreSpec.namespaceMapping: map-a to openshift-adp: openshift-adp is the OADP namespace`},
	} {
		mapped("alice", t.name, t.to)
		e2estack.Eventually(c, time.Minute, func() (bool, string) {
			out := s.narCondition(c, a, t.name, "Accepted")
			return strings.HasPrefix(out, "False|"), out
		})
		c.Check(s.narCondition(c, a, t.name, "Accepted"), Matches, `False\|InvalidRestoreSpec\|`+t.want)
	}
}

// TestTenantResourceModifiers: a tenant's own resource modifiers (Velero's
// format, a ConfigMap of its namespace), with the real Velero. Scaling
// Deployments to 0 works: the modifiers are copied into the OADP namespace
// for the restore and deleted with it. A modifier that changes an item's
// namespace is refused before anything is restored; one that makes a
// ConfigMap into a RoleBinding to cluster-admin is refused, the item
// judged as it would be created.
func (s *E2ESuite) TestTenantResourceModifiers(c *C) {
	const ns = "mod-a"
	s.tenant(c, ns)
	s.kubectl(c, "create", "rolebinding", "-n", ns, "alice", "--clusterrole=admin", "--user=alice")
	s.kubectl(c, "create", "deployment", "-n", ns, "web", "--image=registry.invalid/web:1", "--replicas=2")
	s.nabCompletes(c, ns, "all", "")
	s.kubectl(c, "delete", "deployment", "-n", ns, "web")
	s.kubectl(c, "delete", "configmap", "-n", ns, "cm")

	modifiers := func(name, rules string) {
		s.kubectlIn(c, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: "+ns+"}\ndata:\n  modifiers.yaml: |\n    version: v1\n    resourceModifierRules:\n"+rules,
			"--as", "alice", "create", "-f", "-")
	}
	restore := func(name, mods string) {
		s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: "+name+", namespace: "+ns+"}\n"+
			"spec:\n  restoreSpec: {backupName: all, resourceModifier: {kind: ConfigMap, name: "+mods+"}}\n", "--as", "alice", "create", "-f", "-")
	}
	refused := func(name string) string {
		e2estack.Eventually(c, time.Minute, func() (bool, string) {
			out := s.narCondition(c, ns, name, "Accepted")
			return strings.HasPrefix(out, "False|"), out
		})
		c.Check(s.kubectl(c, "get", "nar", "-n", ns, name, "-o", "jsonpath={.status.phase}|{.status.veleroRestore.name}"), Equals, "BackingOff|")
		return s.narCondition(c, ns, name, "Accepted")
	}

	modifiers("scale", "    - conditions: {groupResource: deployments.apps}\n      patches:\n      - {operation: replace, path: /spec/replicas, value: \"0\"}\n")
	restore("scaled", "scale")
	name := s.narDone(c, ns, "scaled")
	c.Check(s.kubectl(c, "get", "deployment", "-n", ns, "web", "-o", "jsonpath={.spec.replicas}"), Equals, "0")
	c.Check(s.kubectl(c, "get", "configmap", "-n", ns, "cm", "-o", "jsonpath={.data.k}"), Equals, "v")
	copied := s.kubectl(c, "get", "restores.velero.io", "-n", "openshift-adp", name, "-o", "jsonpath={.spec.resourceModifier.name}")
	c.Check(copied, Equals, name+"-modifiers")
	c.Check(s.kubectl(c, "get", "configmap", "-n", "openshift-adp", copied, "-o", "jsonpath={.immutable}|{.data.modifiers\\.yaml}"), Matches, `(?s)true\|version: v1.*replicas.*`)
	s.kubectl(c, "delete", "nar", "-n", ns, "scaled")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "configmap", "-n", "openshift-adp", copied)
		return strings.Contains(out, "NotFound"), out
	})

	modifiers("move", "    - conditions: {groupResource: configmaps}\n      patches:\n      - {operation: replace, path: /metadata/namespace, value: '\"victim\"'}\n")
	restore("moved", "move")
	c.Check(refused("moved"), Matches, `False\|InvalidRestoreSpec\|spec.restoreSpec.resourceModifier: ConfigMap move: resourceModifierRules\[0\]: patch replace "/metadata/namespace" would change an item's namespace: a restore's items stay in its namespace`)

	s.kubectl(c, "delete", "configmap", "-n", ns, "cm")
	modifiers("escalate", "    - conditions: {groupResource: configmaps, resourceNameRegex: '^cm$'}\n      mergePatches:\n      - patchData: |\n"+
		"          {\"apiVersion\": \"rbac.authorization.k8s.io/v1\", \"kind\": \"RoleBinding\", \"data\": null,\n"+
		"           \"roleRef\": {\"apiGroup\": \"rbac.authorization.k8s.io\", \"kind\": \"ClusterRole\", \"name\": \"cluster-admin\"},\n"+
		"           \"subjects\": [{\"kind\": \"User\", \"apiGroup\": \"rbac.authorization.k8s.io\", \"name\": \"alice\"}]}\n")
	restore("escalated", "escalate")
	// Refused before anything is restored: no tenant modifier may change an
	// item's kind, whatever its conditions match when Velero applies it.
	c.Check(refused("escalated"), Matches, `False\|InvalidRestoreSpec\|spec.restoreSpec.resourceModifier: ConfigMap escalate: resourceModifierRules\[0\]: patchData sets apiVersion: .*`)
	c.Check(s.kubectlAllowFail("get", "rolebinding", "-n", ns, "cm"), Matches, `(?s).*NotFound.*`)
	c.Check(s.kubectlAllowFail("get", "configmap", "-n", ns, "cm"), Matches, `(?s).*NotFound.*`)
}
