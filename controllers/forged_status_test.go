package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/orphangc"
	"github.com/nacflow/nacflow/internal/velero/backupsync"
	"github.com/nacflow/nacflow/phases"
)

// statusWriter binds user, in namespace ns, to a Role granting every verb on
// every resource of the oadp.openshift.io group — status subresources
// included — as admins grant in practice, and returns a client acting as
// user.
func statusWriter(c *C, ns, user string) client.Client {
	ctx := context.Background()
	c.Assert(testClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oadp-everything"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}}}}), IsNil)
	c.Assert(testClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "oadp-everything"}}), IsNil)
	cl := as(c, user)
	// RBAC is cached by the API server's authorizer: wait until it applies.
	eventually(c, 10*time.Second, func() (bool, string) {
		err := cl.List(ctx, &v1alpha1.NonAdminBackupList{}, client.InNamespace(ns))
		return err == nil, fmt.Sprintf("%v", err)
	})
	return cl
}

// forge writes obj's status as cl, after edit: the write must go through
// (the tenant is allowed to), so that what follows tests nacflow, not RBAC.
func forge[T client.Object](c *C, cl client.Client, obj T, edit func(T)) {
	before := obj.DeepCopyObject().(client.Object)
	edit(obj)
	c.Assert(cl.Status().Patch(context.Background(), obj, client.MergeFrom(before)), IsNil)
}

// completedBackupAs creates, as cl, the NAB name in ns and plays Velero
// completing its Velero Backup; it returns both once the plan completed.
func (s *ControllerSuite) completedBackupAs(c *C, cl client.Client, ns, name string) (*v1alpha1.NonAdminBackup, *velerov1.Backup) {
	nab := newNAB(ns, name, velerov1.BackupSpec{})
	c.Assert(cl.Create(context.Background(), nab), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", got.Status)
	})
	completeBackup(c, s.oadp, got.Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan.State == v1alpha1.PlanComplete, string(got.Status.Plan.State)
	})
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKey{Namespace: s.oadp, Name: got.Status.VeleroBackup.Name}, b), IsNil)
	return got, b
}

// restoreAs creates, as cl, the NAR name of NAB from in ns and returns it
// with its Velero Restore once that exists.
func (s *ControllerSuite) restoreAs(c *C, cl client.Client, ns, name, from string) (*v1alpha1.NonAdminRestore, *velerov1.Restore) {
	nar := newNAR(ns, name, velerov1.RestoreSpec{BackupName: from})
	c.Assert(cl.Create(context.Background(), nar), IsNil)
	var restores []velerov1.Restore
	eventually(c, 10*time.Second, func() (bool, string) {
		nar = getNAR(c, nar)
		restores = veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(nar.UID))
		return len(restores) == 1 && nar.Status.VeleroRestore != nil && nar.Status.VeleroRestore.Name != "", fmt.Sprintf("%+v", nar.Status.Plan)
	})
	return nar, &restores[0]
}

// locationAs creates, as cl, the NABSL name in ns (its credential Secret as
// the admin), approves it and returns it with its request, Velero BSL and
// Secret copy once those exist.
func (s *ControllerSuite) locationAs(c *C, cl client.Client, ns, name string) (*v1alpha1.NonAdminBackupStorageLocation, *v1alpha1.NonAdminBackupStorageLocationRequest, *velerov1.BackupStorageLocation, *corev1.Secret) {
	ctx := context.Background()
	err := testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=one\naws_secret_access_key=two\n")}})
	if !apierrors.IsAlreadyExists(err) {
		c.Assert(err, IsNil)
	}
	nabsl := newNABSL(ns, name, "creds")
	c.Assert(cl.Create(ctx, nabsl), IsNil)
	var req *v1alpha1.NonAdminBackupStorageLocationRequest
	var bsl *velerov1.BackupStorageLocation
	var sec *corev1.Secret
	eventually(c, 10*time.Second, func() (bool, string) {
		nabsl = getNABSL(c, nabsl)
		req, _, _ = bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(nabsl))
		return req != nil, fmt.Sprintf("%+v", nabsl.Status.Plan)
	})
	decide(c, req, v1alpha1.ApprovalApprove)
	eventually(c, 10*time.Second, func() (bool, string) {
		nabsl = getNABSL(c, nabsl)
		req, bsl, sec = bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(nabsl))
		v := nabsl.Status.VeleroBackupStorageLocation
		return bsl != nil && sec != nil && v != nil && v.Name == bsl.Name, fmt.Sprintf("%+v", nabsl.Status.Plan)
	})
	return nabsl, req, bsl, sec
}

