package requester_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/requester"
)

func Test(t *testing.T) { TestingT(t) }

type RequesterSuite struct{}

var _ = Suite(&RequesterSuite{})

var (
	key   = []byte(strings.Repeat("k", requester.MinKeyLength))
	at    = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	alice = authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"x"}}}
)

func signer(c *C, k []byte) *requester.Signer {
	s, err := requester.NewSigner(k)
	c.Assert(err, IsNil)
	return s
}

// restore returns a NonAdminRestore's metadata: namespace/name, made at
// created, with annotations.
func restore(namespace, name string, created time.Time, annotations map[string]string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: namespace, Name: name, CreationTimestamp: metav1.NewTime(created), Annotations: annotations}
}

func (s *RequesterSuite) TestShortKeyRefused(c *C) {
	_, err := requester.NewSigner(key[:requester.MinKeyLength-1])
	c.Check(err, ErrorMatches, `the requester signing key has 31 bytes, at least 32 are needed`)
}

// TestVerify: a record verifies on the object it was written for, made
// when it was written; it does not on another object, kind, namespace or
// name, under another key, altered, or copied onto an object made later.
func (s *RequesterSuite) TestVerify(c *C) {
	sg := signer(c, key)
	ann, err := sg.Annotations("NonAdminRestore", restore("a", "r1", time.Time{}, nil), requester.Record{User: alice, At: metav1.NewTime(at.Add(300 * time.Millisecond))})
	c.Assert(err, IsNil)
	got, err := sg.Verify("NonAdminRestore", restore("a", "r1", at.Add(time.Second), ann))
	c.Assert(err, IsNil)
	c.Check(got.User, DeepEquals, alice)
	c.Check(got.At.Time.Equal(at), Equals, true, Commentf("%s", got.At))

	_, err = sg.Verify("NonAdminRestore", restore("a", "r1", at, nil))
	c.Check(err, Equals, requester.ErrNotRecorded)

	altered := map[string]string{requester.Annotation: strings.Replace(ann[requester.Annotation], `"alice"`, `"admin"`, 1),
		requester.SignatureAnnotation: ann[requester.SignatureAnnotation]}
	bob := signer(c, []byte(strings.Repeat("b", 40)))
	byBob, err := bob.Annotations("NonAdminRestore", restore("a", "r1", time.Time{}, nil), requester.Record{User: alice, At: metav1.NewTime(at)})
	c.Assert(err, IsNil)
	unsigned := map[string]string{requester.Annotation: ann[requester.Annotation]}
	for _, tc := range []struct {
		about string
		kind  string
		obj   *metav1.ObjectMeta
	}{
		{"altered", "NonAdminRestore", restore("a", "r1", at, altered)},
		{"unsigned", "NonAdminRestore", restore("a", "r1", at, unsigned)},
		{"another key's", "NonAdminRestore", restore("a", "r1", at, byBob)},
		{"another namespace", "NonAdminRestore", restore("b", "r1", at, ann)},
		{"another name", "NonAdminRestore", restore("a", "r2", at, ann)},
		{"another kind", "NonAdminBackup", restore("a", "r1", at, ann)},
		{"an object of the same name made an hour later", "NonAdminRestore", restore("a", "r1", at.Add(time.Hour), ann)},
	} {
		_, err := sg.Verify(tc.kind, tc.obj)
		c.Check(errors.Is(err, requester.ErrForged), Equals, true, Commentf("%s: %v", tc.about, err))
	}
	_, err = sg.Verify("NonAdminRestore", restore("a", "r1", at.Add(time.Hour), ann))
	c.Check(err, ErrorMatches, `.*it was written at 2026-12-06T03:00:00Z, 1h0m0s from the object's creation at 2026-12-06T04:00:00Z`)
}

// TestGenerateName: a record written at admission, before the API server
// chose the name from generateName, verifies on the name it chose.
func (s *RequesterSuite) TestGenerateName(c *C) {
	sg := signer(c, key)
	ann, err := sg.Annotations("NonAdminDownloadRequest", &metav1.ObjectMeta{Namespace: "a", GenerateName: "b1-logs-"}, requester.Record{User: alice, At: metav1.NewTime(at)})
	c.Assert(err, IsNil)
	named := restore("a", "b1-logs-x7k2q", at, ann)
	named.GenerateName = "b1-logs-"
	_, err = sg.Verify("NonAdminDownloadRequest", named)
	c.Check(err, IsNil)
	other := restore("a", "b2-logs-x7k2q", at, ann)
	other.GenerateName = "b2-logs-"
	_, err = sg.Verify("NonAdminDownloadRequest", other)
	c.Check(errors.Is(err, requester.ErrForged), Equals, true, Commentf("%v", err))
}

