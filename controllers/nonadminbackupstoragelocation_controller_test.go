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

func newNABSL(ns, name, secret string) *v1alpha1.NonAdminBackupStorageLocation {
	return &v1alpha1.NonAdminBackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.NonAdminBackupStorageLocationSpec{BackupStorageLocationSpec: &velerov1.BackupStorageLocationSpec{
			Provider:    "aws",
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "shared-bucket", Prefix: name}},
			Config:      map[string]string{"region": "us-east-1"},
			Credential:  &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "cloud"},
		}},
	}
}

func getNABSL(c *C, n *v1alpha1.NonAdminBackupStorageLocation) *v1alpha1.NonAdminBackupStorageLocation {
	got := &v1alpha1.NonAdminBackupStorageLocation{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(n), got), IsNil)
	return got
}

// bslObjects returns what exists in oadp for the location with nacuuid: its
// request, Velero BSL and copied Secret (nil when absent).
func bslObjects(c *C, oadp, nacuuid string) (*v1alpha1.NonAdminBackupStorageLocationRequest, *velerov1.BackupStorageLocation, *corev1.Secret) {
	// A location's NACUUID is "<namespace>-<name>-<uuid>": a bare UUID
	// here would find nothing and prove nothing.
	c.Assert(nacuuid, Not(Matches), `[0-9a-f-]{36}`)
	sel := client.MatchingLabels{v1alpha1.NabslOriginNACUUIDLabel: nacuuid}
	reqs := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
	bsls := &velerov1.BackupStorageLocationList{}
	secrets := &corev1.SecretList{}
	for _, l := range []client.ObjectList{reqs, bsls, secrets} {
		c.Assert(testClient.List(context.Background(), l, client.InNamespace(oadp), sel), IsNil)
	}
	c.Assert(len(reqs.Items) <= 1 && len(bsls.Items) <= 1 && len(secrets.Items) <= 1, Equals, true)
	var req *v1alpha1.NonAdminBackupStorageLocationRequest
	var bsl *velerov1.BackupStorageLocation
	var sec *corev1.Secret
	if len(reqs.Items) == 1 {
		req = &reqs.Items[0]
	}
	if len(bsls.Items) == 1 {
		bsl = &bsls.Items[0]
	}
	if len(secrets.Items) == 1 {
		sec = &secrets.Items[0]
	}
	return req, bsl, sec
}

func decide(c *C, req *v1alpha1.NonAdminBackupStorageLocationRequest, d v1alpha1.ApprovalDecision) {
	before := req.DeepCopy()
	req.Spec.ApprovalDecision = d
	c.Assert(testClient.Patch(context.Background(), req, client.MergeFrom(before)), IsNil)
}