// exists checks that every obj is still in the API server, unchanged in
// identity (same UID).
func exists(c *C, about string, objs ...client.Object) {
	for _, obj := range objs {
		got := obj.DeepCopyObject().(client.Object)
		err := testClient.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
		c.Check(err, IsNil, Commentf("%s: %T %s", about, obj, obj.GetName()))
		if err == nil {
			c.Check(got.GetUID(), Equals, obj.GetUID(), Commentf("%s: %T %s", about, obj, obj.GetName()))
		}
	}
}

// gone waits until obj is gone from the API server.
func gone(c *C, about string, obj client.Object) {
	eventually(c, 15*time.Second, func() (bool, string) {
		err := testClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), fmt.Sprintf("%s: %T %s still there (%v)", about, obj, obj.GetName(), err)
	})
}

// TestForgedStatusIsNeverIdentity: a tenant granted "*" on the
// oadp.openshift.io group, status subresources included, points the status
// of its NonAdminBackups, NonAdminRestores and NonAdminBackupStorageLocations
// at another tenant's Velero objects, then deletes them (finalize), asks for
// deleteBackup and forceDeleteBackup, restores from a NAB whose status names
// the other tenant's backup, and claims that backup with a sync label and a
// matching forged status; garbage collection and backup sync run. Nothing of
// the other tenant is touched; the forger's own objects are cleaned up as
// usual, and its status is corrected (event StatusCorrected).
func (s *ControllerSuite) TestForgedStatusIsNeverIdentity(c *C) {
	ctx := context.Background()
	defaultBSL(c, s.oadp)

	// Tenant B, the victim: a backup, a restore from it, a deletion request
	// Velero has not processed yet, a location.
	victimNAB, victimBackup := s.createdBackup(c, "victim")
	vns := victimNAB.Namespace
	victimNAR, victimRestore := s.restoreAs(c, testClient, vns, "victim-restore", "victim")
	victimDBR := &velerov1.DeleteBackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: victimBackup.Name,
		Labels:      map[string]string{v1alpha1.NabOriginNACUUIDLabel: victimNAB.Status.VeleroBackup.NACUUID, v1alpha1.OADPLabel: v1alpha1.OADPLabelValue},
		Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: vns, v1alpha1.NabOriginNameAnnotation: "victim"}},
		Spec: velerov1.DeleteBackupRequestSpec{BackupName: victimBackup.Name}}
	c.Assert(testClient.Create(ctx, victimDBR), IsNil)
	victimLoc, victimReq, victimBSL, victimSecret := s.locationAs(c, testClient, vns, "victim-bucket")
	victimUUID := victimNAB.Status.VeleroBackup.NACUUID
	victims := func(about string) {
		exists(c, about, victimNAB, victimBackup, victimDBR, victimNAR, victimRestore, victimLoc, victimReq, victimBSL, victimSecret)
	}

	// Tenant A, the forger.
	ns := createNamespace(c, "forger")
	mallory := statusWriter(c, ns, "mallory")
	pointAtVictim := func(n *v1alpha1.NonAdminBackup) {
		n.Status.VeleroBackup.NACUUID, n.Status.VeleroBackup.Name, n.Status.VeleroBackup.Namespace = victimUUID, victimBackup.Name, s.oadp
		n.Status.VeleroDeleteBackupRequest = &v1alpha1.VeleroDeleteBackupRequest{NACUUID: victimUUID, Name: victimDBR.Name, Namespace: s.oadp}
	}

	// finalize (kubectl delete) of a NAB whose status names B's backup and
	// deletion request: only A's own Velero Backup goes.
	nab, own := s.completedBackupAs(c, mallory, ns, "finalized")
	forge(c, mallory, nab, pointAtVictim)
	c.Assert(mallory.Delete(ctx, nab), IsNil)
	gone(c, "finalize", nab)
	victims("finalize")
	gone(c, "finalize: A's own Velero Backup", own)

	// deleteBackup: true: the DeleteBackupRequest is for A's own backup, and
	// the status is corrected before anything runs.
	nab, own = s.completedBackupAs(c, mallory, ns, "deleted")
	forge(c, mallory, nab, pointAtVictim)
	before := nab.DeepCopy()
	nab.Spec.DeleteBackup = true
	c.Assert(mallory.Patch(ctx, nab, client.MergeFrom(before)), IsNil)
	dbr := &velerov1.DeleteBackupRequest{}
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: own.Name}, dbr)
		return err == nil, fmt.Sprintf("%v", err)
	})
	c.Check(dbr.Spec.BackupName, Equals, own.Name)
	derived := v1alpha1.NACUUIDOf(nab.UID)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		vb, dr := got.Status.VeleroBackup, got.Status.VeleroDeleteBackupRequest
		return vb.NACUUID == derived && vb.Name == own.Name && dr != nil && dr.NACUUID == derived && dr.Name == own.Name,
			fmt.Sprintf("%+v %+v", vb, dr)
	})
	eventually(c, 5*time.Second, func() (bool, string) {
		msgs := eventMessages(c, ns, "deleted")
		return slices.ContainsFunc(msgs, func(m string) bool {
			return strings.Contains(m, `status.veleroBackup: name "`+victimBackup.Name+`" (Velero Backup `+s.oadp+"/"+victimBackup.Name+" is not this NonAdminBackup's) to \""+own.Name+`", nacuuid "`+victimUUID+`" to "`+derived+`"`)
		}), joined(msgs)
	})
	c.Check(slices.Contains(eventReasons(c, ns, "deleted"), "Warning StatusCorrected"), Equals, true)
	veleroDeletes(c, dbr, own, nab)
	victims("deleteBackup")

	// forceDeleteBackup: Velero fails the request; A's Backup and request
	// go anyway, B's stay.
	nab, own = s.completedBackupAs(c, mallory, ns, "forced")
	forge(c, mallory, nab, pointAtVictim)
	before = nab.DeepCopy()
	nab.Spec.ForceDeleteBackup = true
	c.Assert(mallory.Patch(ctx, nab, client.MergeFrom(before)), IsNil)
	veleroCannotDelete(c, s.oadp, own)
	gone(c, "forceDeleteBackup", nab)
	gone(c, "forceDeleteBackup: A's own Velero Backup", own)
	victims("forceDeleteBackup")

	// A NonAdminRestore whose status names B's Velero Restore: finalize
	// removes only A's own.
	source, sourceBackup := s.completedBackupAs(c, mallory, ns, "source")
	nar, ownRestore := s.restoreAs(c, mallory, ns, "restored", "source")
	forge(c, mallory, nar, func(n *v1alpha1.NonAdminRestore) {
		n.Status.VeleroRestore.NACUUID, n.Status.VeleroRestore.Name = victimNAR.Status.VeleroRestore.NACUUID, victimRestore.Name
	})
	c.Assert(mallory.Delete(ctx, nar), IsNil)
	gone(c, "NonAdminRestore finalize", nar)
	gone(c, "NonAdminRestore finalize: A's own Velero Restore", ownRestore)
	victims("NonAdminRestore finalize")

	// A restore from a NAB whose status names B's backup is refused.
	forge(c, mallory, source, pointAtVictim)
	pointer := newNAR(ns, "pointer", velerov1.RestoreSpec{BackupName: "source"})
	c.Assert(mallory.Create(ctx, pointer), IsNil)
	msg := refusedByController(c, pointer)
	c.Check(strings.Contains(msg, "Velero Backup "+s.oadp+"/"+victimBackup.Name+": it was not made for namespace "+ns), Equals, true, Commentf(msg))
	list := &velerov1.RestoreList{}
	c.Assert(testClient.List(ctx, list, client.InNamespace(s.oadp)), IsNil)
	for _, r := range list.Items {
		c.Check(r.Spec.BackupName == victimBackup.Name && r.Name != victimRestore.Name, Equals, false, Commentf("Velero Restore %s restores B's backup", r.Name))
	}
	exists(c, "restore from a forged NAB: A's own backup", sourceBackup)

	// A location whose status names B's Velero BSL: finalize removes A's
	// request, BSL and Secret copy only.
	loc, req, bsl, sec := s.locationAs(c, mallory, ns, "forged-bucket")
	forge(c, mallory, loc, func(n *v1alpha1.NonAdminBackupStorageLocation) {
		n.Status.VeleroBackupStorageLocation.NACUUID = victimLoc.Status.VeleroBackupStorageLocation.NACUUID
		n.Status.VeleroBackupStorageLocation.Name = victimBSL.Name
	})
	c.Assert(mallory.Delete(ctx, loc), IsNil)
	gone(c, "NABSL finalize", loc)
	for _, o := range []client.Object{req, bsl, sec} {
		gone(c, "NABSL finalize: A's own", o)
	}
	victims("NABSL finalize")

	// Adoption: a NAB claiming B's backup by sync label, with a status
	// forged to match at once (before backup sync's grace ends), is refused,
	// and deleting it touches nothing of B.
	claim := newNAB(ns, "claim", velerov1.BackupSpec{})
	claim.Labels = map[string]string{v1alpha1.NabSyncedFromNACUUIDLabel: victimUUID}
	c.Assert(mallory.Create(ctx, claim), IsNil)
	forge(c, mallory, claim, func(n *v1alpha1.NonAdminBackup) {
		n.Status.VeleroBackup = &v1alpha1.VeleroBackup{NACUUID: victimUUID, Name: victimBackup.Name, Namespace: s.oadp}
	})
	msg = refusedByController(c, claim)
	c.Check(strings.Contains(msg, "refused: the Velero Backup with NACUUID "+victimUUID+" was not made for namespace "+ns), Equals, true, Commentf(msg))
	// (Whether the forged status was written before or after the refusal,
	// the finalize below runs from a corrected one.)
	c.Assert(mallory.Delete(ctx, claim), IsNil)
	gone(c, "adoption refused, then finalize", claim)
	victims("adoption")

	// Garbage collection and backup sync, with a forged NAB still in place.
	kept, keptBackup := s.completedBackupAs(c, mallory, ns, "kept")
	forge(c, mallory, kept, pointAtVictim)
	gc := &orphangc.GarbageCollector{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp}
	_, err := gc.CollectOnce(ctx)
	c.Assert(err, IsNil)
	sync := &backupsync.BackupSync{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp, TenantSpec: phases.SyncedBackupSpec}
	_, err = sync.SyncOnce(ctx)
	c.Assert(err, IsNil)
	nabs := &v1alpha1.NonAdminBackupList{}
	c.Assert(testClient.List(ctx, nabs, client.InNamespace(ns)), IsNil)
	for _, n := range nabs.Items {
		c.Check(n.Labels[v1alpha1.NabSyncedFromNACUUIDLabel], Not(Equals), victimUUID, Commentf("backup sync gave B's backup to A: %s", n.Name))
	}
	victims("garbage collection and backup sync")
	exists(c, "garbage collection: A's own", keptBackup)

	// The next reconcile of the forged NAB (its Velero Backup changes)
	// corrects its status.
	before2 := keptBackup.DeepCopy()
	keptBackup.Status.Progress = &velerov1.BackupProgress{TotalItems: 13, ItemsBackedUp: 13}
	c.Assert(testClient.Patch(ctx, keptBackup, client.MergeFrom(before2)), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, kept)
		vb, dr := got.Status.VeleroBackup, got.Status.VeleroDeleteBackupRequest
		// B's request is no longer named; A has none of its own.
		return vb.NACUUID == v1alpha1.NACUUIDOf(kept.UID) && vb.Name == keptBackup.Name && dr.NACUUID == v1alpha1.NACUUIDOf(kept.UID) && dr.Name == "",
			fmt.Sprintf("%+v %+v", vb, dr)
	})
	victims("correction")
}

