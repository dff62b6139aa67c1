package patch_test

import (
	"context"
	"testing"

	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/patch"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

type PatchStatusSuite struct{}

var _ = Suite(&PatchStatusSuite{})

// patchRecorder returns a client whose status patches are recorded in sent
// (as the JSON sent) instead of reaching any server.
func patchRecorder(c *C, sent *[]string) client.Client {
	scheme := runtime.NewScheme()
	c.Assert(v1alpha1.AddToScheme(scheme), IsNil)
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
			c.Check(patch.Type(), Equals, types.JSONPatchType)
			data, err := patch.Data(obj)
			c.Assert(err, IsNil)
			*sent = append(*sent, string(data))
			obj.SetResourceVersion("8")
			return nil
		},
	})
}

// A status write sends the status whole, with the resourceVersion it was
// computed from as its precondition; the object takes the resourceVersion
// the server returned.
func (s *PatchStatusSuite) TestStatusWithResourceVersion(c *C) {
	var sent []string
	before := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7", Labels: map[string]string{"a": "b"}}}
	before.Status.Phase = v1alpha1.NonAdminPhaseNew
	before.Status.QueueInfo = &v1alpha1.QueueInfo{EstimatedQueuePosition: 3}
	obj := before.DeepCopy()
	obj.Status.Phase = v1alpha1.NonAdminPhaseCreated
	obj.Status.QueueInfo = nil // dropped: sent as absent, not merged
	c.Assert(patch.Status(context.Background(), patchRecorder(c, &sent), obj, before), IsNil)
	c.Assert(sent, DeepEquals, []string{`[{"op":"replace","path":"/metadata/resourceVersion","value":"7"},` +
		`{"op":"add","path":"/status","value":{"phase":"Created"}}]`})
	c.Assert(obj.ResourceVersion, Equals, "8")
}

// Metadata changes are not sent (the status subresource ignores them): a
// change to metadata alone sends nothing.
func (s *PatchStatusSuite) TestMetadataNotSent(c *C) {
	var sent []string
	before := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7"}}
	obj := before.DeepCopy()
	obj.Labels = map[string]string{"x": "y"}
	c.Assert(patch.Status(context.Background(), patchRecorder(c, &sent), obj, before), IsNil)
	c.Assert(sent, HasLen, 0)
	obj.Status.Phase = v1alpha1.NonAdminPhaseCreated
	c.Assert(patch.Status(context.Background(), patchRecorder(c, &sent), obj, before), IsNil)
	c.Assert(sent, DeepEquals, []string{`[{"op":"replace","path":"/metadata/resourceVersion","value":"7"},` +
		`{"op":"add","path":"/status","value":{"phase":"Created"}}]`})
}

// Nothing is sent when nothing changed, and a change to an object read
// without a resourceVersion is refused rather than sent unlocked.
func (s *PatchStatusSuite) TestNoChangeNoLock(c *C) {
	var sent []string
	before := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7"}}
	c.Assert(patch.Status(context.Background(), patchRecorder(c, &sent), before.DeepCopy(), before), IsNil)
	c.Assert(sent, HasLen, 0)
	before.ResourceVersion = ""
	obj := before.DeepCopy()
	obj.Status.Phase = v1alpha1.NonAdminPhaseCreated
	err := patch.Status(context.Background(), patchRecorder(c, &sent), obj, before)
	c.Assert(err, ErrorMatches, `patching status of t/b: the object has no resourceVersion to lock on`)
	c.Assert(sent, HasLen, 0)
}

// StatusExcept leaves one status field as the server holds it: every other
// field is added, one operation each, and a field that went is removed.
func (s *PatchStatusSuite) TestStatusExceptLeavesTheField(c *C) {
	var sent []string
	before := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7"}}
	before.Status.Phase = v1alpha1.NonAdminPhaseCreated
	before.Status.QueueInfo = &v1alpha1.QueueInfo{EstimatedQueuePosition: 3}
	before.Status.Plan = &v1alpha1.PlanStatus{Action: "backup", State: v1alpha1.PlanComplete, Compacted: true}
	obj := before.DeepCopy()
	obj.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
	obj.Status.QueueInfo = nil
	obj.Status.Plan.Current = "changed in memory, never sent"
	c.Assert(patch.StatusExcept(context.Background(), patchRecorder(c, &sent), obj, before, "plan"), IsNil)
	c.Assert(sent, DeepEquals, []string{`[{"op":"replace","path":"/metadata/resourceVersion","value":"7"},` +
		`{"op":"add","path":"/status/phase","value":"BackingOff"},` +
		`{"op":"remove","path":"/status/queueInfo"}]`})
	c.Assert(obj.ResourceVersion, Equals, "8")
}

type FinalizersSuite struct{}

var _ = Suite(&FinalizersSuite{})

// Finalizers are written with a merge patch locked on the resourceVersion
// obj was read at, and only the new metadata is read back into obj.
func (s *FinalizersSuite) TestFinalizersWithResourceVersion(c *C) {
	scheme := runtime.NewScheme()
	c.Assert(v1alpha1.AddToScheme(scheme), IsNil)
	var sent []string
	cl := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
			c.Check(patch.Type(), Equals, types.MergePatchType)
			_, metadataOnly := obj.(*metav1.PartialObjectMetadata)
			c.Check(metadataOnly, Equals, true)
			data, err := patch.Data(obj)
			c.Assert(err, IsNil)
			sent = append(sent, string(data))
			obj.SetResourceVersion("8")
			return nil
		},
	})
	obj := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", ResourceVersion: "7",
		Finalizers: []string{"nonadminbackup.oadp.openshift.io/finalizer"}}}
	c.Assert(patch.Finalizers(context.Background(), cl, obj), IsNil)
	c.Assert(sent, DeepEquals, []string{`{"metadata":{"finalizers":["nonadminbackup.oadp.openshift.io/finalizer"],"resourceVersion":"7"}}`})
	c.Assert(obj.ResourceVersion, Equals, "8")
}
