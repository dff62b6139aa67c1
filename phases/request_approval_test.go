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
	res, err := fn.Run(context.Background(), &engine.Operation{Object: nabsl, OADPNamespace: "oadp", UUID: "u-1"}, fn.NewArgs())
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
}
