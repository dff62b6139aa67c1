package phases

import (
	"context"
	"encoding/json"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/dpa"
	"github.com/nacflow/nacflow/engine"
)

// enforcingSettings is a DataProtectionApplication enforcing restore
// values.
type enforcingSettings struct{ restore string }

func (s enforcingSettings) Get(context.Context) (*dpa.Settings, error) {
	return &dpa.Settings{Namespace: "oadp", Name: "dpa", NonAdmin: dpa.NonAdmin{EnforceRestoreSpec: json.RawMessage(s.restore)}}, nil
}
func (enforcingSettings) RequireApprovalForBSL(context.Context) (bool, string, error) {
	return false, dpa.FromDefault, nil
}
func (enforcingSettings) Report(context.Context, string, string) {}

// CreateRestoreSuite: CreateVeleroRestore when no accepted spec survived
// (OADP's CRDs prune status.veleroRestore.spec).
type CreateRestoreSuite struct{}

var _ = Suite(&CreateRestoreSuite{})

// The current spec is decided on again as ValidateRestoreSpec does: the
// DataProtectionApplication's enforced values are applied to it.
func (s *CreateRestoreSuite) TestEnforcedAgainWithoutAcceptedSpec(c *C) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	c.Assert(v1alpha1.AddToScheme(scheme), IsNil)
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team"},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
	nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{Name: "b", Status: &velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted}}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(nab, &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "oadp",
		Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "team"}}}).Build()
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nightly", IncludedResources: []string{"configmaps"}}}}
	op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1", Client: cl, APIReader: cl}
	f := bind(&CreateVeleroRestore{tools: tools{recent: newRecentCreates()},
		validate: ValidateRestoreSpec{settings: enforcingSettings{`{"existingResourcePolicy":"update"}`}}})
	_, err := f.Run(ctx, op, &CreateVeleroRestoreArgs{BackupName: "b"})
	c.Assert(err, IsNil)
	r := &velerov1.Restore{}
	c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "oadp", Name: v1alpha1.NACObjectName("team", "back", "uuid-1")}, r), IsNil)
	c.Check(r.Spec.ExistingResourcePolicy, Equals, velerov1.PolicyTypeUpdate)
	c.Check(r.Spec.IncludedResources, DeepEquals, []string{"configmaps"})

	// A value the DPA enforces otherwise is refused, and nothing is made.
	other := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "team"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nightly", ExistingResourcePolicy: velerov1.PolicyTypeNone}}}
	op = &engine.Operation{Object: other, OADPNamespace: "oadp", UUID: "uuid-2", Client: cl, APIReader: cl}
	_, err = f.Run(ctx, op, &CreateVeleroRestoreArgs{BackupName: "b"})
	c.Assert(err, ErrorMatches, "spec.restoreSpec.existingResourcePolicy field value is enforced by admin user, can not override it")
	c.Check(engine.IsTerminal(err), Equals, true)
	list := &velerov1.RestoreList{}
	c.Assert(cl.List(ctx, list), IsNil)
	c.Check(list.Items, HasLen, 1)
}

// A backup kept in a bucket the tenant writes — on a location with OADP's
// NABSL label, on one that does not exist, or naming none — is restored
// without its PersistentVolumes (Velero would create them from whatever
// native snapshot the bucket names), and the phase says why; a backup on
// the admin's location keeps them.
func (s *CreateRestoreSuite) TestPersistentVolumesOfTenantBuckets(c *C) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	c.Assert(v1alpha1.AddToScheme(scheme), IsNil)
	backup := func(name, location string) *velerov1.Backup {
		return &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "oadp",
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "team"}}, Spec: velerov1.BackupSpec{StorageLocation: location}}
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "oadp"}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "team-own-1", Namespace: "oadp",
			Labels: map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "team-own-1"}}},
		backup("on-admin", "default"), backup("on-tenant", "team-own-1"), backup("on-gone", "gone"), backup("on-none", "")).Build()
	for i, t := range []struct {
		backup string
		pvs    bool // PersistentVolumes restored
	}{{"on-admin", true}, {"on-tenant", false}, {"on-gone", false}, {"on-none", false}} {
		nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: t.backup, Namespace: "team"},
			Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nab"}}}
		nar.Status.VeleroRestore = &v1alpha1.VeleroRestore{Spec: &velerov1.RestoreSpec{BackupName: "nab"}}
		uuid := "uuid-" + string(rune('a'+i))
		op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: uuid, Client: cl, APIReader: cl}
		f := bind(&CreateVeleroRestore{tools: tools{recent: newRecentCreates()}})
		res, err := f.Run(ctx, op, &CreateVeleroRestoreArgs{BackupName: t.backup})
		c.Assert(err, IsNil, Commentf(t.backup))
		r := &velerov1.Restore{}
		c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "oadp", Name: v1alpha1.NACObjectName("team", t.backup, uuid)}, r), IsNil)
		excluded := false
		for _, e := range r.Spec.ExcludedResources {
			excluded = excluded || e == "persistentvolumes"
		}
		c.Check(excluded, Equals, !t.pvs, Commentf(t.backup))
		if t.pvs {
			c.Check(res.Message, Not(Matches), `.*PersistentVolumes excluded.*`)
		} else {
			c.Check(res.Message, Matches, `Created Velero Restore oadp/\S+ of Velero Backup `+t.backup+`; PersistentVolumes excluded: Velero Backup `+t.backup+
				` is kept in a bucket the tenant writes \(location ".*"\), so its volumes come back only from data in that bucket \(file-system backup, data mover\), never from a snapshot it names`, Commentf(t.backup))
		}
	}
}

// TestUnbackedAcceptedSpec: an accepted spec that maps elsewhere or names
// the tenant's modifiers (as a nacflow before the record kept them there)
// is refused when no requester vouches for it at the moment of use; the
// admin's enforced modifiers alone, and a known requester's mapping, pass.
func (s *CreateRestoreSuite) TestUnbackedAcceptedSpec(c *C) {
	mods := &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "mods"}
	tenant := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nightly", ResourceModifier: mods}}}
	plain := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nightly"}}}
	nobody := requesterVerdict{reason: v1alpha1.ReasonRequesterNotRecorded}
	alice := requesterVerdict{user: &authenticationv1.UserInfo{Username: "alice"}, reason: v1alpha1.ReasonRequesterRecorded}
	mapped := &velerov1.RestoreSpec{NamespaceMapping: map[string]string{"team": "other"}}
	c.Check(unbacked(plain, mapped, nobody, false), ErrorMatches, `spec.restoreSpec.namespaceMapping: team to other: .* no one is known now \(condition RequesterVerified: RequesterNotRecorded\)`)
	c.Check(unbacked(plain, mapped, alice, false), IsNil)
	c.Check(unbacked(tenant, &velerov1.RestoreSpec{ResourceModifier: mods}, nobody, false), ErrorMatches, `spec.restoreSpec.resourceModifier: a tenant's resource modifiers need a known requester .*`)
	c.Check(unbacked(tenant, &velerov1.RestoreSpec{ResourceModifier: mods}, alice, false), NotNil, Commentf("a requester whose record holds no modifiers"))
	c.Check(unbacked(tenant, &velerov1.RestoreSpec{ResourceModifier: mods}, alice, true), IsNil)
	c.Check(unbacked(plain, &velerov1.RestoreSpec{ResourceModifier: mods}, nobody, false), IsNil, Commentf("the admin's enforced modifiers"))
}
