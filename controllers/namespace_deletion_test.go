package controllers_test

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// nacObjectsOf lists what is left in oadp for namespace ns: every Velero
// Backup, Restore, BackupStorageLocation and DownloadRequest, Secret and
// approval request whose origin annotation names ns, or that carries the
// NACUUID label of one of nacuuids.
func nacObjectsOf(c *C, oadp, ns string, nacuuids ...string) []string {
	var left []string
	for _, l := range []client.ObjectList{&velerov1.BackupList{}, &velerov1.RestoreList{}, &velerov1.BackupStorageLocationList{},
		&velerov1.DownloadRequestList{}, &corev1.SecretList{}, &v1alpha1.NonAdminBackupStorageLocationRequestList{}} {
		c.Assert(testClient.List(context.Background(), l, client.InNamespace(oadp)), IsNil)
		items, err := meta.ExtractList(l)
		c.Assert(err, IsNil)
		for _, item := range items {
			o := item.(client.Object)
			mine := false
			for _, key := range []string{v1alpha1.NabOriginNamespaceAnnotation, v1alpha1.NarOriginNamespaceAnnotation,
				v1alpha1.NabslOriginNamespaceAnnotation, v1alpha1.NadrOriginNamespaceAnnotation} {
				mine = mine || o.GetAnnotations()[key] == ns
			}
			for _, label := range []string{v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NabslOriginNACUUIDLabel, v1alpha1.NadrOriginNACUUIDLabel} {
				for _, id := range nacuuids {
					mine = mine || (id != "" && o.GetLabels()[label] == id)
				}
			}
			if mine {
				left = append(left, fmt.Sprintf("%T %s", o, o.GetName()))
			}
		}
	}
	return left
}

// TestTenantNamespaceDeletion: a tenant deletes its namespace while it holds
// a completed NonAdminBackup, one Velero is still running, a
// NonAdminRestore, a NonAdminDownloadRequest and an approved
// NonAdminBackupStorageLocation with its Secret. kube-controller-manager's
// namespace controller deletes them; nacflow's finalize actions remove
// their Velero objects, the location's copied Secret and approval request
// from the OADP namespace; the namespace is gone within a minute, nothing is
// left of it, and other tenants and the admin are untouched.
func (s *ControllerSuite) TestTenantNamespaceDeletion(c *C) {
	ctx := context.Background()
	ns := tenantWithCreds(c)
	bystander := createNamespace(c, "bystander")
	other, otherVelero := startedBackup(c, s.oadp, bystander, "keep-me")
	completeBackup(c, s.oadp, otherVelero, velerov1.BackupPhaseCompleted)
	planComplete(c, other)
	admin := adminBSL(c, s.oadp, "admin-untouched", "admin-untouched-bucket", "")
	defer func() { c.Check(testClient.Delete(ctx, admin), IsNil) }()

	done, doneVelero := startedBackup(c, s.oadp, ns, "done")
	completeBackup(c, s.oadp, doneVelero, velerov1.BackupPhaseCompleted)
	planComplete(c, done)
	_, runningVelero := startedBackup(c, s.oadp, ns, "running")
	nar := newNAR(ns, "restore", velerov1.RestoreSpec{BackupName: "done"})
	c.Assert(testClient.Create(ctx, nar), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		vr := getNAR(c, nar).Status.VeleroRestore
		return vr != nil && vr.Name != "", "no Velero Restore yet"
	})
	nadr := newNADR(ns, "log", velerov1.DownloadTargetKindBackupLog, "done")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	planComplete(c, nadr)
	loc := nabslOn(ns, "own", "deletion-bucket", "")
	c.Assert(testClient.Create(ctx, loc), IsNil)
	s.approveAndAvailable(c, loc)
	nacuuids := []string{}
	for _, obj := range []client.Object{done, nar, nadr, loc} {
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(obj), obj), IsNil)
		nacuuids = append(nacuuids, string(obj.GetUID()))
	}
	before := nacObjectsOf(c, s.oadp, ns)
	c.Assert(len(before) >= 6, Equals, true, Commentf("2 Backups, a Restore, a DownloadRequest, a BSL, a Secret, a request: %v", before))

	c.Assert(testClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}), IsNil)
	start := time.Now()
	eventually(c, time.Minute, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if !apierrors.IsNotFound(err) {
			left := &v1alpha1.NonAdminBackupList{}
			_ = testClient.List(ctx, left, client.InNamespace(ns))
			return false, fmt.Sprintf("namespace %s still there (%v), %d NABs left", ns, err, len(left.Items))
		}
		return true, ""
	})
	c.Logf("namespace %s deleted in %s", ns, time.Since(start).Round(time.Millisecond))
	eventually(c, 10*time.Second, func() (bool, string) {
		left := nacObjectsOf(c, s.oadp, ns)
		return len(left) == 0, fmt.Sprintf("left in the OADP namespace: %v", left)
	})
	for _, name := range []string{doneVelero, runningVelero} {
		c.Check(apierrors.IsNotFound(testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: name}, &velerov1.Backup{})), Equals, true, Commentf(name))
	}

	// The other tenant's backup and the admin's location are untouched.
	c.Check(testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: otherVelero}, &velerov1.Backup{}), IsNil)
	c.Check(getNAB(c, other).Status.Plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(testClient.Get(ctx, client.ObjectKeyFromObject(admin), &velerov1.BackupStorageLocation{}), IsNil)
}