func (s *ControllerSuite) TestBSLLifecycle(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=one\naws_secret_access_key=one-secret\n")}}
	c.Assert(testClient.Create(ctx, secret), IsNil)
	nabsl := newNABSL(ns, "mybucket", "creds")
	c.Assert(testClient.Create(ctx, nabsl), IsNil)

	// Pending: a request for the admin, nothing else.
	var got *v1alpha1.NonAdminBackupStorageLocation
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNABSL(c, nabsl)
		return got.Status.Plan != nil && got.Status.Plan.Current == "approval: waiting", fmt.Sprintf("%+v", got.Status.Plan)
	})
	nacuuid := v1alpha1.DerivedNACUUID(got)
	req, bsl, sec := bslObjects(c, s.oadp, nacuuid)
	c.Assert(req, NotNil)
	c.Check(bsl, IsNil)
	c.Check(sec, IsNil)
	c.Check(req.Spec.ApprovalDecision, Equals, v1alpha1.ApprovalPending)
	c.Check(req.Status.SourceNonAdminBSL.Namespace, Equals, ns)
	c.Check(req.Status.Phase, Equals, v1alpha1.NonAdminBSLRequestPhasePending)
	c.Check(req.Status.Requested().ObjectStorage.Prefix, Equals, ns+"/mybucket")
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseNew)
	// Linked to its request while pending (OADP NAC's order; OADP's CLI
	// lists pending requests through this link).
	c.Assert(got.Status.VeleroBackupStorageLocation, NotNil)
	c.Check([]string{got.Status.VeleroBackupStorageLocation.NACUUID, got.Status.VeleroBackupStorageLocation.Name}, DeepEquals, []string{nacuuid, req.Name})
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionClusterAdminApproved)
	c.Assert(cond, NotNil)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonPendingApproval)

	// Approved: the Secret is copied and the Velero BSL made, prefix forced.
	decide(c, req, v1alpha1.ApprovalApprove)
	eventually(c, 10*time.Second, func() (bool, string) {
		_, bsl, sec = bslObjects(c, s.oadp, nacuuid)
		return bsl != nil && sec != nil, "no BSL or Secret copy yet"
	})
	c.Check(sec.Data, DeepEquals, secret.Data)
	c.Check(sec.Type, Equals, corev1.SecretTypeOpaque)
	c.Check(sec.Annotations[v1alpha1.NabslOriginNamespaceAnnotation], Equals, ns)
	c.Check(bsl.Spec.ObjectStorage.Prefix, Equals, ns+"/mybucket")
	c.Check(bsl.Spec.ObjectStorage.Bucket, Equals, "shared-bucket")
	c.Check(bsl.Spec.Credential.Name, Equals, sec.Name)
	c.Check(bsl.Spec.Credential.Key, Equals, "cloud")
	c.Check(bsl.Spec.Default, Equals, false)
	// The request reads as OADP's does (kubectl oadp nabsl-request describe).
	eventually(c, 10*time.Second, func() (bool, string) {
		req, _, _ = bslObjects(c, s.oadp, nacuuid)
		return req.Status.Phase == v1alpha1.NonAdminBSLRequestPhaseApproved, fmt.Sprintf("%+v", req.Status)
	})
	src := req.Status.SourceNonAdminBSL
	c.Check([]string{src.NACUUID, src.Namespace, src.Name}, DeepEquals, []string{nacuuid, ns, nabsl.Name})
	c.Assert(src.RequestedSpec, NotNil)
	c.Check(src.RequestedSpec.ObjectStorage.Prefix, Equals, ns+"/mybucket", Commentf("the effective spec: prefix forced"))
	c.Check(src.RequestedSpec.ObjectStorage.Bucket, Equals, "shared-bucket")

	// Velero reports it Available: mirrored, plan complete.
	before := bsl.DeepCopy()
	bsl.Status.Phase = velerov1.BackupStorageLocationPhaseAvailable
	c.Assert(testClient.Patch(ctx, bsl, client.MergeFrom(before)), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNABSL(c, nabsl)
		v := got.Status.VeleroBackupStorageLocation
		return got.Status.Plan.State == v1alpha1.PlanComplete && v != nil && v.Status != nil && v.Status.Phase == velerov1.BackupStorageLocationPhaseAvailable,
			fmt.Sprintf("%s %+v", got.Status.Plan.Current, v)
	})
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	// One string, as OADP NAC makes it, is the NACUUID and the name of the
	// request, the Secret copy and the Velero BSL: OADP's CLI fetches the
	// request named by status.veleroBackupStorageLocation.nacuuid.
	c.Check(nacuuid, Matches, ns+"-"+nabsl.Name+"-[0-9a-f-]{36}")
	v := got.Status.VeleroBackupStorageLocation
	c.Check([]string{v.NACUUID, v.Name, v.Namespace}, DeepEquals, []string{nacuuid, nacuuid, s.oadp})
	c.Check([]string{req.Name, sec.Name, bsl.Name}, DeepEquals, []string{nacuuid, nacuuid, nacuuid})
	for _, t := range []string{v1alpha1.ConditionAccepted, v1alpha1.ConditionClusterAdminApproved, v1alpha1.ConditionSecretSynced, v1alpha1.ConditionBackupStorageLocationSynced} {
		c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, t), Equals, true, Commentf(t))
	}

	// A NAB of the namespace uses it: translated to the Velero BSL.
	nab := newNAB(ns, "to-my-bucket", velerov1.BackupSpec{StorageLocation: "mybucket"})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	var gotNAB *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		gotNAB = getNAB(c, nab)
		return gotNAB.Status.VeleroBackup != nil && gotNAB.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", gotNAB.Status.Conditions)
	})
	c.Check(gotNAB.Status.VeleroBackup.Spec.StorageLocation, Equals, bsl.Name)
	// Another namespace cannot name it.
	other := createNamespace(c, "tenant")
	thief := newNAB(other, "thief", velerov1.BackupSpec{StorageLocation: "mybucket"})
	c.Assert(testClient.Create(ctx, thief), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNAB(c, thief)
		cond := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionAccepted)
		return cond != nil && cond.Message == fmt.Sprintf(`spec.backupSpec.storageLocation: no NonAdminBackupStorageLocation named "mybucket" in namespace %s`, other),
			fmt.Sprintf("%+v", g.Status.Conditions)
	})

	// Credential rotation reaches the copy.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(secret), secret), IsNil)
	before2 := secret.DeepCopy()
	secret.Data["cloud"] = []byte("[default]\naws_access_key_id=two\naws_secret_access_key=two-secret\n")
	c.Assert(testClient.Patch(ctx, secret, client.MergeFrom(before2)), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		_, _, sec = bslObjects(c, s.oadp, nacuuid)
		return sec != nil && string(sec.Data["cloud"]) == "[default]\naws_access_key_id=two\naws_secret_access_key=two-secret\n", "copy not rotated yet"
	})
	// The tenant reads what its backups on the location take: the backup
	// made to it, not measured yet (still running); the thief's counts in
	// its own namespace only.
	eventually(c, 10*time.Second, func() (bool, string) {
		u := getNABSL(c, nabsl).Status.Usage
		return u != nil && *u == v1alpha1.StorageUsage{Backups: 1, NotMeasured: 1}, fmt.Sprintf("%+v", u)
	})

	// Approval withdrawn: BSL and copy go, the location backs off.
	req, _, _ = bslObjects(c, s.oadp, nacuuid)
	decide(c, req, v1alpha1.ApprovalReject)
	eventually(c, 10*time.Second, func() (bool, string) {
		_, bsl, sec = bslObjects(c, s.oadp, nacuuid)
		got = getNABSL(c, nabsl)
		return bsl == nil && sec == nil && got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff, string(got.Status.Phase)
	})
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionClusterAdminApproved).Reason, Equals, v1alpha1.ReasonRejected)

	// Approved again, then deleted: everything goes, the NAB using it too.
	req, _, _ = bslObjects(c, s.oadp, nacuuid)
	decide(c, req, v1alpha1.ApprovalApprove)
	eventually(c, 10*time.Second, func() (bool, string) {
		_, bsl, sec = bslObjects(c, s.oadp, nacuuid)
		return bsl != nil && sec != nil, "not recreated"
	})
	c.Assert(testClient.Delete(ctx, nabsl), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nabsl), &v1alpha1.NonAdminBackupStorageLocation{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
	})
	req, bsl, sec = bslObjects(c, s.oadp, nacuuid)
	c.Check(req, IsNil)
	c.Check(bsl, IsNil)
	c.Check(sec, IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), &v1alpha1.NonAdminBackup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("NAB using the location: %v", err)
	})
}

func (s *ControllerSuite) TestBSLRefusals(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	// The Secret does not exist in the namespace.
	missing := newNABSL(ns, "nosecret", "absent")
	c.Assert(testClient.Create(ctx, missing), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNABSL(c, missing)
		cond := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionAccepted)
		return cond != nil && cond.Message == fmt.Sprintf(`spec.backupStorageLocationSpec.credential: Secret "absent" not found in namespace %s`, ns), fmt.Sprintf("%+v", g.Status.Conditions)
	})
	g := getNABSL(c, missing)
	c.Check(g.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	req, bsl, sec := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(g))
	c.Check(req == nil && bsl == nil && sec == nil, Equals, true)

	// What can never be valid is refused at apply.
	def := newNABSL(ns, "default", "creds")
	def.Spec.BackupStorageLocationSpec.Default = true
	c.Check(testClient.Create(ctx, def), ErrorMatches, ".*default must be false.*")
	nocred := newNABSL(ns, "nocred", "")
	c.Check(testClient.Create(ctx, nocred), ErrorMatches, ".*credential name and key are required.*")
}
