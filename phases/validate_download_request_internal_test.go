package phases

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
)

type DownloadRuleSuite struct{}

var _ = Suite(&DownloadRuleSuite{})

// validate runs ValidateDownloadRequest, made as NewRegistry makes it for
// the controller's --require-tenant-location-for-downloads, on a request for
// the log of tenant t's finished backup b kept on location, and returns
// the request and the function's error.
func (s *DownloadRuleSuite) validate(c *C, flag bool, location string, objs ...client.Object) (*v1alpha1.NonAdminDownloadRequest, error) {
	sc := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	c.Assert(velerov1.AddToScheme(sc), IsNil)
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "b"}}
	nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{Name: "vb", Namespace: "oadp"}
	vb := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: "vb", Annotations: map[string]string{
		v1alpha1.NabOriginNamespaceAnnotation: "t", v1alpha1.NabOriginNameAnnotation: "b"}},
		Spec: velerov1.BackupSpec{StorageLocation: location}, Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted}}
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(append(objs, nab, vb)...).Build()
	nadr := &v1alpha1.NonAdminDownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "log"},
		Spec: v1alpha1.NonAdminDownloadRequestSpec{Target: velerov1.DownloadTarget{Kind: velerov1.DownloadTargetKindBackupLog, Name: "b"}}}
	r, err := NewRegistry(Clients{Client: cl, APIReader: cl}, Options{RequireTenantLocationForDownloads: flag})
	c.Assert(err, IsNil)
	fn, ok := r.Get("ValidateDownloadRequest")
	c.Assert(ok, Equals, true)
	_, err = fn.Run(context.Background(), &engine.Operation{Object: nadr, Client: cl, APIReader: cl, OADPNamespace: "oadp", UUID: "u"}, fn.NewArgs())
	return nadr, err
}

// Off (the default), a backup on the admin's location is served; with
// --require-tenant-location-for-downloads it is refused as OADP NAC refuses
// it, and one on the tenant's own location is still served.
func (s *DownloadRuleSuite) TestRequireTenantLocationFlag(c *C) {
	_, err := s.validate(c, false, "default")
	c.Check(err, IsNil)

	nadr, err := s.validate(c, true, "default")
	c.Check(engine.IsTerminal(err), Equals, true, Commentf("%v", err))
	cond := meta.FindStatusCondition(nadr.Status.Conditions, v1alpha1.ConditionNonAdminBackupStorageLocationNotUsed)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionTrue)
	c.Check(cond.Reason, Equals, "Error")

	tenants := &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: "t-own-x",
		Labels: map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "x"}}}
	_, err = s.validate(c, true, "t-own-x", tenants)
	c.Check(err, IsNil)
}
