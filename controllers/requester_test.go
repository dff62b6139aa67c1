package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/requester"
)

// serveRequesterWebhook serves h over HTTPS on a free port of 127.0.0.1
// (a self-signed certificate made with client-go's cert package) until ctx
// ends, and registers it with the API server for NonAdminRestores in the
// namespaces labelled selector (failure policy Fail). It returns a function
// that removes the registration.
func serveRequesterWebhook(ctx context.Context, c *C, h *requester.Handler, selector map[string]string) func() {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	c.Assert(err, IsNil)
	dir := c.MkDir()
	c.Assert(os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600), IsNil)
	c.Assert(os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600), IsNil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	port := l.Addr().(*net.TCPAddr).Port
	c.Assert(l.Close(), IsNil)
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	srv.Register("/requester", &webhook.Admission{Handler: h})
	go func() { _ = srv.Start(ctx) }()
	eventually(c, 10*time.Second, func() (bool, string) {
		err := srv.StartedChecker()(nil)
		return err == nil, fmt.Sprint(err)
	})
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/requester"
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "nacflow-requester-test-"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "requester.nacflow.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: certPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{v1alpha1.GroupVersion.Version}, Resources: []string{"nonadminrestores"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: selector},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	c.Assert(testClient.Create(ctx, cfg), IsNil)
	return func() { c.Check(client.IgnoreNotFound(testClient.Delete(context.Background(), cfg)), IsNil) }
}

// TestRequesterRecordedByTheAPIServersPath: with the requester webhook registered,
// a NonAdminRestore a tenant creates carries the tenant as the API server
// authenticated them (name, groups), signed, whatever record the manifest
// carried; a tenant's update of the record is undone, and the controller's
// own updates keep it; a name the API server generates verifies. Without
// the webhook, a record the tenant writes does not verify.
func (s *ControllerSuite) TestRequesterRecordedByTheAPIServersPath(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sg, err := requester.NewSigner([]byte(strings.Repeat("s", requester.MinKeyLength)))
	c.Assert(err, IsNil)
	selector := map[string]string{"nacflow-test-requester": "on"}
	unregister := serveRequesterWebhook(ctx, c, &requester.Handler{Signer: sg}, selector)
	defer unregister()
	ns := labelledNamespace(c, selector)
	c.Assert(testClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restorer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"nonadminrestores"},
			Verbs: []string{"create", "get", "patch", "update"}}}}), IsNil)
	c.Assert(testClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "restorer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}), IsNil)
	alice := as(c, "alice", "team-a")
	forged := map[string]string{
		requester.Annotation:          `{"user":{"username":"system:admin","groups":["system:masters"]},"at":"2026-12-06T03:00:00Z"}`,
		requester.SignatureAnnotation: "Zm9yZ2Vk"}
	nar := func(name, generateName string) *v1alpha1.NonAdminRestore {
		n := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, GenerateName: generateName, Annotations: forged}}
		n.Spec.RestoreSpec = &velerov1.RestoreSpec{BackupName: "b1"}
		return n
	}

	// The API server picks a new webhook configuration up within moments.
	var r1 *v1alpha1.NonAdminRestore
	eventually(c, 10*time.Second, func() (bool, string) {
		r := nar("", "probe-")
		c.Assert(alice.Create(ctx, r), IsNil)
		if r.Annotations[requester.SignatureAnnotation] == forged[requester.SignatureAnnotation] {
			return false, "the webhook is not called yet"
		}
		r1 = r
		return true, ""
	})
	got := &v1alpha1.NonAdminRestore{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(r1), got), IsNil)
	rec, err := sg.Verify("NonAdminRestore", got)
	c.Assert(err, IsNil, Commentf("a generated name (%s) verifies", got.Name))
	c.Check(rec.User.Username, Equals, "alice")
	c.Check(rec.User.Groups, DeepEquals, []string{"team-a", "system:authenticated"})

	named := nar("r1", "")
	c.Assert(alice.Create(ctx, named), IsNil)
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(named), got), IsNil)
	rec, err = sg.Verify("NonAdminRestore", got)
	c.Assert(err, IsNil)
	c.Check(rec.User.Username, Equals, "alice")
	recorded := got.Annotations[requester.Annotation]

	// alice rewrites the record: undone. The controller's own updates (its
	// finalizer, by now) keep it.
	before := got.DeepCopy()
	got.Annotations[requester.Annotation] = forged[requester.Annotation]
	c.Assert(alice.Patch(ctx, got, client.MergeFrom(before)), IsNil)
	c.Check(got.Annotations[requester.Annotation], Equals, recorded)
	eventually(c, 10*time.Second, func() (bool, string) {
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(named), got), IsNil)
		return len(got.Finalizers) > 0, "no finalizer yet"
	})
	_, err = sg.Verify("NonAdminRestore", got)
	c.Check(err, IsNil)

	// Without the webhook, what the tenant writes stays, and does not verify.
	unregister()
	eventually(c, 10*time.Second, func() (bool, string) {
		r := nar("", "unhooked-")
		c.Assert(alice.Create(ctx, r), IsNil)
		_, err := sg.Verify("NonAdminRestore", r)
		return errors.Is(err, requester.ErrForged), fmt.Sprint(err)
	})
}
