package dpa_test

import (
	"context"
	"testing"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/dpa"
)

func Test(t *testing.T) { TestingT(t) }

type SourceSuite struct{}

var _ = Suite(&SourceSuite{})

func dpaObject(name string, nonAdmin map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	if nonAdmin != nil {
		u.Object["spec"] = map[string]any{"nonAdmin": nonAdmin}
	}
	u.SetGroupVersionKind(dpa.GroupVersionKind)
	u.SetNamespace("oadp")
	u.SetName(name)
	return u
}

// fakeReader returns a client that knows the DPA kind (installed) or not.
func fakeReader(installed bool, objs ...client.Object) client.Client {
	mapper := meta.NewDefaultRESTMapper(nil)
	if installed {
		mapper.Add(dpa.GroupVersionKind, meta.RESTScopeNamespace)
	}
	return fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithRESTMapper(mapper).WithObjects(objs...).Build()
}

func (s *SourceSuite) TestPrecedence(c *C) {
	ctx := context.Background()
	d := dpaObject("dpa", map[string]any{"requireApprovalForBSL": true, "backupSyncPeriod": "5m0s", "garbageCollectionPeriod": "1h0m0s"})
	src := &dpa.Source{Reader: fakeReader(true, d), Namespace: "oadp"}

	required, from, err := src.RequireApprovalForBSL(ctx)
	c.Assert(err, IsNil)
	c.Check(required, Equals, true)
	c.Check(from, Equals, "DataProtectionApplication oadp/dpa spec.nonAdmin.requireApprovalForBSL")
	period, from, err := src.Period(ctx, dpa.BackupSyncPeriod, 2*time.Minute)
	c.Assert(err, IsNil)
	c.Check(period, Equals, 5*time.Minute)
	c.Check(from, Equals, "DataProtectionApplication oadp/dpa spec.nonAdmin.backupSyncPeriod")
	period, _, err = src.Period(ctx, dpa.GarbageCollectionPeriod, 24*time.Hour)
	c.Assert(err, IsNil)
	c.Check(period, Equals, time.Hour)

	// Flags given on the command line win, even when they say "no".
	no, zero := false, time.Duration(0)
	src.Flags = dpa.Flags{RequireApprovalForBSL: &no, BackupSyncPeriod: &zero}
	required, from, err = src.RequireApprovalForBSL(ctx)
	c.Assert(err, IsNil)
	c.Check(required, Equals, false)
	c.Check(from, Equals, "flag --require-approval-for-bsl")
	period, from, err = src.Period(ctx, dpa.BackupSyncPeriod, 2*time.Minute)
	c.Assert(err, IsNil)
	c.Check(period, Equals, time.Duration(0))
	c.Check(from, Equals, "flag --backup-sync-period")
	period, from, _ = src.Period(ctx, dpa.GarbageCollectionPeriod, 24*time.Hour)
	c.Check(period, Equals, time.Hour, Commentf("a flag not given yields to the DPA: %s", from))
}

func (s *SourceSuite) TestDefaultsWithoutDPA(c *C) {
	ctx := context.Background()
	for _, reader := range []client.Client{
		fakeReader(false),                     // OADP's CRD not installed
		fakeReader(true),                      // installed, no DPA
		fakeReader(true, dpaObject("x", nil)), // a DPA without spec.nonAdmin
	} {
		src := &dpa.Source{Reader: reader, Namespace: "oadp"}
		settings, err := src.Get(ctx)
		c.Assert(err, IsNil)
		c.Check(settings, IsNil)
		required, from, err := src.RequireApprovalForBSL(ctx)
		c.Assert(err, IsNil)
		c.Check(required, Equals, false)
		c.Check(from, Equals, dpa.FromDefault)
		period, _, err := src.Period(ctx, dpa.BackupSyncPeriod, 2*time.Minute)
		c.Assert(err, IsNil)
		c.Check(period, Equals, 2*time.Minute)
		rev, err := src.Revision(ctx)
		c.Assert(err, IsNil)
		c.Check(rev, Equals, "none")
	}
	var nilSource *dpa.Source
	settings, err := nilSource.Get(ctx)
	c.Check(settings, IsNil)
	c.Check(err, IsNil)
}

// Several DPAs with spec.nonAdmin: the first by name, as OADP NAC picks.
func (s *SourceSuite) TestFirstByName(c *C) {
	src := &dpa.Source{Reader: fakeReader(true,
		dpaObject("zeta", map[string]any{"requireApprovalForBSL": false}),
		dpaObject("alpha", nil),
		dpaObject("beta", map[string]any{"requireApprovalForBSL": true}),
	), Namespace: "oadp"}
	settings, err := src.Get(context.Background())
	c.Assert(err, IsNil)
	c.Assert(settings, NotNil)
	c.Check(settings.Name, Equals, "beta")
}

