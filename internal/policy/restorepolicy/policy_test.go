package restorepolicy_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	. "gopkg.in/check.v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

func Test(t *testing.T) { TestingT(t) }

type PolicySuite struct{}

var _ = Suite(&PolicySuite{})

// adminLike is a small stand-in for Kubernetes' aggregated admin role: write
// on workloads, configmaps, secrets, PVCs, RBAC in the namespace; read only
// on quotas and limit ranges; nothing cluster-scoped.
var adminLike = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts", "services"},
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "get", "patch", "update"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"},
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "get", "patch", "update"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges"}, Verbs: []string{"get", "list", "watch"}},
	// Only create: an existing configmap named "fixed" cannot be updated.
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}},
}

// fakeLookup is a Lookup over maps.
type fakeLookup struct {
	existing map[string]bool                // "resource/ns/name"
	roles    map[string][]rbacv1.PolicyRule // "Kind/ns/name" (ns "" for ClusterRoles)
	err      error
}

func (f fakeLookup) Exists(_ context.Context, gr schema.GroupResource, ns, name string) (bool, error) {
	return f.existing[gr.String()+"/"+ns+"/"+name], f.err
}

func (f fakeLookup) RoleRules(_ context.Context, kind, ns, name string) ([]rbacv1.PolicyRule, bool, error) {
	if kind == "ClusterRole" {
		ns = ""
	}
	r, ok := f.roles[kind+"/"+ns+"/"+name]
	return r, ok, f.err
}

var lookup = fakeLookup{
	existing: map[string]bool{
		"resourcequotas/team/quota":                       true,
		"configmaps/team/old":                             true,
		"jobs.batch/team/j":                               true,
		"persistentvolumes//taken":                        true,
		"networkpolicies.networking.k8s.io/team/deny-all": true,
	},
	roles: map[string][]rbacv1.PolicyRule{
		"ClusterRole//edit":          adminLike[:2],
		"ClusterRole//admin":         adminLike,
		"ClusterRole//cluster-admin": {{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}, {NonResourceURLs: []string{"*"}, Verbs: []string{"*"}}},
		"ClusterRole//node-reader":   {{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}},
		"Role/team/reader":           {{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}},
		"Role/team/quota-writer":     {{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"update"}}},
	},
}

func obj(js string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		panic(err)
	}
	return m
}

func gr(s string) schema.GroupResource { return schema.ParseGroupResource(s) }

