package restorejudge_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/velero/restorejudge"
	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

func Test(t *testing.T) { TestingT(t) }

type JudgeSuite struct{}

var _ = Suite(&JudgeSuite{})

// lookup finds nothing and lets alice do anything but touch Secrets.
type lookup struct{}

func (lookup) Exists(context.Context, schema.GroupResource, string, string) (bool, error) {
	return false, nil
}

func (lookup) RoleRules(context.Context, string, string, string) ([]rbacv1.PolicyRule, bool, error) {
	return nil, false, nil
}

func (lookup) May(_ context.Context, user authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
	return user.Username == "alice" && a.Resource != "secrets", nil
}

var bound = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"create"}}}

const (
	cm    = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"}}`
	other = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"team"}}`
)

// setOf is the record of items, as VerifyBackupContents makes it.
func setOf(c *C, items ...string) *itemdigest.Set {
	ds := make([]itemdigest.Digest, len(items))
	for i := range items {
		var err error
		ds[i], err = itemdigest.Of([]byte(items[i]))
		c.Assert(err, IsNil)
	}
	set, err := itemdigest.NewSet(ds)
	c.Assert(err, IsNil)
	return &set
}

// TestNewNeedsARecord: a restore from a tenant's bucket as its requester
// is judged only with a record of verified items; without a requester, or
// from the admin's bucket, none is needed.
func (s *JudgeSuite) TestNewNeedsARecord(c *C) {
	alice := &authenticationv1.UserInfo{Username: "alice"}
	_, err := restorejudge.New(restorejudge.Config{Namespace: "team", Requester: alice, BucketOnly: true, Lookup: lookup{}})
	c.Check(errors.Is(err, restorejudge.ErrNoRecord), Equals, true)
	for _, cfg := range []restorejudge.Config{
		{Namespace: "team", BucketOnly: true, Lookup: lookup{}},
		{Namespace: "team", Requester: alice, Lookup: lookup{}},
		{Namespace: "team", Requester: alice, BucketOnly: true, Verified: setOf(c, cm), Lookup: lookup{}},
	} {
		_, err := restorejudge.New(cfg)
		c.Check(err, IsNil)
	}
	_, err = restorejudge.New(restorejudge.Config{Namespace: "team"})
	c.Check(err, ErrorMatches, "restorejudge: no Lookup")
}

// TestItem: verified first (from the tarball's bytes or Velero's item
// from the backup), then the modifiers, then restorepolicy as the
// requester; Within says what bounds the restore.
func (s *JudgeSuite) TestItem(c *C) {
	mods, err := tenantmodifiers.ParseAsVelero(&corev1.ConfigMap{Data: map[string]string{"m.yaml": "version: v1\nresourceModifierRules:\n" +
		"- conditions: {groupResource: configmaps, resourceNameRegex: '^other$'}\n  patches: [{operation: replace, path: /metadata/namespace, value: '\"elsewhere\"'}]\n"}})
	c.Assert(err, IsNil)
	j, err := restorejudge.New(restorejudge.Config{Namespace: "team", Spec: &velerov1.RestoreSpec{NamespaceMapping: map[string]string{"team": "copy"}},
		Requester: &authenticationv1.UserInfo{Username: "alice"}, Bound: bound, TenantRole: "admin", BucketOnly: true, Modifiers: mods,
		Verified: setOf(c, cm, other), Backup: "b", Lookup: lookup{}})
	c.Assert(err, IsNil)
	c.Check(j.Target(), Equals, "copy")
	c.Check(j.Mapped(), Equals, true)
	c.Check(j.Within(), Equals, "ClusterRole admin allows in namespace copy and alice may do there, as the resource modifiers make them, each as nacflow verified it")
	obj := func(js string) map[string]any {
		m := map[string]any{}
		c.Assert(json.Unmarshal([]byte(js), &m), IsNil)
		return m
	}
	for _, t := range []struct {
		it         restorejudge.Item
		allowed    bool
		unverified bool
		reason     string
	}{
		{restorejudge.Item{Resource: schema.GroupResource{Resource: "configmaps"}, Object: obj(cm), Raw: []byte(cm)}, true, false, ""},
		{restorejudge.Item{Resource: schema.GroupResource{Resource: "configmaps"}, Object: obj(cm), FromBackup: obj(cm)}, true, false, ""},
		{restorejudge.Item{Resource: schema.GroupResource{Resource: "configmaps"}, Object: obj(cm)}, false, true,
			"Velero gave no item from the backup to check against what nacflow verified of backup b"},
		{restorejudge.Item{Resource: schema.GroupResource{Resource: "configmaps"}, Object: obj(cm), Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"},"data":{}}`)},
			false, true, "changed since nacflow verified backup b"},
		{restorejudge.Item{Resource: schema.GroupResource{Resource: "configmaps"}, Object: obj(other), Raw: []byte(other)}, false, false, `a resource modifier moves it to namespace "elsewhere"`},
		{restorejudge.Item{Resource: schema.GroupResource{Resource: "secrets"}, Object: obj(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"team"}}`),
			Raw: []byte(`[1]`)}, false, false, "alice may not create secrets in namespace copy"},
	} {
		v, err := j.Item(context.Background(), t.it)
		c.Assert(err, IsNil)
		c.Check(v.Allowed, Equals, t.allowed, Commentf("%v", t.it))
		c.Check(v.Unverified, Equals, t.unverified, Commentf("%v", t.it))
		c.Check(v.Reason, Equals, t.reason, Commentf("%v", t.it))
	}
	c.Check(j.CopyChanged([]byte(cm)), Equals, false)
	c.Check(j.CopyChanged([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)), Equals, true)
	c.Check(j.CopyChanged([]byte(`not json`)), Equals, false, Commentf("Velero restores no such item"))
}

// TestRecord: a record is used only for the very Backup it records, with
// digests.
func (s *JudgeSuite) TestRecord(c *C) {
	_, bad := restorejudge.Record(nil, "uid")
	c.Check(bad.Kind, Equals, restorejudge.RecordMissing)
	_, bad = restorejudge.Record(&corev1.ConfigMap{}, "uid")
	c.Check(bad.Kind, Equals, restorejudge.RecordUnreadable)
	m := itemdigest.Manifest{Backup: "b", BackupUID: "uid", Set: *setOf(c, cm)}
	set, bad := restorejudge.Record(m.ConfigMap(metav1.ObjectMeta{Name: "b-verified-items"}), "uid")
	c.Assert(bad, IsNil)
	c.Check(set.Len(), Equals, 1)
	_, bad = restorejudge.Record(m.ConfigMap(metav1.ObjectMeta{Name: "b-verified-items"}), "new-uid")
	c.Check(*bad, DeepEquals, restorejudge.Unusable{Kind: restorejudge.RecordOfOtherBackup, RecordUID: "uid"})
	m = itemdigest.Manifest{Backup: "b", BackupUID: "uid", Unrecorded: "too many"}
	_, bad = restorejudge.Record(m.ConfigMap(metav1.ObjectMeta{Name: "b-verified-items"}), "uid")
	c.Check(*bad, DeepEquals, restorejudge.Unusable{Kind: restorejudge.RecordWithoutDigests, Why: "too many"})
}
