package controllers

import (
	"context"
	"strings"
	"time"

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

// oadpUUID is a NACUUID as OADP NAC makes them: "<namespace>-<name>-<uuid>".
const oadpUUID = "tenant-a-nightly-96dfa8b7-3f6f-4c8d-a168-8527b00fbed8"

// nabCreated is when the test's NAC objects were created.
var nabCreated = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// madeAt sets b's creation time.
func madeAt(b *velerov1.Backup, t time.Time) *velerov1.Backup {
	b.CreationTimestamp = metav1.NewTime(t)
	return b
}

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
	sc, err := v1alpha1.NewScheme()
	c.Assert(err, IsNil)
	uid := types.UID("11111111-2222-3333-4444-555555555555")
	derived := v1alpha1.NACUUIDOf(uid)
	own := v1alpha1.NACObjectName(idTenant, "nightly", derived)
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(
		veleroBackup(own, derived, idTenant, "nightly"),
		veleroBackup("victims", "victim-uuid", idVictim, "theirs"),
		veleroBackup("adopted", "old-uuid", idTenant, "nightly"),
		// A Backup synced from the tenant's own bucket carrying another
		// tenant's NACUUID: made for this NAB by its annotations.
		veleroBackup("planted", "victim-uuid", idTenant, "nightly"),
		veleroBackup("sibling", "sibling-uuid", idTenant, "weekly"),
		// OADP NAC's: named after its NACUUID, "<namespace>-<name>-<uuid>",
		// made after the NAB.
		madeAt(veleroBackup(oadpUUID, oadpUUID, idTenant, "nightly"), nabCreated.Add(2*time.Second)),
		// Made for an earlier NAB of the same name, an hour before this one.
		madeAt(veleroBackup("tenant-a-nightly-old", "tenant-a-nightly-old", idTenant, "nightly"), nabCreated.Add(-time.Hour)),
	).Build()
	// nab is the NAB under test; the adopted and planted cases are backup
	// sync's, made after their Backup.
	nab := func(about string, vb *v1alpha1.VeleroBackup) *v1alpha1.NonAdminBackup {
		n := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: idTenant, Name: "nightly", UID: uid, CreationTimestamp: metav1.NewTime(nabCreated)}}
		if strings.HasPrefix(about, "adopted") || strings.HasPrefix(about, "planted") {
			n.Labels = map[string]string{v1alpha1.NabSyncedFromNACUUIDLabel: vb.NACUUID}
		}
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
		// OADP NAC began the operation: its NACUUID and name stay.
		{"OADP NAC's backup", &v1alpha1.VeleroBackup{NACUUID: oadpUUID, Name: oadpUUID, Namespace: idOADP}, oadpUUID,
			v1alpha1.VeleroBackup{NACUUID: oadpUUID, Name: oadpUUID, Namespace: idOADP}, nil},
		// Deleted and re-created with the same name: the earlier NAB's
		// backup is not this one's, whatever status says.
		{"a re-created name", &v1alpha1.VeleroBackup{NACUUID: "tenant-a-nightly-old", Name: "tenant-a-nightly-old", Namespace: idOADP}, derived,
			v1alpha1.VeleroBackup{NACUUID: derived, Name: own, Namespace: idOADP},
			[]string{`status.veleroBackup: name "tenant-a-nightly-old" (Velero Backup oadp/tenant-a-nightly-old is not this NonAdminBackup's) to "` + own + `", nacuuid "tenant-a-nightly-old" to "` + derived + `"`}},
	} {
		n := nab(tc.about, tc.in)
		uuid, corrected, err := correctRefs(operationIdentity(ctx, cl, idOADP, "NonAdminBackup", n, backupRefs(n), backupAdoption(n)))
		c.Assert(err, IsNil, Commentf(tc.about))
		c.Check(uuid, Equals, tc.uuid, Commentf(tc.about))
		c.Check(*n.Status.VeleroBackup, DeepEquals, tc.want, Commentf(tc.about))
		c.Check(corrected, DeepEquals, tc.corrected, Commentf(tc.about))
	}

	// A NonAdminRestore OADP NAC began adopts its Restore; a forged status
	// naming another tenant's, a sibling's or an earlier NAR's Restore is
	// corrected to the UID's NACUUID.
	restore := func(name, nacuuid, namespace, nar string, at time.Time) *velerov1.Restore {
		r := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: idOADP, Name: name, CreationTimestamp: metav1.NewTime(at),
			Labels:      map[string]string{v1alpha1.NarOriginNACUUIDLabel: nacuuid},
			Annotations: map[string]string{v1alpha1.NarOriginNamespaceAnnotation: namespace, v1alpha1.NarOriginNameAnnotation: nar}}}
		return r
	}
	rcl := fake.NewClientBuilder().WithScheme(sc).WithObjects(
		restore("tenant-a-back-oadp", "tenant-a-back-oadp", idTenant, "back", nabCreated.Add(time.Second)),
		restore("tenant-b-theirs-x", "tenant-b-theirs-x", idVictim, "theirs", nabCreated.Add(time.Second)),
		restore("tenant-a-other-y", "tenant-a-other-y", idTenant, "other", nabCreated.Add(time.Second)),
		restore("tenant-a-back-old", "tenant-a-back-old", idTenant, "back", nabCreated.Add(-time.Hour)),
	).Build()
	for _, tc := range []struct {
		about, nacuuid, want string
	}{
		{"OADP NAC's restore", "tenant-a-back-oadp", "tenant-a-back-oadp"},
		{"another tenant's restore", "tenant-b-theirs-x", derived},
		{"a sibling's restore", "tenant-a-other-y", derived},
		{"a re-created name", "tenant-a-back-old", derived},
		{"a NACUUID naming nothing", "tenant-a-back-gone", derived},
	} {
		nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: idTenant, Name: "back", UID: uid, CreationTimestamp: metav1.NewTime(nabCreated)}}
		nar.Status.VeleroRestore = &v1alpha1.VeleroRestore{NACUUID: tc.nacuuid, Name: tc.nacuuid}
		uuid, _, err := correctRefs(operationIdentity(ctx, rcl, idOADP, "NonAdminRestore", nar, restoreRefs(nar), adoptYounger))
		c.Assert(err, IsNil, Commentf(tc.about))
		c.Check(uuid, Equals, tc.want, Commentf(tc.about))
	}

	// A NonAdminDownloadRequest OADP NAC began: no link in status, its
	// DownloadRequest "nadr-<UID>" labelled with the UID. Adopted only when
	// it names this very request and was made after it; nothing is written
	// to status before the request's own phase links it.
	dr := func(uid types.UID, namespace, nadr string, at time.Time) *velerov1.DownloadRequest {
		return &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: idOADP, Name: "nadr-" + string(uid), CreationTimestamp: metav1.NewTime(at),
			Labels:      map[string]string{v1alpha1.NadrOriginNACUUIDLabel: string(uid)},
			Annotations: map[string]string{v1alpha1.NadrOriginNamespaceAnnotation: namespace, v1alpha1.NadrOriginNameAnnotation: nadr}}}
	}
	uids := map[string]types.UID{"oadp": "aaaaaaaa-0000-0000-0000-000000000001", "theirs": "aaaaaaaa-0000-0000-0000-000000000002",
		"sibling": "aaaaaaaa-0000-0000-0000-000000000003", "old": "aaaaaaaa-0000-0000-0000-000000000004", "none": "aaaaaaaa-0000-0000-0000-000000000005"}
	dcl := fake.NewClientBuilder().WithScheme(sc).WithObjects(
		dr(uids["oadp"], idTenant, "logs", nabCreated.Add(time.Second)),
		dr(uids["theirs"], idVictim, "logs", nabCreated.Add(time.Second)),
		dr(uids["sibling"], idTenant, "other", nabCreated.Add(time.Second)),
		dr(uids["old"], idTenant, "logs", nabCreated.Add(-time.Hour)),
	).Build()
	for _, tc := range []struct {
		about, uid string
		adopted    bool
	}{
		{"OADP NAC's download request", "oadp", true},
		{"a request of another tenant's of that UID", "theirs", false},
		{"a sibling's", "sibling", false},
		{"a re-created name", "old", false},
		{"none made", "none", false},
	} {
		nadr := &v1alpha1.NonAdminDownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: idTenant, Name: "logs", UID: uids[tc.uid], CreationTimestamp: metav1.NewTime(nabCreated)}}
		uuid, _, err := correctRefs(operationIdentity(ctx, dcl, idOADP, "NonAdminDownloadRequest", nadr, downloadRefs(nadr), adoptYounger))
		c.Assert(err, IsNil, Commentf(tc.about))
		want := v1alpha1.NACUUIDOf(uids[tc.uid])
		if tc.adopted {
			want = string(uids[tc.uid])
		}
		c.Check(uuid, Equals, want, Commentf(tc.about))
		c.Check(nadr.Status.VeleroDownloadRequest, DeepEquals, v1alpha1.VeleroDownloadRequest{}, Commentf(tc.about))
	}
}