func (s *PolicySuite) TestDecide(c *C) {
	hostPathPV := `{"metadata":{"name":"root"},"spec":{"hostPath":{"path":"/"},"claimRef":{"namespace":"team","name":"data"},"persistentVolumeReclaimPolicy":"Retain"}}`
	csiPV := `{"metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d","volumeHandle":"new"},"claimRef":{"namespace":"team","name":"data"},"capacity":{"storage":"1Gi"}}}`
	csiPVOld := `{"metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d","volumeHandle":"old"}}}`
	for _, t := range []struct {
		about    string
		resource string
		item     string
		backup   string // FromBackup, "" for none
		update   bool
		reason   string // "" = allowed; else a regexp of the reason
	}{
		{"a configmap", "configmaps", `{"metadata":{"name":"c","namespace":"team"}}`, "", false, ""},
		{"a configmap of another namespace", "configmaps", `{"metadata":{"name":"c","namespace":"other"}}`, "", false, `metadata.namespace "other" is not the restore's namespace "team"`},
		{"a name that is no string", "configmaps", `{"metadata":{"name":5,"namespace":"team"}}`, "", false, `metadata.name is missing or not a string`},
		{"no metadata", "configmaps", `{}`, "", false, `metadata.name is missing or not a string`},
		{"a kind the role does not write", "widgets.example.com", `{"metadata":{"name":"w","namespace":"team"}}`, "", false, `the tenant role does not allow create on widgets.example.com`},
		{"an absent quota: admin cannot create quotas", "resourcequotas", `{"metadata":{"name":"new","namespace":"team"}}`, "", false, `the tenant role does not allow create on resourcequotas`},
		{"an existing quota with update", "resourcequotas", `{"metadata":{"name":"quota","namespace":"team"}}`, "", true, `the tenant role does not allow create on resourcequotas`},
		{"an existing admin-owned networkpolicy is never changed", "networkpolicies.networking.k8s.io", `{"metadata":{"name":"deny-all","namespace":"team"}}`, "", false, `networkpolicies.networking.k8s.io is admin-owned and deny-all exists: a restore never changes it`},
		{"an absent admin-owned networkpolicy is created", "networkpolicies.networking.k8s.io", `{"metadata":{"name":"allow","namespace":"team"}}`, "", true, ""},
		{"an existing configmap with update", "configmaps", `{"metadata":{"name":"old","namespace":"team"}}`, "", true, ""},
		{"an existing job with update: create-only role", "jobs.batch", `{"metadata":{"name":"j","namespace":"team"}}`, "", true, `existingResourcePolicy update: the tenant role does not allow update on jobs.batch j`},
		{"an existing job without update", "jobs.batch", `{"metadata":{"name":"j","namespace":"team"}}`, "", false, ""},
		{"a cluster-scoped item", "clusterroles.rbac.authorization.k8s.io", `{"metadata":{"name":"x"}}`, "", false, `clusterroles.rbac.authorization.k8s.io is cluster-scoped.*`},
		{"a role within the bound", "roles.rbac.authorization.k8s.io", `{"metadata":{"name":"r","namespace":"team"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}`, "", false, ""},
		{"a role beyond the bound", "roles.rbac.authorization.k8s.io", `{"metadata":{"name":"r","namespace":"team"},"rules":[{"apiGroups":[""],"resources":["pods","nodes"],"verbs":["get"]},{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`, "", false, `Role r grants what the tenant role does not hold: \* \*\.\*; get nodes and 1 more|Role r grants what the tenant role does not hold: .*nodes.*`},
		{"a role whose rules are no list", "roles.rbac.authorization.k8s.io", `{"metadata":{"name":"r","namespace":"team"},"rules":{"a":1}}`, "", false, `Role r: rules is not a list`},
		{"a role whose rule has the wrong types", "roles.rbac.authorization.k8s.io", `{"metadata":{"name":"r","namespace":"team"},"rules":[{"verbs":"get"}]}`, "", false, `Role r: rules: .*`},
		{"a binding to edit", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}`, "", false, ""},
		{"a binding to admin", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"}}`, "", false, ""},
		{"a binding to cluster-admin", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`, "", false, `RoleBinding b binds ClusterRole cluster-admin, which grants what the tenant role does not hold: .*`},
		{"a binding to a cluster-wide custom role", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"node-reader"}}`, "", false, `RoleBinding b binds ClusterRole node-reader, which grants what the tenant role does not hold: get nodes`},
		{"a binding to a missing role", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"gone"}}`, "", false, `RoleBinding b binds Role gone, which does not exist.*`},
		{"a binding to a namespace role within the bound", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"}}`, "", false, ""},
		{"a binding to a namespace role beyond the bound", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"quota-writer"}}`, "", false, `RoleBinding b binds Role quota-writer, which grants what the tenant role does not hold: update resourcequotas`},
		{"a binding with a foreign roleRef group", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"evil.io","kind":"ClusterRole","name":"edit"}}`, "", false, `RoleBinding b: roleRef must name a Role or ClusterRole of rbac.authorization.k8s.io`},
		{"a binding without roleRef", "rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":null}`, "", false, `RoleBinding b: roleRef must name .*`},
		{"a hostPath PV", "persistentvolumes", hostPathPV, "", false, `PersistentVolume root: volume source spec.hostPath is not one a restore made for a tenant may create \(allowed: csi, .*\)`},
		{"a local PV", "persistentvolumes", `{"metadata":{"name":"l"},"spec":{"local":{"path":"/x"}}}`, "", false, `.*spec.local is not one.*`},
		{"an nfs PV", "persistentvolumes", `{"metadata":{"name":"n"},"spec":{"nfs":{"server":"x","path":"/"}}}`, "", false, `.*spec.nfs is not one.*`},
		{"an unknown PV source", "persistentvolumes", `{"metadata":{"name":"n"},"spec":{"futureVolume":{}}}`, "", false, `.*spec.futureVolume is not one.*`},
		{"a PV with two sources", "persistentvolumes", `{"metadata":{"name":"n"},"spec":{"csi":{"driver":"d"},"hostPath":{"path":"/"}}}`, "", false, `PersistentVolume n: spec must have exactly one volume source, has 2 \(csi, hostPath\)`},
		{"a PV without a source", "persistentvolumes", `{"metadata":{"name":"n"},"spec":{"capacity":{"storage":"1Gi"}}}`, "", false, `PersistentVolume n: spec must have exactly one volume source, has 0 \(\)`},
		{"a PV without spec", "persistentvolumes", `{"metadata":{"name":"n"},"spec":"x"}`, "", false, `PersistentVolume n: spec is missing or not an object`},
		{"a CSI PV Velero gave a new volume", "persistentvolumes", csiPV, csiPVOld, false, ""},
		{"a CSI PV as the tarball had it", "persistentvolumes", csiPV, csiPV, false, `PersistentVolume pv1: spec.csi is the backup's own, not a volume Velero restored from a snapshot.*`},
		{"a CSI PV claimed from another namespace", "persistentvolumes", `{"metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d"},"claimRef":{"namespace":"other","name":"x"}}}`, "", false, `PersistentVolume pv1: spec.claimRef.namespace "other" is not the restore's namespace "team"`},
		{"a claimRef that is no object", "persistentvolumes", `{"metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d"},"claimRef":"team/x"}}`, "", false, `PersistentVolume pv1: spec.claimRef is not an object`},
		{"a PV that exists", "persistentvolumes", `{"metadata":{"name":"taken"},"spec":{"awsElasticBlockStore":{"volumeID":"vol-1"}}}`, "", false, `PersistentVolume taken exists: .*`},
	} {
		p := restorepolicy.Policy{Namespace: "team", Bound: adminLike, UpdateExisting: t.update,
			AdminOwned: append([]schema.GroupResource{gr("networkpolicies.networking.k8s.io")}, restorepolicy.DefaultAdminOwned...)}
		item := restorepolicy.Item{Resource: gr(t.resource), Object: obj(t.item)}
		if t.backup != "" {
			item.FromBackup = obj(t.backup)
		}
		d, err := restorepolicy.Decide(context.Background(), p, item, lookup)
		c.Assert(err, IsNil, Commentf(t.about))
		if t.reason == "" {
			c.Check(d, Equals, restorepolicy.Decision{Allowed: true}, Commentf(t.about))
		} else {
			c.Check(d.Allowed, Equals, false, Commentf(t.about))
			c.Check(d.Reason, Matches, t.reason, Commentf(t.about))
		}
	}
}

