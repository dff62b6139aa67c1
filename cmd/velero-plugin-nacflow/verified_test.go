package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/archive"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework/common"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	riav1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v1"
	"github.com/vmware-tanzu/velero/pkg/util/filesystem"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

// awkwardItem has every kind of JSON number, unicode and characters
// encoding/json escapes, its keys out of order.
const awkwardItem = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"team","name":"numbers","annotations":{"u":"ü € 😀 \u2028 <&>"}},` +
	`"data":{"k":"v"},"spec":{"int":42,"neg":-7,"zero":-0,"negzero":-0.0,"float":1.5,"whole":3.0,"exp":1e3,"tiny":1e-7,"big":12345678901234567890,` +
	`"huge":1e300,"max":9223372036854775807,"list":[1,2.5,"x",null,true,{"b":1,"a":2}]}}`

// recordingAction is a RestoreItemAction that keeps the digest of the
// ItemFromBackup it receives.
type recordingAction struct{ got chan itemdigest.Digest }

func (recordingAction) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{}, nil
}

func (r recordingAction) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	d, err := itemdigest.OfObject(in.ItemFromBackup.UnstructuredContent())
	if err != nil {
		return nil, err
	}
	r.got <- d
	return velero.NewRestoreItemActionExecuteOutput(in.Item), nil
}

// TestDigestAsVeleroHandsIt: the digest nacflow records from the
// tarball's bytes (itemdigest.Of) is the digest of the ItemFromBackup a
// restore item action receives from Velero v1.18.3 — the item file read by
// Velero's own archive.Unmarshal, copied as restoreItem copies it
// (obj.DeepCopy()), sent by Velero's restore item action gRPC client and
// received by its server in the plugin —, numbers and unicode included.
func TestDigestAsVeleroHandsIt(t *testing.T) {
	log := logrus.New()
	log.SetOutput(os.Stderr)
	got := make(chan itemdigest.Digest, 1)
	p := framework.NewRestoreItemActionPlugin(common.ClientLogger(log), common.ServerLogger(log))
	p.Register("nacflow.io/record", func(logrus.FieldLogger) (any, error) { return recordingAction{got: got}, nil })
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{"RestoreItemAction": p})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense("RestoreItemAction")
	if err != nil {
		t.Fatal(err)
	}
	ria, ok := raw.(common.ClientDispenser).ClientFor("nacflow.io/record").(riav1.RestoreItemAction)
	if !ok {
		t.Fatalf("the dispensed client is a %T", raw)
	}
	dir := t.TempDir()
	for _, item := range []string{
		awkwardItem,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"u"}]}`,
		"{\"kind\":\"X\",\"s\":\"invalid \xff utf-8\",\"n\":100000000000000000000000,\"m\":-1.0e-20}",
	} {
		path := filepath.Join(dir, "item.json")
		if err := os.WriteFile(path, []byte(item), 0o600); err != nil {
			t.Fatal(err)
		}
		want, err := itemdigest.Of([]byte(item))
		if err != nil {
			t.Fatal(err)
		}
		// Velero's restore: processSelectedResource, then restoreItem.
		obj, err := archive.Unmarshal(filesystem.NewFileSystem(), path)
		if err != nil {
			t.Fatal(err)
		}
		itemFromBackup := obj.DeepCopy()
		if _, err := ria.Execute(&velero.RestoreItemActionExecuteInput{Item: obj, ItemFromBackup: itemFromBackup, Restore: &velerov1.Restore{}}); err != nil {
			t.Fatal(err)
		}
		if d := <-got; d != want {
			t.Errorf("the plugin received an item of digest %s, nacflow recorded %s, for %s", d, want, item)
		}
	}
}

// recordVerified writes the record of verified items of Velero Backup
// backup (created with uid on the tenant's location team-own-1) holding
// the digests of items, or unrecorded.
func (s *ActionSuite) recordVerified(c *C, backup string, uid types.UID, recordUID types.UID, unrecorded string, items ...string) {
	ctx := context.Background()
	c.Assert(s.kube.Create(ctx, &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: backup, Namespace: "openshift-adp", UID: uid},
		Spec: velerov1.BackupSpec{StorageLocation: "team-own-1"}}), IsNil)
	var ds []itemdigest.Digest
	for _, it := range items {
		d, err := itemdigest.Of([]byte(it))
		c.Assert(err, IsNil)
		ds = append(ds, d)
	}
	set, err := itemdigest.NewSet(ds)
	c.Assert(err, IsNil)
	m := itemdigest.Manifest{Backup: backup, BackupUID: recordUID, Set: set, Unrecorded: unrecorded}
	c.Assert(s.kube.Create(ctx, m.ConfigMap(metav1.ObjectMeta{Name: itemdigest.Name(backup), Namespace: "openshift-adp"})), IsNil)
}

// verifiedRestore is a tenant's restore of backup naming its record.
func verifiedRestore(uid, backup string) *velerov1.Restore {
	r := tenantRestore(map[string]string{itemdigest.RestoreAnnotation: itemdigest.Name(backup)}, "")
	r.UID, r.Spec.BackupName = types.UID(uid), backup
	return r
}

