package phases

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type ScopeSuite struct{}

var _ = Suite(&ScopeSuite{})

// Well-known names and kinds the RESTMapper says are cluster-scoped are
// reported; namespaced, wildcard and unknown names are not.
func (s *ScopeSuite) TestClusterScopedIn(c *C) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	got, err := clusterScopedIn(m, []string{"pods", "*", "PV", "widgets.example.com", "gadgets.example.com", "nothing.example.com", "clusterroles"})
	c.Assert(err, IsNil)
	c.Check(got, DeepEquals, []string{"PV", "widgets.example.com", "clusterroles"})
	got, err = clusterScopedIn(nil, []string{"widgets.example.com", "crd"})
	c.Assert(err, IsNil)
	c.Check(got, DeepEquals, []string{"crd"})
}

// Exclusions go in the filter style the spec uses: Velero refuses a backup
// that mixes old-style excludedResources with the scoped filters.
func (s *ScopeSuite) TestExcludeForTenant(c *C) {
	old := &velerov1.BackupSpec{ExcludedResources: []string{"secrets", "clusterroles"}}
	excludeForTenant(old)
	c.Check(old.ExcludedResources[:2], DeepEquals, []string{"secrets", "clusterroles"})
	c.Check(old.ExcludedResources, HasLen, 2+len(NACResources)+len(ClusterExcludedResources)-1) // clusterroles once
	c.Check(old.ExcludedNamespaceScopedResources, HasLen, 0)
	c.Check(old.ExcludedClusterScopedResources, HasLen, 0)
	for _, r := range append(append([]string{}, NACResources...), ClusterExcludedResources...) {
		c.Check(old.ExcludedResources, Contains, r)
	}

	scoped := &velerov1.BackupSpec{IncludedNamespaceScopedResources: []string{"configmaps"}}
	excludeForTenant(scoped)
	c.Check(scoped.ExcludedResources, HasLen, 0)
	c.Check(scoped.ExcludedNamespaceScopedResources, DeepEquals, NACResources)
	c.Check(scoped.ExcludedClusterScopedResources, DeepEquals, ClusterExcludedResources)
}

// The prefix is forced under the namespace (and the shared root), and what
// the tenant wrote must already be clean.
func (s *ScopeSuite) TestForcePrefix(c *C) {
	args := &ValidateBSLSpecArgs{SharedBuckets: []SharedBucket{{Bucket: "velero", Root: "tenants"}}}
	for _, tc := range []struct {
		bucket, prefix, want, err string
	}{
		{"own", "", "team", ""},
		{"own", "my-backups", "team/my-backups", ""},
		{"own", "/my-backups/", "team/my-backups", ""},
		// OADP NAC's mapping: a prefix naming the namespace is still put
		// under it, so OADP-written locations are read in place.
		{"own", "team", "team/team", ""},
		{"own", "team/x", "team/team/x", ""},
		{"velero", "x", "tenants/team/x", ""},
		{"velero", "", "tenants/team", ""},
		{"own", "../other", "", `.*prefix "../other" must be a clean relative path: no ".." segment`},
		{"own", "a//b", "", `.*prefix "a//b" must be a clean relative path: no leading, trailing or doubled "/"`},
		{"own", "./a", "", `.*prefix "./a" must be a clean relative path: no "." segment`},
		{"own/x", "a", "", `.*bucket "own/x" must be a bucket name.*`},
	} {
		spec := &velerov1.BackupStorageLocationSpec{
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: tc.bucket, Prefix: tc.prefix}}}
		err := forcePrefix(args, "team", "", spec)
		if tc.err != "" {
			c.Check(err, ErrorMatches, tc.err, Commentf("%s %q", tc.bucket, tc.prefix))
			continue
		}
		c.Check(err, IsNil, Commentf("%s %q", tc.bucket, tc.prefix))
		c.Check(spec.ObjectStorage.Prefix, Equals, tc.want)
	}
}

// A location accepted under the mapping of earlier nacflow builds keeps its
// folder on upgrade; a new one, or one whose prefix changed, gets OADP's.
func (s *ScopeSuite) TestForcePrefixKeepsLegacyLocations(c *C) {
	args := &ValidateBSLSpecArgs{SharedBuckets: []SharedBucket{{Bucket: "velero", Root: "tenants"}}}
	for _, tc := range []struct {
		bucket, prefix, recorded, want string
	}{
		{"own", "team", "team", "team"},       // accepted before: kept
		{"own", "team/x", "team/x", "team/x"}, // accepted before: kept
		{"velero", "team/x", "tenants/team/x", "tenants/team/x"},
		{"own", "team", "", "team/team"},                // new location: OADP's
		{"own", "team/x", "team/old", "team/team/x"},    // the prefix changed since
		{"own", "team/x", "team/team/x", "team/team/x"}, // already OADP's
		{"own", "x", "team/x", "team/x"},                // both mappings agree
	} {
		spec := &velerov1.BackupStorageLocationSpec{
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: tc.bucket, Prefix: tc.prefix}}}
		c.Assert(forcePrefix(args, "team", tc.recorded, spec), IsNil)
		c.Check(spec.ObjectStorage.Prefix, Equals, tc.want, Commentf("%+v", tc))
	}
}

// Contains checks that a []string holds a value.
var Contains Checker = &containsChecker{&CheckerInfo{Name: "Contains", Params: []string{"list", "value"}}}

type containsChecker struct{ *CheckerInfo }

func (containsChecker) Check(params []any, _ []string) (bool, string) {
	list, ok := params[0].([]string)
	if !ok {
		return false, "list must be a []string"
	}
	for _, s := range list {
		if s == params[1] {
			return true, ""
		}
	}
	return false, ""
}