// TestBindVerb: a tenant role that may "bind" a ClusterRole by name may bind
// it whatever it grants, as Kubernetes' BindingAuthorized allows; "escalate"
// on roles lets a Role grant more.
func (s *PolicySuite) TestBindAndEscalate(c *C) {
	bound := append([]rbacv1.PolicyRule{
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"node-reader"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: []string{"escalate"}},
	}, adminLike...)
	p := restorepolicy.Policy{Namespace: "team", Bound: bound}
	d, err := restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("rolebindings.rbac.authorization.k8s.io"),
		Object: obj(`{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"node-reader"}}`)}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, true)
	d, err = restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("rolebindings.rbac.authorization.k8s.io"),
		Object: obj(`{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`)}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, false)
	d, err = restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("roles.rbac.authorization.k8s.io"),
		Object: obj(`{"metadata":{"name":"r","namespace":"team"},"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`)}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, true)
}

// TestLookupErrors: Decide passes lookup errors on rather than guessing.
func (s *PolicySuite) TestLookupErrors(c *C) {
	lk := lookup
	lk.err = errors.New("apiserver down")
	p := restorepolicy.Policy{Namespace: "team", Bound: adminLike}
	_, err := restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("configmaps"), Object: obj(`{"metadata":{"name":"c","namespace":"team"}}`)}, lk)
	c.Check(err, ErrorMatches, "apiserver down")
}