// admit runs the handler on an admission request for a NonAdminRestore
// (obj, old: its metadata; old nil for a create) and returns the object
// the API server would store.
func admit(c *C, h *requester.Handler, op admissionv1.Operation, user authenticationv1.UserInfo, obj, old *metav1.ObjectMeta) *unstructured.Unstructured {
	raw := func(m *metav1.ObjectMeta) runtime.RawExtension {
		b, err := json.Marshal(map[string]any{"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore", "metadata": m,
			"spec": map[string]any{"restoreSpec": map[string]any{"backupName": "b1"}}})
		c.Assert(err, IsNil)
		return runtime.RawExtension{Raw: b}
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, UserInfo: user, Object: raw(obj),
		Kind: metav1.GroupVersionKind{Group: "oadp.openshift.io", Version: "v1alpha1", Kind: "NonAdminRestore"}}}
	if old != nil {
		req.OldObject = raw(old)
	}
	res := h.Handle(context.Background(), req)
	c.Assert(res.Allowed, Equals, true, Commentf("%+v", res.Result))
	out := req.Object.Raw
	if len(res.Patches) > 0 {
		b, err := json.Marshal(res.Patches)
		c.Assert(err, IsNil)
		p, err := jsonpatch.DecodePatch(b)
		c.Assert(err, IsNil)
		out, err = p.Apply(out)
		c.Assert(err, IsNil)
	}
	u := &unstructured.Unstructured{}
	c.Assert(u.UnmarshalJSON(out), IsNil)
	return u
}

// TestHandlerCreate: a create is recorded as the requesting user's,
// whatever record it carried.
func (s *RequesterSuite) TestHandlerCreate(c *C) {
	sg := signer(c, key)
	h := &requester.Handler{Signer: sg, Now: func() time.Time { return at }}
	forged := map[string]string{requester.Annotation: `{"user":{"username":"system:admin","groups":["system:masters"]},"at":"2026-12-06T03:00:00Z"}`,
		requester.SignatureAnnotation: "forged", "keep": "me"}
	got := admit(c, h, admissionv1.Create, alice, restore("a", "r1", time.Time{}, forged), nil)
	c.Check(got.GetAnnotations()["keep"], Equals, "me")
	got.SetCreationTimestamp(metav1.NewTime(at))
	rec, err := sg.Verify("NonAdminRestore", got)
	c.Assert(err, IsNil)
	c.Check(rec.User, DeepEquals, alice)
}

// TestHandlerUpdate: an update keeps the record the object had, and adds
// none to an object that had none.
func (s *RequesterSuite) TestHandlerUpdate(c *C) {
	sg := signer(c, key)
	h := &requester.Handler{Signer: sg, Now: func() time.Time { return at }}
	ann, err := sg.Annotations("NonAdminRestore", restore("a", "r1", time.Time{}, nil), requester.Record{User: alice, At: metav1.NewTime(at)})
	c.Assert(err, IsNil)
	admin, err := sg.Annotations("NonAdminRestore", restore("a", "r1", time.Time{}, nil), requester.Record{User: authenticationv1.UserInfo{Username: "admin"}, At: metav1.NewTime(at)})
	c.Assert(err, IsNil)
	for _, tc := range []struct {
		about    string
		old, new map[string]string
		want     map[string]string
	}{
		{"changed to another record", ann, admin, ann},
		{"removed", ann, map[string]string{"x": "y"}, map[string]string{"x": "y", requester.Annotation: ann[requester.Annotation], requester.SignatureAnnotation: ann[requester.SignatureAnnotation]}},
		{"added to an object without one", nil, admin, map[string]string{}},
		{"kept", ann, ann, ann},
	} {
		got := admit(c, h, admissionv1.Update, alice, restore("a", "r1", at, tc.new), restore("a", "r1", at, tc.old))
		ann := got.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		c.Check(ann, DeepEquals, tc.want, Commentf(tc.about))
	}
}

// review is an admission request for a NonAdminRestore of namespace a with
// spec (and oldSpec, for an update; nil: a create).
func review(c *C, op admissionv1.Operation, spec, oldSpec map[string]any) admission.Request {
	raw := func(spec map[string]any) runtime.RawExtension {
		b, err := json.Marshal(map[string]any{"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
			"metadata": map[string]any{"namespace": "a", "name": "r1"}, "spec": map[string]any{"restoreSpec": spec}})
		c.Assert(err, IsNil)
		return runtime.RawExtension{Raw: b}
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, UserInfo: alice, Namespace: "a", Object: raw(spec),
		Kind: metav1.GroupVersionKind{Group: "oadp.openshift.io", Version: "v1alpha1", Kind: "NonAdminRestore"}}}
	if oldSpec != nil {
		req.OldObject = raw(oldSpec)
	}
	return req
}