// What was read is reused for MaxAge, then read again; the revision
// follows spec.nonAdmin only.
func (s *SourceSuite) TestMaxAgeAndRevision(c *C) {
	ctx := context.Background()
	d := dpaObject("dpa", map[string]any{"requireApprovalForBSL": true})
	reader := fakeReader(true, d)
	src := &dpa.Source{Reader: reader, Namespace: "oadp", MaxAge: 50 * time.Millisecond}
	rev1, err := src.Revision(ctx)
	c.Assert(err, IsNil)

	c.Assert(reader.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, false, "spec", "nonAdmin", "requireApprovalForBSL"), IsNil)
	c.Assert(reader.Update(ctx, d), IsNil)
	required, _, err := src.RequireApprovalForBSL(ctx)
	c.Assert(err, IsNil)
	c.Check(required, Equals, true, Commentf("still within MaxAge"))
	time.Sleep(60 * time.Millisecond)
	required, _, err = src.RequireApprovalForBSL(ctx)
	c.Assert(err, IsNil)
	c.Check(required, Equals, false)
	rev2, err := src.Revision(ctx)
	c.Assert(err, IsNil)
	c.Check(rev2, Not(Equals), rev1)

	// An edit outside spec.nonAdmin keeps the revision.
	c.Assert(reader.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, "x", "spec", "backupImages"), IsNil)
	c.Assert(reader.Update(ctx, d), IsNil)
	time.Sleep(60 * time.Millisecond)
	rev3, err := src.Revision(ctx)
	c.Assert(err, IsNil)
	c.Check(rev3, Equals, rev2)
}

// A field of spec.nonAdmin that does not decode spoils only what depends on
// it: its setting is an error naming the DPA field (a period keeps the last
// one resolved), the others apply.
func (s *SourceSuite) TestUndecodableField(c *C) {
	ctx := context.Background()
	d := dpaObject("dpa", map[string]any{"backupSyncPeriod": "1h0m0s", "garbageCollectionPeriod": "1h0m0s", "requireApprovalForBSL": true})
	reader := fakeReader(true, d)
	src := &dpa.Source{Reader: reader, Namespace: "oadp", MaxAge: time.Millisecond}
	period, _, err := src.Period(ctx, dpa.BackupSyncPeriod, 2*time.Minute)
	c.Assert(err, IsNil)
	c.Check(period, Equals, time.Hour)

	c.Assert(reader.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, "soon", "spec", "nonAdmin", "backupSyncPeriod"), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, "yes", "spec", "nonAdmin", "requireApprovalForBSL"), IsNil)
	c.Assert(reader.Update(ctx, d), IsNil)
	time.Sleep(5 * time.Millisecond)

	settings, err := src.Get(ctx)
	c.Assert(err, IsNil)
	c.Check(settings.Invalid, HasLen, 2)
	period, from, err := src.Period(ctx, dpa.BackupSyncPeriod, 2*time.Minute)
	c.Check(err, ErrorMatches, `DataProtectionApplication oadp/dpa spec.nonAdmin.backupSyncPeriod: .*`)
	c.Check(period, Equals, time.Hour, Commentf("the last period resolved, not the default: %s", from))
	_, _, err = src.RequireApprovalForBSL(ctx)
	c.Check(err, ErrorMatches, `DataProtectionApplication oadp/dpa spec.nonAdmin.requireApprovalForBSL: .*`, Commentf("never read as \"not required\""))
	period, _, err = src.Period(ctx, dpa.GarbageCollectionPeriod, 24*time.Hour)
	c.Assert(err, IsNil)
	c.Check(period, Equals, time.Hour, Commentf("the other fields still apply"))
}

// A DPA period below the minimum is raised to it; 0 still disables.
func (s *SourceSuite) TestMinimumPeriod(c *C) {
	src := &dpa.Source{Reader: fakeReader(true, dpaObject("dpa", map[string]any{"backupSyncPeriod": "1ms", "garbageCollectionPeriod": "0s"})), Namespace: "oadp"}
	period, from, err := src.Period(context.Background(), dpa.BackupSyncPeriod, 2*time.Minute)
	c.Assert(err, IsNil)
	c.Check(period, Equals, dpa.MinPeriod)
	c.Check(from, Matches, `.*backupSyncPeriod \(raised to the minimum, 10s\)`)
	period, _, err = src.Period(context.Background(), dpa.GarbageCollectionPeriod, 24*time.Hour)
	c.Assert(err, IsNil)
	c.Check(period, Equals, time.Duration(0))
}

// The revision follows only what storage locations depend on.
func (s *SourceSuite) TestRevisionIgnoresOtherSettings(c *C) {
	ctx := context.Background()
	d := dpaObject("dpa", map[string]any{"requireApprovalForBSL": true, "enforceBackupSpec": map[string]any{"ttl": "1h"}})
	reader := fakeReader(true, d)
	src := &dpa.Source{Reader: reader, Namespace: "oadp", MaxAge: time.Millisecond}
	rev1, err := src.Revision(ctx)
	c.Assert(err, IsNil)
	c.Assert(reader.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, "2h", "spec", "nonAdmin", "enforceBackupSpec", "ttl"), IsNil)
	c.Assert(reader.Update(ctx, d), IsNil)
	time.Sleep(5 * time.Millisecond)
	rev2, err := src.Revision(ctx)
	c.Assert(err, IsNil)
	c.Check(rev2, Equals, rev1)
	c.Assert(reader.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, map[string]any{"provider": "aws"}, "spec", "nonAdmin", "enforceBSLSpec"), IsNil)
	c.Assert(reader.Update(ctx, d), IsNil)
	time.Sleep(5 * time.Millisecond)
	rev3, err := src.Revision(ctx)
	c.Assert(err, IsNil)
	c.Check(rev3, Not(Equals), rev1)
}