// TestLocationIdentity: a NonAdminBackupStorageLocation's NACUUID is, as
// OADP NAC makes it, the name of its Velero objects, "<namespace>-<name>-
// <uuid>" — derived from its UID by nacflow. A location nacflow linked
// before under a bare UUID (objects named NACObjectName(ns, name, uuid)) and
// one OADP NAC began keep their NACUUID and objects; a forged status naming
// another tenant's location is corrected to the derived one.
func (s *IdentitySuite) TestLocationIdentity(c *C) {
	ctx := context.Background()
	sc, err := v1alpha1.NewScheme()
	c.Assert(err, IsNil)
	uid := types.UID("11111111-2222-3333-4444-666666666666")
	bare := v1alpha1.NACUUIDOf(uid)
	derived := v1alpha1.NACObjectName(idTenant, "mine", bare)
	bsl := func(name, nacuuid, namespace, nabsl string, at time.Time) *velerov1.BackupStorageLocation {
		return &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: idOADP, Name: name, CreationTimestamp: metav1.NewTime(at),
			Labels:      map[string]string{v1alpha1.NabslOriginNACUUIDLabel: nacuuid},
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: namespace, v1alpha1.NabslOriginNameAnnotation: nabsl}}}
	}
	const oadpLoc = "tenant-a-mine-0f6b2f4e-5d0c-4a43-8d0e-3f1f0b1c2d3e"
	const victims = "tenant-b-theirs-0f6b2f4e-5d0c-4a43-8d0e-3f1f0b1c2d3f"
	legacy := v1alpha1.NACObjectName(idTenant, "mine", bare)
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(
		bsl(oadpLoc, oadpLoc, idTenant, "mine", nabCreated.Add(time.Second)),
		bsl(victims, victims, idVictim, "theirs", nabCreated.Add(time.Second)),
	).Build()
	// nacflow's objects of a location linked before: the same name as the
	// derived NACUUID's, labelled with the bare UUID.
	lcl := fake.NewClientBuilder().WithScheme(sc).WithObjects(bsl(legacy, bare, idTenant, "mine", nabCreated.Add(time.Second))).Build()
	for _, tc := range []struct {
		about, in, uuid, name string
	}{
		{"none yet", "", derived, derived},
		{"honest", derived, derived, derived},
		{"linked by nacflow under a bare UUID", bare, bare, legacy},
		{"OADP NAC's", oadpLoc, oadpLoc, oadpLoc},
		{"another tenant's", victims, derived, derived},
	} {
		n := &v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: idTenant, Name: "mine", UID: uid, CreationTimestamp: metav1.NewTime(nabCreated)}}
		if tc.in != "" {
			n.Status.VeleroBackupStorageLocation = &v1alpha1.VeleroBackupStorageLocation{NACUUID: tc.in, Name: tc.in, Namespace: idOADP}
			if tc.in == bare {
				n.Status.VeleroBackupStorageLocation.Name = legacy
			}
		}
		reader := cl
		if tc.in == bare {
			reader = lcl
		}
		uuid, _, err := correctRefs(operationIdentity(ctx, reader, idOADP, "NonAdminBackupStorageLocation", n, bslRefs(n), adoptYounger))
		c.Assert(err, IsNil, Commentf(tc.about))
		c.Check(uuid, Equals, tc.uuid, Commentf(tc.about))
		c.Check(v1alpha1.OperationObjectName(n, uuid), Equals, tc.name, Commentf(tc.about))
		if tc.in != "" {
			c.Check(n.Status.VeleroBackupStorageLocation.NACUUID, Equals, tc.uuid, Commentf(tc.about))
		}
	}
	c.Check(derived, Matches, `tenant-a-mine-[0-9a-f-]{36}`)
}