// recorded returns the record the handler's answer to req writes.
func recorded(c *C, sg *requester.Signer, h *requester.Handler, req admission.Request) requester.Record {
	res := h.Handle(context.Background(), req)
	c.Assert(res.Allowed, Equals, true, Commentf("%+v", res.Result))
	b, err := json.Marshal(res.Patches)
	c.Assert(err, IsNil)
	p, err := jsonpatch.DecodePatch(b)
	c.Assert(err, IsNil)
	out, err := p.Apply(req.Object.Raw)
	c.Assert(err, IsNil)
	u := &unstructured.Unstructured{}
	c.Assert(u.UnmarshalJSON(out), IsNil)
	u.SetCreationTimestamp(metav1.NewTime(at))
	rec, err := sg.Verify("NonAdminRestore", u)
	c.Assert(err, IsNil)
	return rec
}

// TestHandlerRecordsWhatWasAsked: a NonAdminRestore's record holds the
// digest of its restoreSpec and of the content of the resource-modifier
// ConfigMap it names, as they were at admission; a ConfigMap that does not
// exist is recorded without a digest; a read that fails fails the request.
func (s *RequesterSuite) TestHandlerRecordsWhatWasAsked(c *C) {
	sg := signer(c, key)
	cms := map[string]*corev1.ConfigMap{"mods": {ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "mods", UID: "u1"}, Data: map[string]string{"m.yaml": "version: v1"}}}
	var fail error
	h := &requester.Handler{Signer: sg, Now: func() time.Time { return at }, ConfigMaps: func(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
		if fail != nil {
			return nil, fail
		}
		if cm, ok := cms[name]; ok && ns == "a" {
			return cm, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}}
	spec := map[string]any{"backupName": "b1", "resourceModifier": map[string]any{"kind": "ConfigMap", "name": "mods"}}
	rec := recorded(c, sg, h, review(c, admissionv1.Create, spec, nil))
	typed := &velerov1.RestoreSpec{BackupName: "b1", ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "mods"}}
	c.Check(rec.Spec, Equals, v1alpha1.SpecHash(typed))
	c.Check(rec.Modifiers, DeepEquals, &requester.ConfigMapRecord{Name: "mods", UID: "u1", Digest: requester.ConfigMapDigest(cms["mods"])})

	rec = recorded(c, sg, h, review(c, admissionv1.Create, map[string]any{"backupName": "b1", "resourceModifier": map[string]any{"kind": "ConfigMap", "name": "absent"}}, nil))
	c.Check(rec.Modifiers, DeepEquals, &requester.ConfigMapRecord{Name: "absent"})
	rec = recorded(c, sg, h, review(c, admissionv1.Create, map[string]any{"backupName": "b1"}, nil))
	c.Check(rec.Modifiers, IsNil)

	fail = errors.New("etcd is down")
	res := h.Handle(context.Background(), review(c, admissionv1.Create, spec, nil))
	c.Check(res.Allowed, Equals, false)
	c.Check(res.Result.Message, Matches, ".*reading ConfigMap a/mods, the restore's resource modifiers: etcd is down")
}

// TestHandlerRefusesSpecChanges: an update that changes restoreSpec is
// refused, whoever sends it; one that writes Velero's zero values (OADP
// NAC's updates) is not a change.
func (s *RequesterSuite) TestHandlerRefusesSpecChanges(c *C) {
	h := &requester.Handler{Signer: signer(c, key), Now: func() time.Time { return at }}
	was := map[string]any{"backupName": "b1"}
	for _, changed := range []map[string]any{
		{"backupName": "b2"},
		{"backupName": "b1", "namespaceMapping": map[string]any{"a": "b"}},
		{"backupName": "b1", "resourceModifier": map[string]any{"kind": "ConfigMap", "name": "mods"}},
		{"backupName": "b1", "hooks": map[string]any{"resources": []any{map[string]any{"name": "h"}}}},
	} {
		res := h.Handle(context.Background(), review(c, admissionv1.Update, changed, was))
		c.Check(res.Allowed, Equals, false, Commentf("%v", changed))
		c.Check(res.Result.Message, Matches, "spec.restoreSpec is immutable.*")
	}
	res := h.Handle(context.Background(), review(c, admissionv1.Update, map[string]any{"backupName": "b1", "hooks": map[string]any{}, "itemOperationTimeout": "0s"}, was))
	c.Check(res.Allowed, Equals, true, Commentf("%+v", res.Result))
}
