package tenantmodifiers_test

import (
	"testing"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

func Test(t *testing.T) { TestingT(t) }

type ModifiersSuite struct{}

var _ = Suite(&ModifiersSuite{})

func cm(yaml string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mods", Namespace: "team"}, Data: map[string]string{"m.yaml": yaml}}
}

const scaleToZero = `version: v1
resourceModifierRules:
- conditions:
    groupResource: deployments.apps
  patches:
  - operation: replace
    path: /spec/replicas
    value: "0"
`

func (s *ModifiersSuite) TestParse(c *C) {
	_, err := tenantmodifiers.Parse(cm(scaleToZero))
	c.Check(err, IsNil)
	for _, t := range []struct{ about, yaml, want string }{
		{"two keys", "", `reading ConfigMap mods as Velero's resource modifiers .*`},
		{"not v1", "version: v2\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  patches: [{operation: remove, path: /spec}]\n", `ConfigMap mods: Velero refuses these resource modifiers: .*`},
		{"unknown field", "version: v1\nrules: []\n", `reading ConfigMap mods as Velero's resource modifiers .*`},
		{"a namespace patch", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  patches: [{operation: replace, path: /metadata/namespace, value: '\"victim\"'}]\n",
			`ConfigMap mods: resourceModifierRules\[0\]: patch replace "/metadata/namespace" would change an item's namespace: .*`},
		{"a metadata replace", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  patches: [{operation: replace, path: /metadata, value: '{}'}]\n",
			`.*patch replace "/metadata" would change an item's namespace.*`},
		{"copy from the namespace", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  patches: [{operation: move, from: /metadata/namespace, path: /metadata/name}]\n",
			`.*patch move "/metadata/namespace" would change an item's namespace.*`},
		{"a merge patch of the namespace", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  mergePatches:\n  - patchData: '{\"metadata\":{\"namespace\":\"victim\"}}'\n",
			`.*patchData sets metadata.namespace.*`},
		{"a strategic patch of the namespace", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  strategicPatches:\n  - patchData: |\n      metadata:\n        namespace: victim\n",
			`.*patchData sets metadata.namespace.*`},
		{"the status switch", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: services}\n  patches: [{operation: add, path: /metadata/annotations/velero.io~1restore-status, value: '\"true\"'}]\n",
			`.*sets Velero's velero.io/restore-status.*`},
		{"the status switch, merged", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: services}\n  mergePatches:\n  - patchData: '{\"metadata\":{\"annotations\":{\"velero.io/restore-status\":\"true\"}}}'\n",
			`.*patchData sets Velero's velero.io/restore-status.*`},
	} {
		m := cm(t.yaml)
		if t.about == "two keys" {
			m.Data["other"] = "x"
		}
		_, err := tenantmodifiers.Parse(m)
		c.Check(err, ErrorMatches, t.want, Commentf(t.about))
	}
}

