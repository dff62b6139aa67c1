package tenantmodifiers_test

import (
	"errors"
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

// rbac maps RoleBinding to its resource, as the cluster's RESTMapper does.
func rbac(gvk schema.GroupVersionKind) (schema.GroupResource, error) {
	if gvk.Kind == "RoleBinding" {
		return schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, nil
	}
	return schema.GroupResource{}, errors.New("no match")
}

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
	out, gr, why := tenantmodifiers.AsCreated(m, deploy, schema.GroupResource{Group: "apps", Resource: "deployments"}, rbac)
	c.Assert(why, Equals, "")
	c.Check(gr, Equals, schema.GroupResource{Group: "apps", Resource: "deployments"})
	c.Check(out["spec"].(map[string]any)["replicas"], Equals, int64(0))
	c.Check(deploy["spec"].(map[string]any)["replicas"], Equals, int64(3), Commentf("the item itself is not changed"))

	// A ConfigMap turned into a RoleBinding is judged as a RoleBinding.
	toBinding, err := tenantmodifiers.Parse(cm(`version: v1
resourceModifierRules:
- conditions:
    groupResource: configmaps
  mergePatches:
  - patchData: |
      {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "data": null,
       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
       "subjects": [{"kind": "User", "name": "mallory"}]}
`))
	c.Assert(err, IsNil)
	config := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team"}, "data": map[string]any{"k": "v"}}
	out, gr, why = tenantmodifiers.AsCreated(toBinding, config, schema.GroupResource{Resource: "configmaps"}, rbac)
	c.Assert(why, Equals, "")
	c.Check(gr, Equals, schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"})
	c.Check(out["roleRef"].(map[string]any)["name"], Equals, "cluster-admin")

	// The admin's modifiers are Velero's to accept; a move is still refused
	// item by item, and so is any change to a PersistentVolume.
	move, err := tenantmodifiers.ParseAsVelero(cm("version: v1\nresourceModifierRules:\n- conditions: {groupResource: '*'}\n  patches: [{operation: replace, path: /metadata/namespace, value: '\"victim\"'}, {operation: add, path: /metadata/labels, value: '{}'}]\n"))
	c.Assert(err, IsNil)
	_, _, why = tenantmodifiers.AsCreated(move, config, schema.GroupResource{Resource: "configmaps"}, rbac)
	c.Check(why, Equals, `a resource modifier moves it to namespace "victim"`)
	label, err := tenantmodifiers.Parse(cm("version: v1\nresourceModifierRules:\n- conditions: {groupResource: '*'}\n  patches: [{operation: add, path: /metadata/labels, value: '{}'}]\n"))
	c.Assert(err, IsNil)
	pv := map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv"}}
	_, _, why = tenantmodifiers.AsCreated(label, pv, schema.GroupResource{Resource: "persistentvolumes"}, rbac)
	c.Check(why, Matches, "a resource modifier changes this PersistentVolume: .*")

	// A kind the cluster does not serve, and a failing rule: refused.
	_, _, why = tenantmodifiers.AsCreated(toBinding, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team"}},
		schema.GroupResource{Resource: "configmaps"}, func(schema.GroupVersionKind) (schema.GroupResource, error) {
			return schema.GroupResource{}, errors.New("no match")
		})
	c.Check(why, Matches, "a resource modifier makes it a rbac.authorization.k8s.io/v1, Kind=RoleBinding, which the cluster does not serve: no match")
	failing, err := tenantmodifiers.Parse(cm("version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  patches: [{operation: remove, path: /spec/missing}]\n"))
	c.Assert(err, IsNil)
	_, _, why = tenantmodifiers.AsCreated(failing, config, schema.GroupResource{Resource: "configmaps"}, rbac)
	c.Check(why, Matches, "a resource modifier failed on it .*")

	// Without modifiers, the item as it is.
	out, gr, why = tenantmodifiers.AsCreated(nil, config, schema.GroupResource{Resource: "configmaps"}, rbac)
	c.Check(why, Equals, "")
	c.Check(out["kind"], Equals, "ConfigMap")
}