// TestHugeRole: a Role whose rules multiply out past the bound is refused
// before Covers breaks it down.
func (s *PolicySuite) TestHugeRole(c *C) {
	many := make([]string, 400)
	for i := range many {
		many[i] = "r" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	rule := map[string]any{"apiGroups": many, "resources": many, "verbs": []string{"get"}}
	o := map[string]any{"metadata": map[string]any{"name": "r", "namespace": "team"}, "rules": []any{rule}}
	b, _ := json.Marshal(o)
	p := restorepolicy.Policy{Namespace: "team", Bound: adminLike}
	d, err := restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("roles.rbac.authorization.k8s.io"), Object: obj(string(b))}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Reason, Matches, `Role r: rules too large to compare .*`)
}

func (s *PolicySuite) TestParseAdminOwned(c *C) {
	got, err := restorepolicy.ParseAdminOwned(" resourcequotas, networkpolicies.networking.k8s.io,,")
	c.Assert(err, IsNil)
	c.Check(got, DeepEquals, []schema.GroupResource{{Resource: "resourcequotas"}, {Group: "networking.k8s.io", Resource: "networkpolicies"}})
	c.Check(restorepolicy.FormatAdminOwned(got), Equals, "resourcequotas,networkpolicies.networking.k8s.io")
	_, err = restorepolicy.ParseAdminOwned("NetworkPolicy")
	c.Check(err, ErrorMatches, `admin-owned resource "NetworkPolicy": want a lower-case resource\[.group\].*`)
}

// FuzzDecide: any JSON item, of any resource, is decided without a panic,
// and an allowed namespaced item always lies in the restore's namespace.
func FuzzDecide(f *testing.F) {
	f.Add("rolebindings.rbac.authorization.k8s.io", `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}`, `null`, true)
	f.Add("roles.rbac.authorization.k8s.io", `{"metadata":{"name":"r","namespace":"team"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"],"resourceNames":["x"]},{"nonResourceURLs":["/x"],"verbs":["get"]}]}`, `{}`, false)
	f.Add("persistentvolumes", `{"metadata":{"name":"pv"},"spec":{"hostPath":{"path":"/"},"claimRef":{"namespace":"team"}}}`, `{"spec":{"hostPath":null}}`, false)
	f.Add("persistentvolumes", `{"metadata":{"name":"pv"},"spec":{"csi":{"volumeHandle":"a"},"claimRef":{"namespace":7}}}`, `{"spec":[]}`, true)
	f.Add("configmaps", `{"metadata":null}`, `1`, true)
	f.Add("", `{"metadata":{"name":"x","namespace":["team"]}}`, `"x"`, false)
	f.Fuzz(func(t *testing.T, resource, item, backup string, update bool) {
		var o map[string]any
		if json.Unmarshal([]byte(item), &o) != nil {
			return
		}
		it := restorepolicy.Item{Resource: gr(resource), Object: o}
		var b map[string]any
		if json.Unmarshal([]byte(backup), &b) == nil {
			it.FromBackup = b
		}
		p := restorepolicy.Policy{Namespace: "team", Bound: adminLike, UpdateExisting: update, AdminOwned: restorepolicy.DefaultAdminOwned}
		d, err := restorepolicy.Decide(context.Background(), p, it, lookup)
		if err != nil {
			t.Fatalf("no lookup error expected: %v", err)
		}
		if d.Allowed {
			md, _ := o["metadata"].(map[string]any)
			if ns, _ := md["namespace"].(string); it.Resource.String() != "persistentvolumes" && ns != "team" {
				t.Fatalf("allowed an item of namespace %q", ns)
			}
		} else if d.Reason == "" {
			t.Fatalf("refused without a reason")
		}
	})
}