// TestAsCreated: items as Velero creates them after the modifiers.
func (s *ModifiersSuite) TestAsCreated(c *C) {
	m, err := tenantmodifiers.Parse(cm(scaleToZero))
	c.Assert(err, IsNil)
	deploy := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team"}, "spec": map[string]any{"replicas": int64(3)}}
	out, gr, why := tenantmodifiers.AsCreated(m, deploy, schema.GroupResource{Group: "apps", Resource: "deployments"})
	c.Assert(why, Equals, "")
	c.Check(gr, Equals, schema.GroupResource{Group: "apps", Resource: "deployments"})
	c.Check(out["spec"].(map[string]any)["replicas"], Equals, int64(0))
	c.Check(deploy["spec"].(map[string]any)["replicas"], Equals, int64(3), Commentf("the item itself is not changed"))

	// A ConfigMap turned into a RoleBinding: refused at parse, and, in
	// modifiers Parse did not read, item by item (never judged as a
	// RoleBinding).
	const toBindingYAML = `version: v1
resourceModifierRules:
- conditions:
    groupResource: configmaps
  mergePatches:
  - patchData: |
      {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "data": null,
       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
       "subjects": [{"kind": "User", "name": "mallory"}]}
`
	_, err = tenantmodifiers.Parse(cm(toBindingYAML))
	c.Check(err, ErrorMatches, `ConfigMap mods: resourceModifierRules\[0\]: patchData sets apiVersion: .*`)
	toBinding, err := tenantmodifiers.ParseAsVelero(cm(toBindingYAML))
	c.Assert(err, IsNil)
	config := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team"}, "data": map[string]any{"k": "v"}}
	out, gr, why = tenantmodifiers.AsCreated(toBinding, config, schema.GroupResource{Resource: "configmaps"})
	c.Check(why, Equals, "a resource modifier makes it a rbac.authorization.k8s.io/v1, Kind=RoleBinding (it was a /v1, Kind=ConfigMap): a restore's items keep their kind, group and version")
	c.Check(out, IsNil)
	c.Check(gr, Equals, schema.GroupResource{Resource: "configmaps"})

	// The admin's modifiers are Velero's to accept; a move is still refused
	// item by item, and so is any change to a PersistentVolume.
	move, err := tenantmodifiers.ParseAsVelero(cm("version: v1\nresourceModifierRules:\n- conditions: {groupResource: '*'}\n  patches: [{operation: replace, path: /metadata/namespace, value: '\"victim\"'}, {operation: add, path: /metadata/labels, value: '{}'}]\n"))
	c.Assert(err, IsNil)
	_, _, why = tenantmodifiers.AsCreated(move, config, schema.GroupResource{Resource: "configmaps"})
	c.Check(why, Equals, `a resource modifier moves it to namespace "victim"`)
	label, err := tenantmodifiers.ParseAsVelero(cm("version: v1\nresourceModifierRules:\n- conditions: {groupResource: '*'}\n  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"))
	c.Assert(err, IsNil)
	pv := map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv"}}
	_, _, why = tenantmodifiers.AsCreated(label, pv, schema.GroupResource{Resource: "persistentvolumes"})
	c.Check(why, Matches, "a resource modifier changes this PersistentVolume: .*")

	// A failing rule: refused.
	failing, err := tenantmodifiers.Parse(cm("version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  patches: [{operation: remove, path: /spec/missing}]\n"))
	c.Assert(err, IsNil)
	_, _, why = tenantmodifiers.AsCreated(failing, config, schema.GroupResource{Resource: "configmaps"})
	c.Check(why, Matches, "a resource modifier failed on it .*")

	// Without modifiers, the item as it is.
	out, gr, why = tenantmodifiers.AsCreated(nil, config, schema.GroupResource{Resource: "configmaps"})
	c.Check(why, Equals, "")
	c.Check(out["kind"], Equals, "ConfigMap")
}

// rule is a modifiers file of one rule: its conditions (a YAML flow map)
// and its patches (YAML lines at the rule's indentation).
func rule(conditions, patches string) string {
	return "version: v1\nresourceModifierRules:\n- conditions: " + conditions + "\n" + patches
}

