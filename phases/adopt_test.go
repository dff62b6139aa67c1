package phases_test

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// AdoptSuite: an operation whose NACUUID came from status — OADP NAC began
// it, naming its objects after the NACUUID — adopts the objects already made
// for it instead of making them again.
type AdoptSuite struct{}

var _ = Suite(&AdoptSuite{})

// oadpMade returns obj in namespace oadp named and labelled nacuuid under
// label, with origin annotations naming ns/name (OADP NAC's metadata).
func oadpMade(obj client.Object, label, nsAnn, nameAnn, nacuuid, ns, name string) client.Object {
	obj.SetNamespace("oadp")
	obj.SetName(nacuuid)
	obj.SetLabels(map[string]string{label: nacuuid, v1alpha1.OADPLabel: v1alpha1.OADPLabelValue})
	obj.SetAnnotations(map[string]string{nsAnn: ns, nameAnn: name})
	return obj
}

func (s *AdoptSuite) TestAdoptsWhatOADPNACMade(c *C) {
	ctx := context.Background()
	sc, _ := scheduleFixture(c, "@daily")
	const uuid = "team-nightly-96dfa8b7-3f6f-4c8d-a168-8527b00fbed8"
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(
		oadpMade(&velerov1.Backup{}, v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NabOriginNamespaceAnnotation, v1alpha1.NabOriginNameAnnotation, uuid, "team", "nightly"),
		oadpMade(&velerov1.Restore{}, v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NarOriginNamespaceAnnotation, v1alpha1.NarOriginNameAnnotation, "team-back-1", "team", "back"),
		oadpMade(&corev1.Secret{}, v1alpha1.NabslOriginNACUUIDLabel, v1alpha1.NabslOriginNamespaceAnnotation, v1alpha1.NabslOriginNameAnnotation, "team-mine-2", "team", "mine"),
	).Build()
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, phases.Options{})
	c.Assert(err, IsNil)
	backups := func() []string {
		l := &velerov1.BackupList{}
		c.Assert(cl.List(ctx, l), IsNil)
		var out []string
		for _, b := range l.Items {
			out = append(out, b.Name)
		}
		return out
	}

	create, _ := reg.Get("CreateVeleroBackup")
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nightly", UID: "u1"},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
	res, err := create.Run(ctx, &engine.Operation{Object: nab, OADPNamespace: "oadp", UUID: uuid, Phase: "createBackup"}, create.NewArgs())
	c.Assert(err, IsNil)
	c.Check(res.Message, Equals, "Adopted Velero Backup oadp/"+uuid)
	c.Check(nab.Status.VeleroBackup.Name, Equals, uuid, Commentf("OADP NAC's name stays"))
	c.Check(nab.Status.VeleroBackup.NACUUID, Equals, uuid)
	c.Check(backups(), DeepEquals, []string{uuid}, Commentf("no second Backup"))

	// A NAB of another name in the namespace with a status naming the same
	// NACUUID adopts nothing: the Backup's annotations name nightly.
	weekly := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "weekly", UID: "u2"},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
	res, err = create.Run(ctx, &engine.Operation{Object: weekly, OADPNamespace: "oadp", UUID: uuid, Phase: "createBackup"}, create.NewArgs())
	c.Assert(err, IsNil)
	c.Check(res.Message, Matches, "Created Velero Backup oadp/team-weekly-.*")

	// The same for a restore (Restore) and a location's credential copy
	// (Secret, read from the API server).
	restore, _ := reg.Get("CreateVeleroRestore")
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "back", UID: "u3"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nightly"}}}
	nar.Status.VeleroRestore = &v1alpha1.VeleroRestore{NACUUID: "team-back-1", Spec: nar.Spec.RestoreSpec.DeepCopy()}
	args := restore.NewArgs().(*phases.CreateVeleroRestoreArgs)
	args.BackupName = uuid
	res, err = restore.Run(ctx, &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "team-back-1", Phase: "createRestore"}, args)
	c.Assert(err, IsNil)
	c.Check(res.Message, Matches, "Adopted Velero Restore oadp/team-back-1.*")
	restores := &velerov1.RestoreList{}
	c.Assert(cl.List(ctx, restores), IsNil)
	c.Check(restores.Items, HasLen, 1, Commentf("no second Restore"))

	copySecret, _ := reg.Get("CopySecret")
	c.Assert(cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds"}, Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=a\naws_secret_access_key=b\n")}}), IsNil)
	nabsl := &v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mine", UID: "u4"},
		Spec: v1alpha1.NonAdminBackupStorageLocationSpec{BackupStorageLocationSpec: &velerov1.BackupStorageLocationSpec{Provider: "aws",
			Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "cloud"}}}}
	_, err = copySecret.Run(ctx, &engine.Operation{Object: nabsl, OADPNamespace: "oadp", UUID: "team-mine-2", Phase: "copySecret"}, copySecret.NewArgs())
	c.Assert(err, IsNil)
	secrets := &corev1.SecretList{}
	c.Assert(cl.List(ctx, secrets, client.InNamespace("oadp")), IsNil)
	c.Assert(secrets.Items, HasLen, 1, Commentf("no second copy"))
	c.Check(secrets.Items[0].Name, Equals, "team-mine-2")
}

// Under OADP's CRDs no accepted restore spec survives a reconcile: a
// restoreSpec edited while the restore waited for its backup is checked
// again before anything is created.
func (s *AdoptSuite) TestRestoreSpecEditedDuringTheWait(c *C) {
	ctx := context.Background()
	sc, _ := scheduleFixture(c, "@daily")
	backup := oadpMade(&velerov1.Backup{}, v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NabOriginNamespaceAnnotation, v1alpha1.NabOriginNameAnnotation, "team-nightly-1", "team", "nightly")
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(backup).Build()
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, phases.Options{})
	c.Assert(err, IsNil)
	restore, _ := reg.Get("CreateVeleroRestore")
	for _, tc := range []struct {
		about string
		edit  func(*velerov1.RestoreSpec)
		want  string
	}{
		{"into another tenant's namespace", func(r *velerov1.RestoreSpec) { r.NamespaceMapping = map[string]string{"team": "victim"} },
			`spec.restoreSpec.namespaceMapping: team to victim: a restore into another namespace is held to the rights there of whoever asked, and no one is known \(condition RequesterVerified: WebhookNotInstalled\)`},
		{"cluster-scoped resources", func(r *velerov1.RestoreSpec) { t := true; r.IncludeClusterResources = &t },
			"spec.restoreSpec.includeClusterResources can not be true: .*"},
		{"an OADP-namespace ConfigMap", func(r *velerov1.RestoreSpec) {
			r.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "admins"}
		}, `spec.restoreSpec.resourceModifier: a tenant's resource modifiers need a known requester, .*`},
	} {
		nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "back", UID: "u5"},
			Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nightly"}}}
		tc.edit(nar.Spec.RestoreSpec)
		args := restore.NewArgs().(*phases.CreateVeleroRestoreArgs)
		args.BackupName = "team-nightly-1"
		_, err := restore.Run(ctx, &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "u5-uuid", Phase: "createRestore"}, args)
		c.Assert(err, NotNil, Commentf(tc.about))
		c.Check(engine.IsTerminal(err), Equals, true, Commentf(tc.about))
		c.Check(err, ErrorMatches, tc.want, Commentf(tc.about))
		restores := &velerov1.RestoreList{}
		c.Assert(cl.List(ctx, restores), IsNil)
		c.Check(restores.Items, HasLen, 0, Commentf("%s: nothing created", tc.about))
	}
}
