package controllers_test

import (
	"context"
	"fmt"
	"time"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// A location's conditions carry OADP NAC's reasons, so that a script written
// for OADP NAC waits for the same strings: written out here as OADP's
// nonadminbackupstoragelocation_controller.go sets them, not through
// nacflow's constants.
func (s *ControllerSuite) TestBSLConditionReasonsAreOADPs(c *C) {
	ctx := context.Background()
	ns := tenantWithCreds(c)
	nabsl := newNABSL(ns, "bucket", "creds")
	c.Assert(testClient.Create(ctx, nabsl), IsNil)

	// reasonIs waits until condition t of the location has status and reason.
	reasonIs := func(t string, status metav1.ConditionStatus, reason string) {
		eventually(c, 15*time.Second, func() (bool, string) {
			cond := meta.FindStatusCondition(getNABSL(c, nabsl).Status.Conditions, t)
			return cond != nil && cond.Status == status && cond.Reason == reason, fmt.Sprintf("%s: %+v", t, cond)
		})
	}
	reasonIs("Accepted", metav1.ConditionTrue, "BslSpecValidation")
	reasonIs("ClusterAdminApproved", metav1.ConditionFalse, "BslSpecApprovalPending")

	nacuuid := v1alpha1.DerivedNACUUID(getNABSL(c, nabsl))
	req, _, _ := bslObjects(c, s.oadp, nacuuid)
	c.Assert(req, NotNil)
	decide(c, req, v1alpha1.ApprovalApprove)
	reasonIs("ClusterAdminApproved", metav1.ConditionTrue, "BslSpecApproved")
	reasonIs("SecretSynced", metav1.ConditionTrue, "SecretCreated")
	reasonIs("BackupStorageLocationSynced", metav1.ConditionTrue, "BackupStorageLocationCreated")

	// A rotated credential updates the copy.
	secret := &corev1.Secret{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret), IsNil)
	before := secret.DeepCopy()
	secret.Data["cloud"] = []byte("[default]\naws_access_key_id=two\naws_secret_access_key=two-secret\n")
	c.Assert(testClient.Patch(ctx, secret, client.MergeFrom(before)), IsNil)
	reasonIs("SecretSynced", metav1.ConditionTrue, "SecretUpdated")

	req, _, _ = bslObjects(c, s.oadp, nacuuid)
	decide(c, req, v1alpha1.ApprovalReject)
	reasonIs("ClusterAdminApproved", metav1.ConditionFalse, "BslSpecRejected")

	// An invalid spec: Accepted=False with the same reason, OADP's one.
	bad := newNABSL(ns, "no-secret", "absent")
	c.Assert(testClient.Create(ctx, bad), IsNil)
	eventually(c, 15*time.Second, func() (bool, string) {
		cond := meta.FindStatusCondition(getNABSL(c, bad).Status.Conditions, "Accepted")
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "BslSpecValidation", fmt.Sprintf("%+v", cond)
	})
}
