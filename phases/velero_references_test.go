package phases_test

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/engine/enginetest"
	"github.com/nacflow/nacflow/phases"
)

// ReferencesSuite checks VeleroReferences as the engine's guard applies
// them: a phase function that creates or patches whatever a test asks,
// through the clients of a registry guarded with the rules.
type ReferencesSuite struct {
	cl client.Client
}

var _ = Suite(&ReferencesSuite{})

const (
	oadp   = "oadp"
	tenant = "tenant"
	other  = "other-tenant"
	uuid   = "u-1"
	theirs = "u-2"
)

func labelled(label, id string) map[string]string { return map[string]string{label: id} }

func (s *ReferencesSuite) SetUpTest(c *C) {
	sc := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
	c.Assert(velerov1.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	nabsl, nab := v1alpha1.NabslOriginNACUUIDLabel, v1alpha1.NabOriginNACUUIDLabel
	secret := func(name string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: name, Labels: labels}}
	}
	s.cl = fake.NewClientBuilder().WithScheme(sc).WithObjects(
		secret("cloud-credentials", nil),
		secret("own-copy", labelled(nabsl, uuid)),
		secret("other-copy", labelled(nabsl, theirs)),
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "mine", Labels: labelled(nab, uuid),
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: tenant}}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "theirs", Labels: labelled(nab, theirs),
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: other}}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "theirs-bsl", Labels: labelled(nabsl, theirs),
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: other}}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "own-bsl", Labels: labelled(nabsl, uuid),
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: tenant}},
			Spec: velerov1.BackupStorageLocationSpec{Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "own-copy"}}}},
		// The tenant's restore-test sandbox, labelled for operation u-1.
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.RestoreTestSandbox(tenant), Labels: labelled(v1alpha1.RestoreTestLabel, uuid)}},
		&velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "my-restore", Labels: labelled(v1alpha1.NarOriginNACUUIDLabel, uuid),
			Annotations: map[string]string{v1alpha1.NarOriginNamespaceAnnotation: tenant}}},
		&velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "their-restore", Labels: labelled(v1alpha1.NarOriginNACUUIDLabel, theirs),
			Annotations: map[string]string{v1alpha1.NarOriginNamespaceAnnotation: other}}},
	).WithStatusSubresource(&velerov1.Backup{}).Build()
}

// run has a phase of an operation on obj (uuid u-1) do write, with clients
// guarded with VeleroReferences, and returns its error.
func (s *ReferencesSuite) run(obj engine.Object, write func(ctx context.Context, op *engine.Operation) error) error {
	return enginetest.RunGuarded(context.Background(), s.cl, phases.VeleroReferences{}, engine.Operation{Object: obj, OADPNamespace: oadp, UUID: uuid},
		&enginetest.Probe{Do: write})
}

// tenants returns a new NAC object of kind (a name LookupKind knows) in the
// tenant's namespace.
func tenants(kind, name string) engine.Object {
	k, _ := v1alpha1.LookupKind(kind)
	obj := k.New()
	obj.SetNamespace(tenant)
	obj.SetName(name)
	return obj
}

