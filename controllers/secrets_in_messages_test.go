package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
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
