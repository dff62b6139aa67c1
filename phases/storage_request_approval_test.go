package phases_test

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

type ApprovalSuite struct{}

var _ = Suite(&ApprovalSuite{})

// approval runs RequestApproval once against a fake client (a narrow unit
// test: the approval flow against a real API server is in controllers/).
func approval(c *C, required bool) (*v1alpha1.NonAdminBackupStorageLocation, engine.Result, error, client.Client) {
	s := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(s), IsNil)
	c.Assert(velerov1.AddToScheme(s), IsNil)
	c.Assert(v1alpha1.AddToScheme(s), IsNil)
	cl := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.NonAdminBackupStorageLocationRequest{}).Build()
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, phases.Options{RequireApprovalForBSL: required})
	c.Assert(err, IsNil)
	fn, ok := reg.Get("RequestApproval")
	c.Assert(ok, Equals, true)
	nabsl := &v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bucket"}}
	// A location's NACUUID is the name of its objects (OADP NAC's).
	res, err := fn.Run(context.Background(), &engine.Operation{Object: nabsl, OADPNamespace: "oadp", UUID: "team-bucket-u-1"}, fn.NewArgs())
	return nabsl, res, err, cl
}

func (s *ApprovalSuite) TestAutoApproved(c *C) {
	nabsl, res, err, cl := approval(c, false)
	c.Assert(err, IsNil)
	c.Check(res.Wait, Equals, false)
	c.Check(meta.IsStatusConditionTrue(nabsl.Status.Conditions, v1alpha1.ConditionClusterAdminApproved), Equals, true)
	list := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
	c.Assert(cl.List(context.Background(), list, client.InNamespace("oadp")), IsNil)
	c.Assert(list.Items, HasLen, 1)
	c.Check(list.Items[0].Spec.ApprovalDecision, Equals, v1alpha1.ApprovalApprove)
	c.Check(list.Items[0].Status.SourceNonAdminBSL.Name, Equals, "bucket")
}

func (s *ApprovalSuite) TestApprovalRequiredWaits(c *C) {
	nabsl, res, err, _ := approval(c, true)
	c.Assert(err, IsNil)
	c.Check(res.Wait, Equals, true)
	c.Check(res.Message, Matches, `waiting for a cluster admin to approve NonAdminBackupStorageLocationRequest oadp/team-bucket-u-1 \(approval required by flag --require-approval-for-bsl\)`)
	c.Check(nabsl.Status.Phase, Equals, v1alpha1.NonAdminPhaseNew)
	// Linked while pending, as OADP NAC links it: OADP's CLI finds the
	// request by this NACUUID.
	vb := nabsl.Status.VeleroBackupStorageLocation
	c.Assert(vb, NotNil)
	c.Check([]string{vb.NACUUID, vb.Name, vb.Namespace}, DeepEquals, []string{"team-bucket-u-1", "team-bucket-u-1", "oadp"})
}

// An approval OADP NAC had the admin give — its request records the
// tenant's spec as written, prefix "mig" — covers the spec in force, the
// prefix forced under the namespace ("team/mig"); one for another bucket
// does not.
func (s *ApprovalSuite) TestOADPNACApprovalCovers(c *C) {
	for _, tc := range []struct {
		bucket string
		wait   bool
	}{{"tenants", false}, {"elsewhere", true}} {
		sc := runtime.NewScheme()
		c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
		c.Assert(velerov1.AddToScheme(sc), IsNil)
		c.Assert(v1alpha1.AddToScheme(sc), IsNil)
		const uuid = "team-bucket-96dfa8b7-3f6f-4c8d-a168-8527b00fbed8"
		asked := &velerov1.BackupStorageLocationSpec{Provider: "aws", StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: tc.bucket, Prefix: "mig"}}}
		req := &v1alpha1.NonAdminBackupStorageLocationRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: uuid, Labels: map[string]string{v1alpha1.NabslOriginNACUUIDLabel: uuid},
				Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: "team", v1alpha1.NabslOriginNameAnnotation: "bucket"}},
			Spec:   v1alpha1.NonAdminBackupStorageLocationRequestSpec{ApprovalDecision: v1alpha1.ApprovalApprove},
			Status: v1alpha1.NonAdminBackupStorageLocationRequestStatus{SourceNonAdminBSL: &v1alpha1.SourceNonAdminBSL{NACUUID: uuid, Namespace: "team", Name: "bucket", RequestedSpec: asked}},
		}
		cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(req).WithStatusSubresource(&v1alpha1.NonAdminBackupStorageLocationRequest{}).Build()
		reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, phases.Options{RequireApprovalForBSL: true})
		c.Assert(err, IsNil)
		fn, _ := reg.Get("RequestApproval")
		inForce := &velerov1.BackupStorageLocationSpec{Provider: "aws", StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "tenants", Prefix: "team/mig"}}}
		nabsl := &v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bucket", UID: "u"},
			Status: v1alpha1.NonAdminBackupStorageLocationStatus{VeleroBackupStorageLocation: &v1alpha1.VeleroBackupStorageLocation{NACUUID: uuid, Name: uuid, Spec: inForce}}}
		res, err := fn.Run(context.Background(), &engine.Operation{Object: nabsl, OADPNamespace: "oadp", UUID: uuid}, fn.NewArgs())
		c.Assert(err, IsNil, Commentf(tc.bucket))
		c.Check(res.Wait, Equals, tc.wait, Commentf("%s: %s", tc.bucket, res.Message))
		list := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
		c.Assert(cl.List(context.Background(), list), IsNil)
		c.Check(list.Items, HasLen, 1, Commentf("OADP NAC's request adopted, no second one"))
	}
}