// TestReferences: an object a phase creates or changes references only the
// operation's own objects.
func (s *ReferencesSuite) TestReferences(c *C) {
	ctx := context.Background()
	nabsl := v1alpha1.NabslOriginNACUUIDLabel
	bsl := func(secretName string) *velerov1.BackupStorageLocation {
		b := &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-bsl", Labels: labelled(nabsl, uuid)}}
		if secretName != "" {
			b.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: "cloud"}
		}
		return b
	}
	restore := func(backup string, edit func(*velerov1.Restore)) *velerov1.Restore {
		r := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-restore", Labels: labelled(v1alpha1.NarOriginNACUUIDLabel, uuid)},
			Spec: velerov1.RestoreSpec{BackupName: backup, IncludedNamespaces: []string{tenant}}}
		if edit != nil {
			edit(r)
		}
		return r
	}
	// A restore test's Restore: into the sandbox of ns (the tenant's
	// exists, labelled for the operation; another's does not).
	testRestore := func(ns, label string) *velerov1.Restore {
		return restore("mine", func(r *velerov1.Restore) {
			r.Labels[label] = uuid
			r.Spec.NamespaceMapping = map[string]string{tenant: v1alpha1.RestoreTestSandbox(ns)}
		})
	}
	backup := func(edit func(*velerov1.Backup)) *velerov1.Backup {
		b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-backup", Labels: labelled(v1alpha1.NabOriginNACUUIDLabel, uuid)},
			Spec: velerov1.BackupSpec{IncludedNamespaces: []string{tenant}}}
		if edit != nil {
			edit(b)
		}
		return b
	}
	dbr := func(backup string) *velerov1.DeleteBackupRequest {
		return &velerov1.DeleteBackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-dbr", Labels: labelled(v1alpha1.NabOriginNACUUIDLabel, uuid)},
			Spec: velerov1.DeleteBackupRequestSpec{BackupName: backup}}
	}
	download := func(label string, kind velerov1.DownloadTargetKind, target string) *velerov1.DownloadRequest {
		return &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-dr", Labels: labelled(label, uuid)},
			Spec: velerov1.DownloadRequestSpec{Target: velerov1.DownloadTarget{Kind: kind, Name: target}}}
	}
	nadr := v1alpha1.NadrOriginNACUUIDLabel
	nabslOp, nabOp, nadrOp, narOp := tenants("nabsl", "loc"), tenants("nab", "nab"), tenants("nadr", "nadr"), tenants("nar", "nar")
	const refs = `safety rule "references only this operation's objects": phase hostile \(Probe\) may not `
	for _, tc := range []struct {
		about string
		op    engine.Object
		obj   client.Object
		msg   string
	}{
		{"BSL on its own Secret copy", nabslOp, bsl("own-copy"), ""},
		{"BSL on the admin's credentials", nabslOp, bsl("cloud-credentials"),
			refs + `create BackupStorageLocation oadp/new-bsl: spec.credential names Secret oadp/cloud-credentials, which is not this operation's own copy: it does not carry the label openshift.io/oadp-nabsl-origin-nacuuid=u-1`},
		{"BSL on another operation's copy", nabslOp, bsl("other-copy"), refs + `create BackupStorageLocation oadp/new-bsl: spec.credential names Secret oadp/other-copy, which is not this operation's own copy: .*`},
		{"BSL on a missing Secret", nabslOp, bsl("nope"), refs + `create BackupStorageLocation oadp/new-bsl: spec.credential names Secret oadp/nope, which does not exist: .*`},
		{"BSL without a credential (Velero's own)", nabslOp, bsl(""), refs + `create BackupStorageLocation oadp/new-bsl: spec.credential must name this operation's own Secret copy.*`},
		{"Restore of the tenant's backup", narOp, restore("mine", nil), ""},
		{"Restore of another tenant's backup", narOp, restore("theirs", nil),
			refs + `create Restore oadp/new-restore: spec.backupName names Velero Backup oadp/theirs, which was not made for namespace tenant .*`},
		{"Restore of a schedule", narOp, restore("mine", func(r *velerov1.Restore) { r.Spec.ScheduleName = "admin-daily" }), refs + `create Restore .*: spec.scheduleName "admin-daily": .*`},
		{"Restore into another namespace", narOp, restore("mine", func(r *velerov1.Restore) { r.Spec.NamespaceMapping = map[string]string{tenant: other} }),
			refs + `create Restore .*: spec.namespaceMapping maps tenant to other-tenant: .*`},
		{"restore test into the NAB's own sandbox", nabOp, testRestore(tenant, v1alpha1.NabOriginNACUUIDLabel), ""},
		{"restore test into another tenant's sandbox", nabOp, testRestore(other, v1alpha1.NabOriginNACUUIDLabel),
			refs + `create Restore .*: spec.namespaceMapping maps tenant to other-tenant-rt-[0-9a-f]{8}: only namespace tenant is the tenant's`},
		{"a NonAdminRestore mapping into the sandbox", narOp, testRestore(tenant, v1alpha1.NarOriginNACUUIDLabel),
			refs + `create Restore .*: spec.namespaceMapping maps tenant to tenant-rt-[0-9a-f]{8}: only namespace tenant is the tenant's`},
		{"Restore of other namespaces", narOp, restore("mine", func(r *velerov1.Restore) { r.Spec.IncludedNamespaces = []string{"*"} }),
			refs + `create Restore .*: spec.includedNamespaces is \[\*\]: it must be exactly \[tenant\], the tenant's namespace`},
		{"Backup of the tenant's namespace", nabOp, backup(nil), ""},
		{"Backup on the admin's location", nabOp, backup(func(b *velerov1.Backup) { b.Spec.StorageLocation = "default" }), ""},
		{"Backup on another tenant's location", nabOp, backup(func(b *velerov1.Backup) { b.Spec.StorageLocation = "theirs-bsl" }),
			refs + `create Backup oadp/new-backup: spec.storageLocation names Velero BackupStorageLocation oadp/theirs-bsl of namespace "other-tenant", not of namespace tenant`},
		{"Backup of another namespace", nabOp, backup(func(b *velerov1.Backup) { b.Spec.IncludedNamespaces = []string{tenant, other} }),
			refs + `create Backup .*: spec.includedNamespaces is \[tenant other-tenant\]: .*`},
		{"DeleteBackupRequest of the tenant's backup", nabOp, dbr("mine"), ""},
		{"DeleteBackupRequest of another tenant's backup", nabOp, dbr("theirs"), refs + `create DeleteBackupRequest oadp/new-dbr: spec.backupName names Velero Backup oadp/theirs, which was not made for namespace tenant .*`},
		{"DownloadRequest of the tenant's backup log", nadrOp, download(nadr, velerov1.DownloadTargetKindBackupLog, "mine"), ""},
		{"DownloadRequest of the tenant's restore log", nadrOp, download(nadr, velerov1.DownloadTargetKindRestoreLog, "my-restore"), ""},
		{"DownloadRequest of a backup's resource list, for its verification", nabOp, download(v1alpha1.NabOriginNACUUIDLabel, velerov1.DownloadTargetKindBackupResourceList, "mine"), ""},
		{"DownloadRequest of another tenant's backup", nadrOp, download(nadr, velerov1.DownloadTargetKindBackupContents, "theirs"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.name names Velero Backup oadp/theirs, which was not made for namespace tenant .*`},
		{"DownloadRequest of another tenant's restore", nadrOp, download(nadr, velerov1.DownloadTargetKindRestoreResults, "their-restore"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.name names Velero Restore oadp/their-restore, which was not made for namespace tenant .*`},
		{"DownloadRequest of a Restore kind naming a backup", nadrOp, download(nadr, velerov1.DownloadTargetKindRestoreLog, "mine"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.name names Velero Restore oadp/mine, which does not exist`},
		{"DownloadRequest of a kind Velero does not serve", nadrOp, download(nadr, "BackupSecrets", "mine"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.kind "BackupSecrets" is not a kind of file of a Velero Backup or Restore`},
	} {
		s.SetUpTest(c)
		err := s.run(tc.op, func(ctx context.Context, op *engine.Operation) error { return op.Client.Create(ctx, tc.obj) })
		if tc.msg == "" {
			c.Check(err, IsNil, Commentf(tc.about))
			continue
		}
		c.Check(enginetest.Refusal(err, tc.msg), IsNil, Commentf(tc.about))
	}

	// A patch is checked like a create: no repointing an existing BSL.
	s.SetUpTest(c)
	err := s.run(nabslOp, func(ctx context.Context, op *engine.Operation) error {
		got := &velerov1.BackupStorageLocation{}
		if err := op.Client.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-bsl"}, got); err != nil {
			return err
		}
		before := got.DeepCopy()
		got.Spec.Credential.Name = "cloud-credentials"
		return op.Client.Patch(ctx, got, client.MergeFrom(before))
	})
	c.Check(enginetest.Refusal(err, refs+`patch BackupStorageLocation oadp/own-bsl: spec.credential names Secret oadp/cloud-credentials, .*`), IsNil, Commentf("repoint"))
	got := &velerov1.BackupStorageLocation{}
	c.Assert(s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-bsl"}, got), IsNil)
	c.Check(got.Spec.Credential.Name, Equals, "own-copy")
}
