package phases

import (
	"context"
	"errors"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/requester"
)

type RequesterVerdictSuite struct{}

var _ = Suite(&RequesterVerdictSuite{})

// signedNAR is a NonAdminRestore of namespace t with spec, carrying a
// record of r signed by sg.
func signedNAR(c *C, sg *requester.Signer, spec velerov1.RestoreSpec, r requester.Record) *v1alpha1.NonAdminRestore {
	at := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "r1", CreationTimestamp: metav1.NewTime(at)},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &spec}}
	r.At = metav1.NewTime(at)
	ann, err := sg.Annotations("NonAdminRestore", nar, r)
	c.Assert(err, IsNil)
	nar.Annotations = ann
	return nar
}

// TestSpecOtherThanAsked: where no CRD rule nor webhook keeps the spec, a
// spec that is not the one recorded at admission is refused, naming the
// field manager that wrote it; the recorded one passes. A record written
// before nacflow recorded the spec vouches for no one.
func (s *RequesterVerdictSuite) TestSpecOtherThanAsked(c *C) {
	sg, err := requester.NewSigner([]byte(strings.Repeat("k", requester.MinKeyLength)))
	c.Assert(err, IsNil)
	r := Requesters{Signer: sg}
	op := &engine.Operation{OADPNamespace: "oadp"}
	alice := authenticationv1.UserInfo{Username: "alice", Groups: []string{"team"}}
	asked := velerov1.RestoreSpec{BackupName: "b1"}
	nar := signedNAR(c, sg, asked, requester.Record{User: alice, Spec: v1alpha1.SpecHash(&asked)})
	v, err := r.verify(context.Background(), op, nar, "admin")
	c.Assert(err, IsNil)
	c.Check(v.user, NotNil)
	c.Check(v.askedFor(nar), IsNil)

	when := metav1.NewTime(time.Date(2026, 12, 7, 5, 1, 0, 0, time.UTC))
	nar.Spec.RestoreSpec.NamespaceMapping = map[string]string{"t": "victim"}
	nar.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Operation: metav1.ManagedFieldsOperationUpdate, Time: &when,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:restoreSpec":{"f:namespaceMapping":{}}}}`)}}}
	c.Check(v.askedFor(nar), ErrorMatches, `spec.restoreSpec changed after alice created the NonAdminRestore \(last written by field manager "kubectl-patch" \(Update\) at 2026-12-07T05:01:00Z\): .*`)

	old := signedNAR(c, sg, asked, requester.Record{User: alice})
	v, err = r.verify(context.Background(), op, old, "admin")
	c.Assert(err, IsNil)
	c.Check(v.user, IsNil)
	c.Check(v.reason, Equals, v1alpha1.ReasonRequesterNotRecorded)
}

// TestNotATenant: the identities that act for the admin are no requester;
// a tenant's user or service account is; a review that fails is an error.
func (s *RequesterVerdictSuite) TestNotATenant(c *C) {
	admins := map[string]bool{"operator": true}
	var fail error
	may := func(_ context.Context, u authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
		c.Check(a, DeepEquals, authorizationv1.ResourceAttributes{Namespace: "oadp", Verb: "create", Group: "velero.io", Resource: "restores"})
		return admins[u.Username], fail
	}
	n := NotTenants{Users: []string{"breakglass"}, Groups: []string{"sre"}}
	for _, tc := range []struct {
		user authenticationv1.UserInfo
		not  bool
	}{
		{authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}, false},
		{authenticationv1.UserInfo{Username: "system:serviceaccount:t:ci", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:t"}}, false},
		{authenticationv1.UserInfo{Username: "root", Groups: []string{"system:masters"}}, true},
		{authenticationv1.UserInfo{Username: "system:serviceaccount:oadp:velero"}, true},
		{authenticationv1.UserInfo{Username: "x", Groups: []string{"system:serviceaccounts:oadp"}}, true},
		{authenticationv1.UserInfo{Username: "system:kube-controller-manager"}, true},
		{authenticationv1.UserInfo{Username: "system:admin"}, true},
		{authenticationv1.UserInfo{Username: "breakglass"}, true},
		{authenticationv1.UserInfo{Username: "bob", Groups: []string{"sre"}}, true},
		{authenticationv1.UserInfo{Username: "operator"}, true},
	} {
		why, err := n.notATenant(context.Background(), "oadp", tc.user, may)
		c.Assert(err, IsNil)
		c.Check(why != "", Equals, tc.not, Commentf("%s: %q", tc.user.Username, why))
	}
	fail = errors.New("forbidden")
	_, err := n.notATenant(context.Background(), "oadp", authenticationv1.UserInfo{Username: "alice"}, may)
	c.Check(err, ErrorMatches, "asking whether alice may create Velero Restores in oadp: forbidden")
}