// TestParseRefusesIdentityStatusAndVeleroFields: tenant modifiers may not
// change an item's kind, version, name or namespace, touch its status,
// apply to RBAC objects, ServiceAccounts, Secrets, PersistentVolumes, NAC
// or Velero kinds, or select items by what Velero rewrites before it
// applies them (conditions.matches, velero.io labels) — whatever an item
// looks like.
func (s *ModifiersSuite) TestParseRefusesIdentityStatusAndVeleroFields(c *C) {
	const cms = "{groupResource: configmaps}"
	for _, t := range []struct{ about, yaml, want string }{
		// The item's identity.
		{"a kind patch", rule(cms, "  patches: [{operation: replace, path: /kind, value: '\"RoleBinding\"'}]\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: patch replace "/kind" would change an item's kind or version: .*`},
		{"an apiVersion patch", rule(cms, "  patches: [{operation: add, path: /apiVersion, value: '\"rbac.authorization.k8s.io/v1\"'}]\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: patch add "/apiVersion" would change an item's kind or version: .*`},
		{"a kind patch, another case", rule(cms, "  patches: [{operation: add, path: /Kind, value: '\"RoleBinding\"'}]\n"),
			`.*patch add "/Kind" would change an item's kind or version.*`},
		{"a move from the kind", rule(cms, "  patches: [{operation: move, from: /kind, path: /data/k}]\n"),
			`.*patch move "/kind" would change an item's kind or version.*`},
		{"a name patch", rule(cms, "  patches: [{operation: replace, path: /metadata/name, value: '\"other\"'}]\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: patch replace "/metadata/name" would change an item's name: .*`},
		{"a generateName patch", rule(cms, "  patches: [{operation: add, path: /metadata/generateName, value: '\"x-\"'}]\n"),
			`.*patch add "/metadata/generateName" would change an item's name.*`},
		{"the whole item", rule(cms, "  patches: [{operation: replace, path: '/', value: '{}'}]\n"),
			`.*patch replace "/" would replace the whole item or its metadata.*`},
		{"a path that is no JSON pointer", rule(cms, "  patches: [{operation: replace, path: x/kind, value: '\"RoleBinding\"'}]\n"),
			`.*patch replace "x/kind" is not a JSON pointer.*`},
		{"a merge patch of the kind", rule(cms, "  mergePatches:\n  - patchData: '{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\"}'\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: patchData sets apiVersion: tenant modifiers may not change an item's kind, group, version, name or namespace`},
		{"a merge patch of the name", rule(cms, "  mergePatches:\n  - patchData: '{\"metadata\":{\"name\":\"other\"}}'\n"),
			`.*patchData sets metadata.name: .*`},
		{"a merge patch of generateName", rule(cms, "  mergePatches:\n  - patchData: '{\"metadata\":{\"generateName\":\"x-\"}}'\n"),
			`.*patchData sets metadata.generateName: .*`},
		{"a strategic patch of the kind", rule("{groupResource: pods}", "  strategicPatches:\n  - patchData: |\n      kind: Secret\n"),
			`.*patchData sets kind: .*`},
		{"a strategic directive", rule("{groupResource: pods}", "  strategicPatches:\n  - patchData: |\n      $patch: replace\n      spec: {}\n"),
			`.*patchData has the directive \$patch at its top level.*`},
		{"a strategic directive in metadata", rule("{groupResource: pods}", "  strategicPatches:\n  - patchData: |\n      metadata:\n        $patch: replace\n        labels: {a: b}\n"),
			`.*patchData has the directive \$patch in metadata.*`},
		{"a strategic directive in annotations", rule("{groupResource: pods}", "  strategicPatches:\n  - patchData: |\n      metadata:\n        annotations:\n          $patch: replace\n          a: b\n"),
			`.*patchData has the directive \$patch in metadata.annotations, which could drop Velero's velero.io/restore-status: .*`},
		{"annotations removed", rule("{groupResource: pods}", "  mergePatches:\n  - patchData: '{\"metadata\":{\"annotations\":null}}'\n"),
			`.*patchData replaces metadata.annotations, velero.io/restore-status among them: .*`},
		{"the status switch removed", rule("{groupResource: services}", "  patches: [{operation: remove, path: /metadata/annotations/velero.io~1restore-status}]\n"),
			`.*patch remove "/metadata/annotations/velero.io~1restore-status" sets Velero's velero.io/restore-status.*`},
		{"patchData that is no object", rule(cms, "  mergePatches:\n  - patchData: 'null'\n"),
			`.*patchData is not an object.*`},
		// The status.
		{"a status patch", rule("{groupResource: services}", "  patches: [{operation: add, path: /status/loadBalancer, value: '{\"ingress\":[{\"ip\":\"10.0.0.1\"}]}'}]\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: patch add "/status/loadBalancer" touches the status: .*`},
		{"a copy from the status", rule("{groupResource: services}", "  patches: [{operation: copy, from: /status, path: /spec/x}]\n"),
			`.*patch copy "/status" touches the status.*`},
		{"a merge patch of the status", rule("{groupResource: ingresses.networking.k8s.io}", "  mergePatches:\n  - patchData: '{\"status\":{\"loadBalancer\":{}}}'\n"),
			`.*patchData sets status: .*`},
		// What the rules apply to.
		{"every resource", rule("{groupResource: '*'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: conditions.groupResource "\*" matches serviceaccounts: tenant modifiers never apply to RBAC objects, ServiceAccounts, Secrets, PersistentVolumes, NAC or Velero objects.*`},
		{"role bindings", rule("{groupResource: rolebindings.rbac.authorization.k8s.io}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*conditions.groupResource "rolebindings.rbac.authorization.k8s.io" matches rolebindings.rbac.authorization.k8s.io: .*`},
		{"every RBAC kind", rule("{groupResource: '*.rbac.authorization.k8s.io'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*conditions.groupResource "\*.rbac.authorization.k8s.io" matches roles.rbac.authorization.k8s.io: .*`},
		{"service accounts", rule("{groupResource: 'service*'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*matches serviceaccounts: .*`},
		{"secrets among others", rule("{groupResource: '{configmaps,secrets}'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*matches secrets: .*`},
		{"volumes", rule("{groupResource: 'persistent*'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*matches persistentvolumes: .*`},
		{"a NAC kind", rule("{groupResource: nonadminbackups.oadp.openshift.io}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*matches nonadminbackups.oadp.openshift.io: .*`},
		{"Velero's kinds", rule("{groupResource: '*.velero.io'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*matches backuprepositories.velero.io: .*`},
		{"Velero's data uploads", rule("{groupResource: 'data*.velero.io'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*matches datadownloads.velero.io: .*`},
		{"a glob that does not compile", rule("{groupResource: '[configmaps'}", "  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"),
			`.*conditions.groupResource "\[configmaps" is not a valid glob: .*`},
		// Conditions on what Velero rewrites.
		{"a matches condition", rule("{groupResource: configmaps, matches: [{path: /metadata/annotations/x, value: y}]}", "  patches: [{operation: add, path: /data/k, value: '\"v\"'}]\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: conditions.matches: Velero evaluates it on the item after its own and other plugins' changes, which nacflow cannot reproduce exactly.*`},
		{"a velero.io label selector", rule("{groupResource: configmaps, labelSelector: {matchLabels: {velero.io/backup-name: b}}}", "  patches: [{operation: add, path: /data/k, value: '\"v\"'}]\n"),
			`ConfigMap mods: resourceModifierRules\[0\]: conditions.labelSelector names velero.io/backup-name, a label of Velero's domain: Velero evaluates it on the item after its own and other plugins' changes.*`},
		{"a velero.io sub-domain label expression", rule("{groupResource: configmaps, labelSelector: {matchExpressions: [{key: restore.velero.io/x, operator: DoesNotExist}]}}", "  patches: [{operation: add, path: /data/k, value: '\"v\"'}]\n"),
			`.*conditions.labelSelector names restore.velero.io/x, a label of Velero's domain.*`},
	} {
		_, err := tenantmodifiers.Parse(cm(t.yaml))
		c.Check(err, ErrorMatches, t.want, Commentf(t.about))
	}
}

// TestParseAllows: what tenants legitimately do still parses.
func (s *ModifiersSuite) TestParseAllows(c *C) {
	for _, t := range []struct{ about, yaml string }{
		{"scale to zero", scaleToZero},
		{"a merge patch of a ConfigMap's data", rule("{groupResource: configmaps}", "  mergePatches:\n  - patchData: '{\"data\":{\"k\":\"v\"},\"metadata\":{\"labels\":{\"a\":\"b\"}}}'\n")},
		{"a strategic patch of a pod", rule("{groupResource: pods, resourceNameRegex: '^web-'}", "  strategicPatches:\n  - patchData: |\n      spec:\n        containers:\n        - name: web\n          image: registry.example/web:2\n")},
		{"a label selector of the tenant's own", rule("{groupResource: deployments.apps, namespaces: [team], labelSelector: {matchLabels: {app: web}, matchExpressions: [{key: example.io/tier, operator: Exists}]}}",
			"  patches: [{operation: replace, path: /spec/replicas, value: \"1\"}]\n")},
		{"a label set on the item", rule("{groupResource: configmaps}", "  patches: [{operation: add, path: /metadata/labels/team, value: '\"a\"'}, {operation: copy, from: /data/a, path: /data/b}]\n")},
	} {
		_, err := tenantmodifiers.Parse(cm(t.yaml))
		c.Check(err, IsNil, Commentf(t.about))
	}
}

// TestAsCreatedRefusesIdentityChanges: modifiers Velero accepts (the
// admin's, read with ParseAsVelero) that change an item's kind, version,
// name or namespace: the item is refused, never judged as another kind.
func (s *ModifiersSuite) TestAsCreatedRefusesIdentityChanges(c *C) {
	config := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team"}, "data": map[string]any{"k": "v"}}
	for _, t := range []struct{ about, patch, want string }{
		{"a RoleBinding", `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "data": null, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}}`,
			`a resource modifier makes it a rbac.authorization.k8s.io/v1, Kind=RoleBinding \(it was a /v1, Kind=ConfigMap\): .*`},
		{"another version", `{"apiVersion": "v2"}`, `a resource modifier makes it a /v2, Kind=ConfigMap \(it was a /v1, Kind=ConfigMap\): .*`},
		{"another name", `{"metadata": {"name": "d"}}`, `a resource modifier renames it "d": .*`},
		{"a generated name", `{"metadata": {"generateName": "d-"}}`, `a resource modifier gives it generateName "d-": .*`},
	} {
		m, err := tenantmodifiers.ParseAsVelero(cm(rule("{groupResource: configmaps}", "  mergePatches:\n  - patchData: '"+t.patch+"'\n")))
		c.Assert(err, IsNil, Commentf(t.about))
		out, gr, why := tenantmodifiers.AsCreated(m, config, schema.GroupResource{Resource: "configmaps"})
		c.Check(why, Matches, t.want, Commentf(t.about))
		c.Check(out, IsNil, Commentf(t.about))
		c.Check(gr, Equals, schema.GroupResource{Resource: "configmaps"}, Commentf(t.about))
	}
}