// TestBucketOnly: a backup in a bucket the tenant writes restores no
// PersistentVolume, even one Velero gave a new volume from a snapshot (the
// snapshot list is the tenant's to rewrite); other items are decided as
// always.
func (s *PolicySuite) TestBucketOnly(c *C) {
	p := restorepolicy.Policy{Namespace: "team", Bound: adminLike, BucketOnly: true}
	restored := `{"metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d","volumeHandle":"from-snapshot"},"claimRef":{"namespace":"team","name":"data"}}}`
	d, err := restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("persistentvolumes"), Object: obj(restored),
		FromBackup: obj(`{"metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d","volumeHandle":"old"}}}`)}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, false)
	c.Check(d.Reason, Matches, `PersistentVolume pv1: the backup is in a bucket the tenant writes, whose volume snapshot list could name any snapshot; volumes of such a backup are restored only from data in the bucket \(file-system backup, data mover\)`)
	p.BucketOnly = false
	d, err = restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("persistentvolumes"), Object: obj(restored),
		FromBackup: obj(`{"metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d","volumeHandle":"old"}}}`)}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, true, Commentf("the admin's bucket: a volume restored from its snapshot"))
	p.BucketOnly = true
	d, err = restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("persistentvolumeclaims"), Object: obj(`{"metadata":{"name":"data","namespace":"team"}}`)}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, true)
}

// TestTenantBucket: a location with OADP's NABSL origin label, or one that
// cannot be found, is a tenant's bucket; only an existing unlabelled one is
// the admin's.
func (s *PolicySuite) TestTenantBucket(c *C) {
	c.Check(restorepolicy.TenantBucket(map[string]string{"openshift.io/oadp-nabsl-origin-nacuuid": "ns-own-uuid"}, true), Equals, true)
	c.Check(restorepolicy.TenantBucket(map[string]string{"openshift.io/oadp-nabsl-origin-nacuuid": ""}, true), Equals, true)
	c.Check(restorepolicy.TenantBucket(nil, false), Equals, true)
	c.Check(restorepolicy.TenantBucket(map[string]string{"app": "velero"}, true), Equals, false)
	c.Check(restorepolicy.TenantBucket(nil, true), Equals, false)
}

// TestProvisionClaim: a claim loses its volume name and binding
// annotations (other annotations and fields stay), in a copy; a claim with
// neither comes back as it is; malformed fields do not panic.
func (s *PolicySuite) TestProvisionClaim(c *C) {
	in := obj(`{"metadata":{"name":"data","namespace":"team","annotations":{"pv.kubernetes.io/bind-completed":"yes","pv.kubernetes.io/bound-by-controller":"yes","keep":"me"}},` +
		`"spec":{"volumeName":"victim-pv","storageClassName":"fast","resources":{"requests":{"storage":"1Gi"}}}}`)
	out, changed := restorepolicy.ProvisionClaim(in)
	c.Check(changed, Equals, true)
	c.Check(out, DeepEquals, obj(`{"metadata":{"name":"data","namespace":"team","annotations":{"keep":"me"}},`+
		`"spec":{"storageClassName":"fast","resources":{"requests":{"storage":"1Gi"}}}}`))
	c.Check(in["spec"].(map[string]any)["volumeName"], Equals, "victim-pv", Commentf("the input is not changed"))
	c.Check(in["metadata"].(map[string]any)["annotations"].(map[string]any)["pv.kubernetes.io/bind-completed"], Equals, "yes")

	plain := obj(`{"metadata":{"name":"data"},"spec":{"storageClassName":"fast"}}`)
	out, changed = restorepolicy.ProvisionClaim(plain)
	c.Check(changed, Equals, false)
	c.Check(out, DeepEquals, plain)

	for _, js := range []string{`{}`, `{"spec":"x","metadata":5}`, `{"metadata":{"annotations":"x"},"spec":{"volumeName":7}}`} {
		out, _ = restorepolicy.ProvisionClaim(obj(js))
		spec, _ := out["spec"].(map[string]any)
		_, named := spec["volumeName"]
		c.Check(named, Equals, false, Commentf(js))
	}
}
