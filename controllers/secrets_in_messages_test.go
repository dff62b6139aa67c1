package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/redact"
)

// TestNoSignedURLInStatusOrEvents: when reading a backup's file fails, the
// message says which store and file, never the pre-signed URL's credential
// and signature — status and events are read by tenants and view users, and
// the URL opens the backup, Secrets included. The one URL status holds on
// purpose, a NonAdminDownloadRequest's status.veleroDownloadRequest
// .status.downloadURL (edit and admin only), stays whole.
func (s *ControllerSuite) TestNoSignedURLInStatusOrEvents(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "leak")
	nab, veleroName := startedBackup(c, s.oadp, ns, "signed-b")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	var verified string
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		v := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionVerified)
		if v == nil {
			return false, "no Verified condition yet"
		}
		verified = v.Message
		return strings.Contains(v.Message, "store.unresolvable.test"), v.Message
	})
	c.Check(verified, Matches, `downloading the resource list of Backup .*: GET http://store\.unresolvable\.test:9000/bucket/backups/[^ ?]+: .*`)

	nadr := newNADR(ns, "signed-log", velerov1.DownloadTargetKindBackupLog, "signed-b")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNADR(c, nadr)
		vdr := got.Status.VeleroDownloadRequest
		if vdr.Status == nil {
			return false, "no Velero DownloadRequest status yet"
		}
		return strings.HasSuffix(vdr.Status.DownloadURL, signedQuery), vdr.Status.DownloadURL
	})

	// Nothing else a tenant reads carries the credential or the signature.
	secrets := []string{"AKIASIGNEDLEAK", "5ecre7519a7e"}
	raw, err := json.Marshal(getNAB(c, nab).Status)
	c.Assert(err, IsNil)
	for _, sec := range secrets {
		c.Check(strings.Contains(string(raw), sec), Equals, false, Commentf("NAB status carries %s: %s", sec, raw))
	}
	got := getNADR(c, nadr)
	got.Status.VeleroDownloadRequest.Status.DownloadURL = ""
	raw, err = json.Marshal(got.Status)
	c.Assert(err, IsNil)
	for _, sec := range secrets {
		c.Check(strings.Contains(string(raw), sec), Equals, false, Commentf("NADR status beside downloadURL carries %s: %s", sec, raw))
	}
	events := &corev1.EventList{}
	c.Assert(testClient.List(ctx, events, client.InNamespace(ns)), IsNil)
	c.Check(len(events.Items) > 0, Equals, true)
	for _, e := range events.Items {
		for _, sec := range secrets {
			c.Check(strings.Contains(e.Message, sec), Equals, false, Commentf("event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message))
		}
	}
	c.Logf("Verified: %s", verified)
}

// leakParam is a parameter whose value opens something; redact leaves
// "=REDACTED" where one was.
var leakParam = regexp.MustCompile(`(?i)\b(x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|signature|sig|aws_secret_access_key|aws_session_token|access_token|client_secret)=([^&\s"'\\;,]*)`)

// leaks returns what in text no message a tenant or view user reads may
// carry: a value of leakParam other than the redaction mark, a URL's user
// info, a JSON Web Token, or one of the secret values (markers) the test
// planted.
func leaks(text string, markers ...string) []string {
	var found []string
	for _, m := range leakParam.FindAllStringSubmatch(text, -1) {
		if m[2] != redact.Mark {
			found = append(found, m[0])
		}
	}
	found = append(found, regexp.MustCompile(`://[^/\s"'@]+:[^/\s"'@]*@`).FindAllString(text, -1)...)
	found = append(found, regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]*`).FindAllString(text, -1)...)
	for _, m := range markers {
		if strings.Contains(text, m) {
			found = append(found, m)
		}
	}
	return found
}

// TestFailuresLeakNothing: failures forced on every path where a secret
// could reach a message — Velero's failure reason and validation errors
// carrying a pre-signed URL, a URL with user info, a secret key and a
// token (mirrored into status), a credential file refused for a key, one
// that does not parse, and an endpoint written with user info — leave no
// signature, credential, user info, token or Secret value in anything
// nacflow writes where a tenant or view user reads it: the status of every
// NAC object of the namespace and its events.
func (s *ControllerSuite) TestFailuresLeakNothing(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "leakall")
	markers := []string{"AKIAFAILLEAK", "5ecre7fa11", "5ecre7user", "5ecre7param", "5ecre7cred", "5ecre7proc", "5ecre7line", "5ecre7url"}

	// Velero fails the backup with messages that carry secrets.
	nab, veleroName := startedBackup(c, s.oadp, ns, "failing")
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: veleroName}, b), IsNil)
	before := b.DeepCopy()
	b.Status.FailureReason = "uploading https://store.example.com/bucket/backups/x.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAFAILLEAK%2F20261128&X-Amz-Signature=5ecre7fa11: " +
		"dial https://AKIAUSER:5ecre7user@store.example.com:9000/bucket: refused; aws_secret_access_key=5ecre7param; " +
		"token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZW5hbnQifQ.c2lnbmF0dXJl"
	b.Status.ValidationErrors = []string{"location https://AKIAUSER:5ecre7user@store.example.com/?sig=5ecre7fa11 unreachable"}
	c.Assert(testClient.Patch(ctx, b, client.MergeFrom(before)), IsNil)
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseFailed)
	eventually(c, 20*time.Second, func() (bool, string) {
		vb := getNAB(c, nab).Status.VeleroBackup
		if vb == nil || vb.Status == nil {
			return false, "no mirrored status yet"
		}
		return vb.Status.Phase == velerov1.BackupPhaseFailed && strings.Contains(vb.Status.FailureReason, "store.example.com"), vb.Status.FailureReason
	})

	// Locations refused for their credential file or endpoint.
	for name, cred := range map[string]string{
		"proc":   "[default]\naws_access_key_id=AKIAFAILLEAK\naws_secret_access_key=5ecre7cred\ncredential_process = sh -c 'echo 5ecre7proc'\n",
		"broken": "[default]\naws_access_key_id=AKIAFAILLEAK\nthis line holds 5ecre7line and no equals sign\n",
	} {
		c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds-" + name},
			Data: map[string][]byte{"cloud": []byte(cred)}}), IsNil)
		l := newNABSL(ns, name, "creds-"+name)
		c.Assert(testClient.Create(ctx, l), IsNil)
		refusedByController(c, l)
	}
	c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"cloud": []byte(staticCreds)}}), IsNil)
	l := newNABSL(ns, "userinfo", "creds")
	l.Spec.BackupStorageLocationSpec.Config["s3Url"] = "https://AKIAURL:5ecre7url@store.example.com:9000"
	c.Assert(testClient.Create(ctx, l), IsNil)
	refusedByController(c, l)

	// Then every status of the namespace and every event, read as a view
	// user would.
	var texts []string
	for _, list := range []client.ObjectList{&v1alpha1.NonAdminBackupList{}, &v1alpha1.NonAdminBackupStorageLocationList{},
		&v1alpha1.NonAdminRestoreList{}, &v1alpha1.NonAdminDownloadRequestList{}, &v1alpha1.NonAdminScheduleList{}} {
		c.Assert(testClient.List(ctx, list, client.InNamespace(ns)), IsNil)
		items, err := meta.ExtractList(list)
		c.Assert(err, IsNil)
		for _, item := range items {
			st := reflect.ValueOf(item).Elem().FieldByName("Status").Interface()
			raw, err := json.Marshal(st)
			c.Assert(err, IsNil)
			texts = append(texts, fmt.Sprintf("%T %s status: %s", item, item.(client.Object).GetName(), raw))
		}
	}
	c.Check(len(texts), Equals, 4)
	events := &corev1.EventList{}
	c.Assert(testClient.List(ctx, events, client.InNamespace(ns)), IsNil)
	c.Check(len(events.Items) >= 4, Equals, true, Commentf("%d events", len(events.Items)))
	for _, e := range events.Items {
		texts = append(texts, fmt.Sprintf("event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message))
	}
	for _, t := range texts {
		c.Check(leaks(t, markers...), HasLen, 0, Commentf("%s", t))
	}
	// The scan finds what it looks for: the planted messages themselves
	// leak 4 parameters (X-Amz-Credential, X-Amz-Signature,
	// aws_secret_access_key, sig), 2 user infos, 1 token and 4 markers.
	c.Check(leaks(b.Status.FailureReason+" "+b.Status.ValidationErrors[0], markers...), HasLen, 11)
}