// TestRestoresOnlyWhatWasVerified: in a restore naming its record of
// verified items, an item whose ItemFromBackup (what Velero read from the
// bucket) nacflow did not verify is left out with a Warning naming it —
// whatever the item after other actions —, as is one without
// ItemFromBackup; a verified item goes on to the tenant's rules. The
// record is read once per restore.
func (s *ActionSuite) TestRestoresOnlyWhatWasVerified(c *C) {
	s.recordVerified(c, "verified-b", "vb-uid", "vb-uid", "", bindingToEdit, oldConfigMap, bindingToClusterAdmin)
	r := verifiedRestore("u-v1", "verified-b")

	out, err := s.execute(c, r, bindingToEdit)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
	c.Check(s.log.Entries, HasLen, 0)
	// A verified item still meets the tenant's rules.
	out, err = s.execute(c, r, bindingToClusterAdmin)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, true)
	c.Check(s.log.LastEntry().Message, Matches, `nacflow: not restoring rolebindings.rbac.authorization.k8s.io team/root: RoleBinding root binds ClusterRole cluster-admin, .*`)

	// Written into the bucket after nacflow verified the backup: a binding
	// the tenant role would allow.
	const added = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"intruder","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"mallory"}]}`
	for _, t := range []struct{ item, fromBackup string }{
		{added, added},
		{oldConfigMap, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"old","namespace":"team"},"data":{"changed":"yes"}}`},
	} {
		s.log.Reset()
		out, err = s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: item(t.item), ItemFromBackup: item(t.fromBackup), Restore: r})
		c.Assert(err, IsNil)
		c.Check(out.SkipRestore, Equals, true, Commentf(t.item))
		c.Assert(s.log.LastEntry(), NotNil)
		c.Check(s.log.LastEntry().Level, Equals, logrus.WarnLevel)
		c.Check(s.log.LastEntry().Message, Matches, `nacflow: not restoring (RoleBinding team/intruder|ConfigMap team/old): changed since nacflow verified backup verified-b`)
	}
	s.log.Reset()
	out, err = s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: item(oldConfigMap), Restore: r})
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, true)
	c.Check(s.log.LastEntry().Message, Equals, "nacflow: not restoring ConfigMap team/old: Velero gave no item from the backup to check against what nacflow verified of backup verified-b")

	// Read once: the record gone, the restore still has it.
	c.Assert(s.kube.DeleteAllOf(context.Background(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}), IsNil)
	out, err = s.execute(c, r, bindingToEdit)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
	// Another restore reads it again.
	out, err = s.execute(c, verifiedRestore("u-v2", "verified-b"), bindingToEdit)
	c.Check(err, ErrorMatches, `restore r: the record of verified items it names, ConfigMap openshift-adp/verified-b-verified-items, does not exist: not restoring its items \(nacflow restores only what it verified\)`)
	c.Check(out, IsNil)
}

// TestVerifiedFailsClosed: a record that is missing, of another Backup
// or without digests refuses every item; a requester-bounded restore
// from a tenant's bucket that names no record refuses every item; one
// without a requester, or from the admin's bucket, is not concerned.
func (s *ActionSuite) TestVerifiedFailsClosed(c *C) {
	s.recordVerified(c, "older", "new-uid", "old-uid", "", bindingToEdit)
	s.recordVerified(c, "huge", "huge-uid", "huge-uid", "the backup holds more than 60000 distinct items: nacflow records the digests of at most 60000")
	for _, t := range []struct {
		r   *velerov1.Restore
		err string
	}{
		{verifiedRestore("u-missing", "on-tenant"), `restore r: the record of verified items it names, ConfigMap openshift-adp/on-tenant-verified-items, does not exist: .*`},
		{verifiedRestore("u-older", "older"), `restore r: ConfigMap openshift-adp/older-verified-items records the items of Velero Backup UID old-uid, not those of Velero Backup older \(UID new-uid\): not restoring its items .*`},
		{verifiedRestore("u-huge", "huge"), `restore r: nacflow recorded no item digests for Velero Backup huge: the backup holds more than 60000 distinct items: .*`},
		{func() *velerov1.Restore {
			r := tenantRestore(map[string]string{restorepolicy.RequesterAnnotation: `{"username":"alice"}`}, "")
			r.UID, r.Spec.BackupName = "u-unnamed", "on-tenant"
			return r
		}(), `restore r: its backup is kept in a bucket a tenant writes and it is restored as its requester, but it names no record of verified items \(annotation nacflow.io/restore-verified-items\): not restoring its items`},
	} {
		for range 2 {
			_, err := s.execute(c, t.r, bindingToEdit)
			c.Check(err, ErrorMatches, t.err)
		}
	}
	// No requester: the tenant role bounds the restore, as before.
	r := tenantRestore(nil, "")
	r.UID, r.Spec.BackupName = "u-plain", "on-tenant"
	out, err := s.execute(c, r, bindingToEdit)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
}
