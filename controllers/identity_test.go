package controllers

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// IdentitySuite runs from the package's single gocheck entry point, Test in
// suite_test.go: operationIdentity on a fake client.
type IdentitySuite struct{}

var _ = Suite(&IdentitySuite{})

const (
	idOADP   = "oadp"
	idTenant = "tenant-a"
	idVictim = "tenant-b"
)

// veleroBackup returns a Velero Backup of the OADP namespace labelled
// nacuuid and made for namespace/nab.
func veleroBackup(name, nacuuid, namespace, nab string) *velerov1.Backup {
	return &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: idOADP, Name: name,
		Labels:      map[string]string{v1alpha1.NabOriginNACUUIDLabel: nacuuid},
		Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: namespace, v1alpha1.NabOriginNameAnnotation: nab}}}
}

func (s *IdentitySuite) TestOperationIdentity(c *C) {
	ctx := context.Background()
	sc, err := NewScheme()
	c.Assert(err, IsNil)
	uid := types.UID("11111111-2222-3333-4444-555555555555")
	derived := NACUUID(uid)
	own := v1alpha1.NACObjectName(idTenant, "nightly", derived)
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(
		veleroBackup(own, derived, idTenant, "nightly"),
		veleroBackup("victims", "victim-uuid", idVictim, "theirs"),
		veleroBackup("adopted", "old-uuid", idTenant, "nightly"),
		// A Backup synced from the tenant's own bucket carrying another
		// tenant's NACUUID: made for this NAB by its annotations.
		veleroBackup("planted", "victim-uuid", idTenant, "nightly"),
		veleroBackup("sibling", "sibling-uuid", idTenant, "weekly"),
	).Build()
	nab := func(vb *v1alpha1.VeleroBackup) *v1alpha1.NonAdminBackup {
		n := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: idTenant, Name: "nightly", UID: uid}}
		n.Status.VeleroBackup = vb
		return n
	}
	for _, tc := range []struct {
		about     string
		in        *v1alpha1.VeleroBackup
		uuid      string
		want      v1alpha1.VeleroBackup
		corrected []string
	}{
		{"none yet", &v1alpha1.VeleroBackup{}, derived, v1alpha1.VeleroBackup{}, nil},
		{"honest", &v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: idOADP}, derived,
			v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: idOADP}, nil},
		{"another tenant's backup", &v1alpha1.VeleroBackup{NACUUID: "victim-uuid", Name: "victims", Namespace: idOADP}, derived,
			v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: idOADP},
			[]string{`status.veleroBackup: name "victims" (Velero Backup oadp/victims is not this NonAdminBackup's) to "` + own + `", nacuuid "victim-uuid" to "` + derived + `"`}},
		{"another tenant's NACUUID on its own backup", &v1alpha1.VeleroBackup{NACUUID: "victim-uuid", Name: own, Namespace: idOADP}, derived,
			v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: idOADP},
			[]string{`status.veleroBackup: nacuuid "victim-uuid" to "` + derived + `"`}},
		{"a sibling NAB's backup", &v1alpha1.VeleroBackup{NACUUID: "sibling-uuid", Name: "sibling", Namespace: idOADP}, derived,
			v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: idOADP},
			[]string{`status.veleroBackup: name "sibling" (Velero Backup oadp/sibling is not this NonAdminBackup's) to "` + own + `", nacuuid "sibling-uuid" to "` + derived + `"`}},
		{"another namespace", &v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: "elsewhere"}, derived,
			v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: idOADP},
			[]string{`status.veleroBackup: namespace "elsewhere" to "oadp"`}},
		{"adopted, confirmed by the Backup", &v1alpha1.VeleroBackup{NACUUID: "old-uuid", Name: "adopted", Namespace: idOADP}, "old-uuid",
			v1alpha1.VeleroBackup{NACUUID: "old-uuid", Name: "adopted", Namespace: idOADP}, nil},
		{"adopted, the Backup gone since: kept, not followed", &v1alpha1.VeleroBackup{NACUUID: "old-uuid", Name: "expired", Namespace: idOADP}, derived,
			v1alpha1.VeleroBackup{NACUUID: "old-uuid", Name: "expired", Namespace: idOADP}, nil},
		{"a NACUUID naming nothing", &v1alpha1.VeleroBackup{NACUUID: "victim-uuid"}, derived,
			v1alpha1.VeleroBackup{NACUUID: derived}, []string{`status.veleroBackup: nacuuid "victim-uuid" to "` + derived + `"`}},
		// Adopted from the tenant's own bucket: the operation's NACUUID is the
		// planted one, but the engine's guard still touches only objects made
		// for this namespace.
		{"planted in the tenant's bucket", &v1alpha1.VeleroBackup{NACUUID: "victim-uuid", Name: "planted", Namespace: idOADP}, "victim-uuid",
			v1alpha1.VeleroBackup{NACUUID: "victim-uuid", Name: "planted", Namespace: idOADP}, nil},
	} {
		n := nab(tc.in)
		uuid, corrected, err := operationIdentity(ctx, cl, idOADP, "NonAdminBackup", n, backupRefs(n), true)
		c.Assert(err, IsNil, Commentf(tc.about))
		c.Check(uuid, Equals, tc.uuid, Commentf(tc.about))
		c.Check(*n.Status.VeleroBackup, DeepEquals, tc.want, Commentf(tc.about))
		c.Check(corrected, DeepEquals, tc.corrected, Commentf(tc.about))
	}

	// Kinds that adopt nothing: the UID alone.
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: idTenant, Name: "nightly", UID: uid}}
	nar.Status.VeleroRestore = &v1alpha1.VeleroRestore{NACUUID: "old-uuid", Name: "gone"}
	uuid, corrected, err := operationIdentity(ctx, cl, idOADP, "NonAdminRestore", nar, restoreRefs(nar), false)
	c.Assert(err, IsNil)
	c.Check(uuid, Equals, derived)
	c.Check(nar.Status.VeleroRestore.NACUUID, Equals, derived)
	c.Check(corrected, DeepEquals, []string{`status.veleroRestore: nacuuid "old-uuid" to "` + derived + `"`})
}