// TestForgedScheduleStatus: a NonAdminSchedule whose status names another
// tenant's Velero Schedule (its NACUUID and name) keeps changing and then
// deleting only its own: the next run corrects the status, and finalize
// leaves the other tenant's Schedule alone.
func (s *ControllerSuite) TestForgedScheduleStatus(c *C) {
	ctx := context.Background()
	victim := newNAS(createNamespace(c, "sched-victim"), "nightly", "0 2 * * *", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, victim), IsNil)
	victimSchedule := veleroScheduleOf(c, s.oadp, victim)

	ns := createNamespace(c, "sched-forger")
	mallory := statusWriter(c, ns, "mallory")
	nas := newNAS(ns, "nightly", "0 3 * * *", velerov1.BackupSpec{})
	c.Assert(mallory.Create(ctx, nas), IsNil)
	own := veleroScheduleOf(c, s.oadp, nas)
	eventually(c, 10*time.Second, func() (bool, string) {
		nas = getNAS(c, nas)
		return nas.Status.VeleroSchedule != nil && nas.Status.VeleroSchedule.Name == own.Name, fmt.Sprintf("%+v", nas.Status.VeleroSchedule)
	})
	forge(c, mallory, nas, func(n *v1alpha1.NonAdminSchedule) {
		n.Status.VeleroSchedule.NACUUID, n.Status.VeleroSchedule.Name = v1alpha1.NACUUIDOf(victim.UID), victimSchedule.Name
	})

	// A spec change runs the create action again: on A's own Schedule.
	before := nas.DeepCopy()
	nas.Spec.Paused = true
	c.Assert(mallory.Patch(ctx, nas, client.MergeFrom(before)), IsNil)
	derived := v1alpha1.NACUUIDOf(nas.UID)
	eventually(c, 10*time.Second, func() (bool, string) {
		got := &velerov1.Schedule{}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(own), got), IsNil)
		vs := getNAS(c, nas).Status.VeleroSchedule
		return got.Spec.Paused && vs.NACUUID == derived && vs.Name == own.Name, fmt.Sprintf("paused %v, status %+v", got.Spec.Paused, vs)
	})
	c.Check(slices.Contains(eventReasons(c, ns, "nightly"), "Warning StatusCorrected"), Equals, true)
	got := &velerov1.Schedule{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(victimSchedule), got), IsNil)
	c.Check(got.Spec.Paused, Equals, false)
	list := &velerov1.ScheduleList{}
	c.Assert(testClient.List(ctx, list, client.InNamespace(s.oadp), client.MatchingLabels{v1alpha1.NasOriginNACUUIDLabel: v1alpha1.NACUUIDOf(victim.UID)}), IsNil)
	c.Check(list.Items, HasLen, 1, Commentf("only B's Schedule carries B's NACUUID"))

	// Forged again, then deleted: finalize removes A's Schedule only.
	nas = getNAS(c, nas)
	forge(c, mallory, nas, func(n *v1alpha1.NonAdminSchedule) {
		n.Status.VeleroSchedule.NACUUID, n.Status.VeleroSchedule.Name = v1alpha1.NACUUIDOf(victim.UID), victimSchedule.Name
	})
	c.Assert(mallory.Delete(ctx, nas), IsNil)
	gone(c, "NonAdminSchedule finalize", nas)
	exists(c, "NonAdminSchedule finalize", victim, victimSchedule)
	gone(c, "NonAdminSchedule finalize: A's own Velero Schedule", own)
}
