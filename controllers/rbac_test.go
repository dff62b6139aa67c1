package controllers_test

import (
	"os"
	"path/filepath"
	"strings"

	. "gopkg.in/check.v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

type RBACSuite struct{}

var _ = Suite(&RBACSuite{})

// TestLeastPrivilege holds the generated RBAC (config/rbac/role.yaml, from
// the markers) to an allow-list: no wildcards; cluster-wide, writes only to
// NAC kinds (in tenant namespaces) and events, and Secrets only read one by
// one (get); everything that lives only in the OADP namespace — Velero
// objects, copied Secrets, approval requests, Blueprints, the leader lease —
// only through a Role there, so the controller cannot write a Velero object
// or list a Secret anywhere else.
func (s *RBACSuite) TestLeastPrivilege(c *C) {
	data, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	c.Assert(err, IsNil)
	var cluster *rbacv1.ClusterRole
	var roles []rbacv1.Role
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(doc) == "" || strings.TrimSpace(doc) == "---" {
			continue
		}
		var meta struct{ Kind string }
		c.Assert(yaml.Unmarshal([]byte(doc), &meta), IsNil)
		switch meta.Kind {
		case "ClusterRole":
			cluster = &rbacv1.ClusterRole{}
			c.Assert(yaml.UnmarshalStrict([]byte(doc), cluster), IsNil)
		case "Role":
			var r rbacv1.Role
			c.Assert(yaml.UnmarshalStrict([]byte(doc), &r), IsNil)
			roles = append(roles, r)
		}
	}
	c.Assert(cluster, NotNil)

	writable := map[string]bool{
		"nonadminbackups": true, "nonadminbackups/status": true, "nonadminbackups/finalizers": true,
		"nonadminrestores": true, "nonadminrestores/status": true, "nonadminrestores/finalizers": true,
		"nonadminbackupstoragelocations": true, "nonadminbackupstoragelocations/status": true, "nonadminbackupstoragelocations/finalizers": true,
		"events": true,
	}
	oadpOnly := map[string]bool{
		"secrets": true, "leases": true, "blueprints": true, "blueprints/status": true,
		"nonadminbackupstoragelocationrequests": true, "nonadminbackupstoragelocationrequests/status": true,
		"backups": true, "restores": true, "deletebackuprequests": true, "backupstoragelocations": true,
	}
	writeVerbs := map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}
	for _, rule := range cluster.Rules {
		for _, v := range rule.Verbs {
			c.Check(v, Not(Equals), "*", Commentf("wildcard verb in %+v", rule))
		}
		for _, res := range rule.Resources {
			c.Check(res, Not(Equals), "*", Commentf("wildcard resource in %+v", rule))
			for _, v := range rule.Verbs {
				if res == "secrets" {
					c.Check(v, Equals, "get", Commentf("cluster-wide Secret access beyond get: %s", v))
				} else {
					c.Check(oadpOnly[res], Equals, false, Commentf("cluster-wide %s on %s, which lives only in the OADP namespace", v, res))
				}
				if writeVerbs[v] {
					c.Check(writable[res], Equals, true, Commentf("cluster-wide %s on %s", v, res))
				}
			}
		}
	}
	c.Assert(roles, HasLen, 1)
	c.Check(roles[0].Namespace, Equals, "openshift-adp")
	granted := map[string]bool{}
	for _, rule := range roles[0].Rules {
		for _, res := range rule.Resources {
			c.Check(oadpOnly[res], Equals, true, Commentf("unexpected %s in the OADP-namespace Role", res))
			granted[res] = true
			for _, v := range rule.Verbs {
				c.Check(v, Not(Equals), "*", Commentf("wildcard verb in %+v", rule))
			}
		}
	}
	for res := range oadpOnly {
		c.Check(granted[res], Equals, true, Commentf("%s missing from the OADP-namespace Role", res))
	}
}
