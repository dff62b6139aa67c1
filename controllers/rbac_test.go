package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type RBACSuite struct{}

// generatedRBAC reads config/rbac/role.yaml (generated from the markers): the
// ClusterRole and the Roles.
func generatedRBAC(c *C) (*rbacv1.ClusterRole, []rbacv1.Role) {
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
	return cluster, roles
}

var _ = Suite(&RBACSuite{})

// TestLeastPrivilege holds the generated RBAC (config/rbac/role.yaml, from
// the markers) to an allow-list: no wildcards; cluster-wide, writes only to
// NAC kinds (in tenant namespaces) and events, and Secrets only read one by
// one (get); everything that lives only in the OADP namespace — Velero
// objects, copied Secrets, approval requests, Blueprints, the leader lease —
// only through a Role there, so the controller cannot write a Velero object
// or list a Secret anywhere else. Besides, only the metrics endpoint's
// questions to the API server: create TokenReviews and SubjectAccessReviews,
// which are answered and stored nowhere.
func (s *RBACSuite) TestLeastPrivilege(c *C) {
	cluster, roles := generatedRBAC(c)

	// resource → its API group: the only verb is create.
	reviews := map[string]string{"tokenreviews": "authentication.k8s.io", "subjectaccessreviews": "authorization.k8s.io"}
	reviewed := map[string]bool{}

	// Cluster-wide, the NAC kinds of the registry (each with its status
	// and finalizers) and events.
	writable := map[string]bool{"events": true}
	for _, k := range v1alpha1.Kinds() {
		writable[k.Resource], writable[k.Resource+"/status"], writable[k.Resource+"/finalizers"] = true, true, true
	}
	oadpOnly := map[string]bool{
		"secrets": true, "leases": true, "blueprints": true, "blueprints/status": true,
		"nonadminbackupstoragelocationrequests": true, "nonadminbackupstoragelocationrequests/status": true,
		"backups": true, "restores": true, "deletebackuprequests": true, "backupstoragelocations": true, "downloadrequests": true, "schedules": true,
		"dataprotectionapplications": true,                                                                             // read only: OADP's DPA settings (package dpa)
		"datauploads":                true, "datadownloads": true, "podvolumebackups": true, "podvolumerestores": true, // read only: volume progress
		"serverstatusrequests": true, // CheckRestoreItems: does Velero run nacflow's restore plugin
		"tenantlocations":      true, // the map the admission policy nacflow-pod-volume-backups reads
		"configmaps":           true, // a tenant's resource modifiers, copied for its restore
	}
	writeVerbs := map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}
	// Restore tests (TestRestore): a sandbox Namespace and its quota are
	// created and the Namespace deleted, nothing more — no update or patch
	// of any Namespace; the safety rule holds phases to their own sandbox.
	sandboxWrites := map[string]map[string]bool{"namespaces": {"create": true, "delete": true}, "resourcequotas": {"create": true}}
	for _, rule := range cluster.Rules {
		for _, v := range rule.Verbs {
			c.Check(v, Not(Equals), "*", Commentf("wildcard verb in %+v", rule))
		}
		for _, res := range rule.Resources {
			c.Check(res, Not(Equals), "*", Commentf("wildcard resource in %+v", rule))
			if group, ok := reviews[res]; ok {
				c.Check(rule.APIGroups, DeepEquals, []string{group}, Commentf("%s in %+v", res, rule))
				c.Check(rule.Verbs, DeepEquals, []string{"create"}, Commentf("%s in %+v", res, rule))
				reviewed[res] = true
				continue
			}
			if res == "mutatingwebhookconfigurations" {
				// The requester webhook's CA, injected into its own configuration only.
				for _, v := range rule.Verbs {
					if writeVerbs[v] {
						c.Check(v, Equals, "update", Commentf("%+v", rule))
						c.Check(rule.ResourceNames, DeepEquals, []string{"nacflow-requester"}, Commentf("%+v", rule))
					}
				}
				continue
			}
			for _, v := range rule.Verbs {
				if res == "secrets" || res == "configmaps" {
					c.Check(v, Equals, "get", Commentf("cluster-wide %s access beyond get: %s", res, v))
				} else {
					c.Check(oadpOnly[res], Equals, false, Commentf("cluster-wide %s on %s, which lives only in the OADP namespace", v, res))
				}
				if writeVerbs[v] && !sandboxWrites[res][v] {
					c.Check(writable[res], Equals, true, Commentf("cluster-wide %s on %s", v, res))
				}
			}
		}
	}
	for res := range reviews {
		c.Check(reviewed[res], Equals, true, Commentf("create %s missing from the ClusterRole (the metrics filter needs it)", res))
	}
	c.Assert(roles, HasLen, 1)
	c.Check(roles[0].Namespace, Equals, "openshift-adp")
	granted := map[string]bool{}
	for _, rule := range roles[0].Rules {
		for _, res := range rule.Resources {
			c.Check(oadpOnly[res], Equals, true, Commentf("unexpected %s in the OADP-namespace Role", res))
			if res == "tenantlocations" {
				// get: a start reads the map before it creates one.
				c.Check(rule.Verbs, DeepEquals, []string{"create", "get", "patch"}, Commentf("%+v", rule))
			}
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

// TestControllerRunsOnItsOwnRBAC runs the controller as a user holding only
// the generated ClusterRole and OADP-namespace Role (impersonated, against
// the real API server's RBAC): backups, a restore, a storage location and
// deletions (a restore's too) all complete. A permission the code needs but the markers do
// not grant — or a cache that lists beyond the OADP namespace — fails it.
func (s *ChaosSuite) TestControllerRunsOnItsOwnRBAC(c *C) {
	ctx := context.Background()
	r := newFaultRun(c)
	defer r.stop()
	user := "system:serviceaccount:" + r.oadp + ":nacflow"
	cluster, roles := generatedRBAC(c)
	cluster.Name = "nacflow-manager-" + r.run
	c.Assert(testClient.Create(ctx, cluster), IsNil)
	defer func() { _ = testClient.Delete(ctx, cluster) }()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.Name}}
	c.Assert(testClient.Create(ctx, crb), IsNil)
	defer func() { _ = testClient.Delete(ctx, crb) }()
	for _, role := range roles {
		role.Namespace = r.oadp // the OADP namespace of this run
		c.Assert(testClient.Create(ctx, &role), IsNil)
		c.Assert(testClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: r.oadp, Name: role.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}), IsNil)
	}
	cfg := rest.CopyConfig(testCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	// The user really is limited: it may not create a Velero Backup outside
	// the OADP namespace, nor list Secrets in a tenant's.
	ns := createNamespace(c, "rbac-tenant")
	limited, err := client.New(cfg, client.Options{Scheme: testScheme})
	c.Assert(err, IsNil)
	c.Check(apierrors.IsForbidden(limited.Create(ctx, &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}})), Equals, true)
	c.Check(apierrors.IsForbidden(limited.List(ctx, &corev1.SecretList{}, client.InNamespace(ns))), Equals, true)

	stop := startController(c, controllerOptions{cfg: cfg, oadp: r.oadp, selector: r.sel, restart: true})
	defer stop()
	c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=x\naws_secret_access_key=x-secret\n")}}), IsNil)
	label := map[string]string{chaosRunLabel: r.run}
	var ops []client.Object
	for _, o := range []client.Object{newNAB(ns, "b0", velerov1.BackupSpec{}), newNAB(ns, "b1", velerov1.BackupSpec{}),
		newNAR(ns, "r0", velerov1.RestoreSpec{BackupName: "b0"}), newNABSL(ns, "l0", "creds")} {
		o.SetLabels(label)
		c.Assert(testClient.Create(ctx, o), IsNil)
		ops = append(ops, o)
	}
	r.allComplete(c, ops, 30*time.Second)
	// A permanent deletion, a kubectl delete of a location and of a restore
	// (whose finalize lists, then deletes, its Velero objects and its copy
	// of resource modifiers in the OADP namespace).
	b1 := ops[1].(*v1alpha1.NonAdminBackup)
	setDeleteBackup(c, b1)
	c.Assert(testClient.Delete(ctx, ops[3]), IsNil)
	c.Assert(testClient.Delete(ctx, ops[2]), IsNil)
	eventually(c, 30*time.Second, func() (bool, string) {
		for _, o := range []client.Object{b1, ops[3], ops[2]} {
			if err := testClient.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%s still there (%v)", client.ObjectKeyFromObject(o), err)
			}
		}
		return true, ""
	})
	req, bsl, sec := bslObjects(c, r.oadp, v1alpha1.DerivedNACUUID(ops[3]))
	c.Check(req == nil && bsl == nil && sec == nil, Equals, true)
}
