package restorepolicy_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	. "gopkg.in/check.v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

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
	// users holds each user's rules by namespace ("user/ns"), answered as
	// RBAC would: a rule with resourceNames never allows a request without
	// a name.
	users map[string][]rbacv1.PolicyRule
	// asked counts May's questions.
	asked *int
}

func (f fakeLookup) May(_ context.Context, u authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
	if f.asked != nil {
		*f.asked++
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	r := rbacv1.PolicyRule{APIGroups: []string{a.Group}, Resources: []string{res}, Verbs: []string{a.Verb}}
	if a.Name != "" {
		r.ResourceNames = []string{a.Name}
	}
	ok, _ := rbacvalidation.Covers(f.users[u.Username+"/"+a.Namespace], []rbacv1.PolicyRule{r})
	return ok, f.err
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

// editLike is Kubernetes' edit role in small: adminLike without RBAC.
var editLike = []rbacv1.PolicyRule{adminLike[0], adminLike[1], adminLike[3], adminLike[4]}

// TestAsTheRequester: with a requester, every item is also checked as that
// user, by the API server's answer (Lookup.May): create with no name,
// patch with the name for existing items under update, bind/escalate or
// every rule of a bound role, in the target namespace.
func (s *PolicySuite) TestAsTheRequester(c *C) {
	lk := lookup
	lk.users = map[string][]rbacv1.PolicyRule{
		"alice/team":  adminLike,
		"alice/other": adminLike,
		"bob/team":    adminLike,
		"bob/other":   {{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
		"eddie/team":  editLike,
		// May create RoleBindings, and bind "view" by name, but holds less than admin.
		"rb/team": append([]rbacv1.PolicyRule{
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"edit"}},
		}, editLike...),
		// May create configmaps named "mine" only: RBAC never allows such a create.
		"named/team": {{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}, ResourceNames: []string{"c"}}},
	}
	adminBinding := `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"}}`
	editBinding := `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}`
	for _, t := range []struct {
		about, user, target, resource, item string
		update                              bool
		reason                              string
	}{
		{"alice's configmap", "alice", "", "configmaps", `{"metadata":{"name":"c","namespace":"team"}}`, false, ""},
		{"alice's configmap into other", "alice", "other", "configmaps", `{"metadata":{"name":"c","namespace":"team"}}`, false, ""},
		{"bob's configmap into other, where he only reads", "bob", "other", "configmaps", `{"metadata":{"name":"c","namespace":"team"}}`, false,
			`bob may not create configmaps in namespace other`},
		{"eddie's binding to admin", "eddie", "", "rolebindings.rbac.authorization.k8s.io", adminBinding, false,
			`eddie may not create rolebindings.rbac.authorization.k8s.io in namespace team`},
		{"a binding to admin by one who may create bindings but holds less", "rb", "", "rolebindings.rbac.authorization.k8s.io", adminBinding, false,
			`RoleBinding b binds ClusterRole admin, which grants .*, which rb does not hold in namespace team`},
		{"a binding to edit by one who may bind edit", "rb", "", "rolebindings.rbac.authorization.k8s.io", editBinding, false, ""},
		{"alice's binding to admin", "alice", "", "rolebindings.rbac.authorization.k8s.io", adminBinding, false, ""},
		{"eddie's Role", "eddie", "", "roles.rbac.authorization.k8s.io", `{"metadata":{"name":"r","namespace":"team"},"rules":[]}`, false,
			`eddie may not create roles.rbac.authorization.k8s.io in namespace team`},
		{"a create allowed only by name", "named", "", "configmaps", `{"metadata":{"name":"c","namespace":"team"}}`, false,
			`named may not create configmaps in namespace team`},
		{"eddie updates an existing configmap", "eddie", "", "configmaps", `{"metadata":{"name":"old","namespace":"team"}}`, true, ""},
		{"bob may not patch in other", "bob", "other", "configmaps", `{"metadata":{"name":"old","namespace":"team"}}`, true,
			`bob may not create configmaps in namespace other`},
	} {
		user := authenticationv1.UserInfo{Username: t.user, Groups: []string{"system:authenticated"}}
		p := restorepolicy.Policy{Namespace: "team", Target: t.target, Bound: adminLike, Requester: &user, UpdateExisting: t.update,
			AdminOwned: restorepolicy.DefaultAdminOwned}
		d, err := restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr(t.resource), Object: obj(t.item)}, lk)
		c.Assert(err, IsNil, Commentf(t.about))
		if t.reason == "" {
			c.Check(d, Equals, restorepolicy.Decision{Allowed: true}, Commentf(t.about))
		} else {
			c.Check(d.Allowed, Equals, false, Commentf(t.about))
			c.Check(d.Reason, Matches, t.reason, Commentf(t.about))
		}
	}

	// Without a requester, the tenant role alone: eddie's binding passes.
	d, err := restorepolicy.Decide(context.Background(), restorepolicy.Policy{Namespace: "team", Bound: adminLike},
		restorepolicy.Item{Resource: gr("rolebindings.rbac.authorization.k8s.io"), Object: obj(adminBinding)}, lk)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, true)

	// The tenant role stays the outer limit: alice may do anything in
	// "team", not what adminLike does not allow.
	lk.users["alice/team"] = []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	alice := authenticationv1.UserInfo{Username: "alice"}
	d, err = restorepolicy.Decide(context.Background(), restorepolicy.Policy{Namespace: "team", Bound: adminLike, Requester: &alice},
		restorepolicy.Item{Resource: gr("widgets.example.com"), Object: obj(`{"metadata":{"name":"w","namespace":"team"}}`)}, lk)
	c.Assert(err, IsNil)
	c.Check(d.Reason, Equals, "the tenant role does not allow create on widgets.example.com")

	// The API server's errors are passed on, never read as an answer.
	lk.err = errors.New("unreachable")
	_, err = restorepolicy.Decide(context.Background(), restorepolicy.Policy{Namespace: "team", Bound: adminLike, Requester: &alice},
		restorepolicy.Item{Resource: gr("configmaps"), Object: obj(`{"metadata":{"name":"c","namespace":"team"}}`)}, lk)
	c.Check(err, ErrorMatches, "unreachable")
}

// TestReviewsAsksOnce: Reviews sends one SubjectAccessReview per question,
// with the user's groups and extra, and never reads an undecided review as
// allowed.
func (s *PolicySuite) TestReviewsAsksOnce(c *C) {
	var sent []authorizationv1.SubjectAccessReviewSpec
	r := &restorepolicy.Reviews{Create: func(_ context.Context, sar *authorizationv1.SubjectAccessReview) error {
		sent = append(sent, sar.Spec)
		sar.Status.Allowed = sar.Spec.ResourceAttributes.Verb == "create"
		if sar.Spec.ResourceAttributes.Verb == "escalate" {
			sar.Status.EvaluationError = "webhook authorizer down"
		}
		return nil
	}}
	u := authenticationv1.UserInfo{Username: "alice", UID: "u1", Groups: []string{"team-a"}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"x"}}}
	create := authorizationv1.ResourceAttributes{Namespace: "a", Verb: "create", Resource: "configmaps"}
	for range 3 {
		ok, err := r.May(context.Background(), u, create)
		c.Assert(err, IsNil)
		c.Check(ok, Equals, true)
	}
	c.Assert(sent, HasLen, 1)
	c.Check(sent[0].User, Equals, "alice")
	c.Check(sent[0].UID, Equals, "u1")
	c.Check(sent[0].Groups, DeepEquals, []string{"team-a"})
	c.Check(sent[0].Extra["scopes"], DeepEquals, authorizationv1.ExtraValue{"x"})
	ok, err := r.May(context.Background(), u, authorizationv1.ResourceAttributes{Namespace: "a", Verb: "patch", Resource: "configmaps", Name: "c"})
	c.Check(err, IsNil)
	c.Check(ok, Equals, false)
	_, err = r.May(context.Background(), u, authorizationv1.ResourceAttributes{Verb: "escalate", Resource: "roles"})
	c.Check(err, ErrorMatches, ".*could not decide: webhook authorizer down")
	// Another user is another question.
	_, err = r.May(context.Background(), authenticationv1.UserInfo{Username: "bob"}, create)
	c.Check(err, IsNil)
	c.Check(sent, HasLen, 4)
}

// TestNACAndVeleroKindsNeverRestored: an item of a NAC kind
// (oadp.openshift.io) or of Velero's (velero.io and its subgroups) is
// refused whoever asks, even with a tenant role and a requester that may do
// everything: a restore made for a tenant never creates a NAC or Velero
// object.
func (s *PolicySuite) TestNACAndVeleroKindsNeverRestored(c *C) {
	all := []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	lk := lookup
	lk.users = map[string][]rbacv1.PolicyRule{"root/team": all}
	for _, res := range []string{"nonadminbackups.oadp.openshift.io", "nonadminrestores.oadp.openshift.io", "blueprints.oadp.openshift.io",
		"dataprotectionapplications.oadp.openshift.io", "restores.velero.io", "backupstoragelocations.velero.io", "podvolumerestores.velero.io",
		"datadownloads.velero.io", "widgets.sub.velero.io"} {
		for _, requester := range []*authenticationv1.UserInfo{nil, {Username: "root"}} {
			p := restorepolicy.Policy{Namespace: "team", Bound: all, Requester: requester}
			d, err := restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr(res), Object: obj(`{"metadata":{"name":"x","namespace":"team"}}`)}, lk)
			c.Assert(err, IsNil, Commentf(res))
			c.Check(d.Allowed, Equals, false, Commentf(res))
			c.Check(d.Reason, Equals, res+" is a NAC or Velero kind: a restore made for a tenant never creates a NAC or Velero object", Commentf(res))
		}
	}
	// Groups that merely end alike are not Velero's.
	p := restorepolicy.Policy{Namespace: "team", Bound: all}
	d, err := restorepolicy.Decide(context.Background(), p, restorepolicy.Item{Resource: gr("widgets.notvelero.io"), Object: obj(`{"metadata":{"name":"x","namespace":"team"}}`)}, lookup)
	c.Assert(err, IsNil)
	c.Check(d.Allowed, Equals, true)
}
