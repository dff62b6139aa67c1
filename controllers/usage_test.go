package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// UsageSuite: the usage meter fills in status.usage of finished backups
// after their plan (nac --usage-measure-rate), and of older ones after a
// start.
type UsageSuite struct{}

var _ = Suite(&UsageSuite{})

// servedSize GETs the URL Velero served for the DownloadRequest name of oadp
// and returns how many bytes the store answered.
func servedSize(c *C, oadp, name string) int64 {
	dr := &velerov1.DownloadRequest{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKey{Namespace: oadp, Name: name}, dr), IsNil)
	c.Assert(dr.Status.DownloadURL, Not(Equals), "")
	resp, err := http.Get(dr.Status.DownloadURL)
	c.Assert(err, IsNil)
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	c.Assert(err, IsNil)
	return n
}

func (s *UsageSuite) TestUsageMeasuredAfterThePlanAndAfterARestart(c *C) {
	ctx := context.Background()
	oadp := createNamespace(c, "usage-oadp")
	run := strings.TrimPrefix(oadp, "usage-oadp-")
	opts := controllerOptions{oadp: oadp, selector: labels.SelectorFromSet(labels.Set{chaosRunLabel: run}), restart: true, usageRate: 50}
	stop := startController(c, opts)
	defer func() { stop() }()
	ns := createNamespace(c, "usage")
	type backup struct {
		nab    *v1alpha1.NonAdminBackup
		velero string
	}
	var backups []backup
	for _, name := range []string{"small", "volumes", "failed"} {
		nab := newNAB(ns, name, velerov1.BackupSpec{})
		nab.Labels = map[string]string{chaosRunLabel: run}
		c.Assert(testClient.Create(ctx, nab), IsNil)
		var velero string
		eventually(c, 10*time.Second, func() (bool, string) {
			got := getNAB(c, nab)
			if got.Status.VeleroBackup == nil || got.Status.VeleroBackup.Name == "" {
				return false, "no Velero Backup yet"
			}
			velero = got.Status.VeleroBackup.Name
			return true, ""
		})
		backups = append(backups, backup{nab, velero})
	}
	// The node agent moved 5,000 and 7,000 bytes of "volumes"' volumes.
	du := &velerov2alpha1.DataUpload{}
	nodeAgentObject(c, du, oadp, backups[1].velero+"-du", velerov1.BackupNameLabel, backups[1].velero, func() {
		du.Status.Phase, du.Status.Progress.TotalBytes = velerov2alpha1.DataUploadPhaseCompleted, 5000
	})
	pvb := &velerov1.PodVolumeBackup{}
	nodeAgentObject(c, pvb, oadp, backups[1].velero+"-pvb", velerov1.BackupNameLabel, backups[1].velero, func() {
		pvb.Status.Phase, pvb.Status.Progress.TotalBytes = velerov1.PodVolumeBackupPhaseCompleted, 7000
	})
	completeBackup(c, oadp, backups[0].velero, velerov1.BackupPhaseCompleted)
	completeBackup(c, oadp, backups[1].velero, velerov1.BackupPhasePartiallyFailed)
	completeBackup(c, oadp, backups[2].velero, velerov1.BackupPhaseFailed)

	measured := func(b backup) *v1alpha1.NonAdminBackup {
		var got *v1alpha1.NonAdminBackup
		eventually(c, 20*time.Second, func() (bool, string) {
			got = getNAB(c, b.nab)
			return got.Status.Usage != nil, fmt.Sprintf("plan %v, usage not measured", got.Status.Plan.State)
		})
		return got
	}
	for i, b := range backups[:2] {
		got := measured(b)
		u := got.Status.Usage
		drName := v1alpha1.NACObjectName(ns, b.nab.Name, v1alpha1.NACUUIDOf(got.UID)) + "u"
		contents := servedSize(c, oadp, drName)
		c.Check(contents > 0, Equals, true)
		c.Check(u.ContentsBytes, Equals, contents, Commentf("the tarball's size, as the store serves it"))
		volumes := int64(0)
		if i == 1 {
			volumes = 12000
		}
		c.Check(u.VolumeBytes, Equals, volumes)
		c.Check(u.TotalBytes, Equals, contents+volumes)
		c.Check(u.StorageLocation, Equals, "default")
		c.Check(u.MeasuredAt.IsZero(), Equals, false)
		c.Check(got.Status.Plan.State, Equals, v1alpha1.PlanComplete)
		c.Check(got.Status.Plan.Phase("usage"), IsNil, Commentf("measured outside the plan: %+v", got.Status.Plan.Phases))
	}
	// A failed backup holds nothing worth counting: never measured.
	failed := getNAB(c, backups[2].nab)
	c.Check(failed.Status.Usage, IsNil)
	dr := &velerov1.DownloadRequest{}
	err := testClient.Get(ctx, client.ObjectKey{Namespace: oadp, Name: v1alpha1.NACObjectName(ns, "failed", v1alpha1.NACUUIDOf(failed.UID)) + "u"}, dr)
	c.Check(err, NotNil, Commentf("no DownloadRequest to measure a failed backup"))

	// A backup measured before nacflow measured (usage unknown) is
	// filled in after a start.
	stop()
	old := getNAB(c, backups[0].nab)
	want := *old.Status.Usage
	old.Status.Usage = nil
	c.Assert(testClient.Status().Update(ctx, old), IsNil)
	stop = startController(c, opts)
	got := measured(backups[0])
	c.Check(got.Status.Usage.TotalBytes, Equals, want.TotalBytes)
	c.Check(got.Status.Usage.MeasuredAt.Before(&want.MeasuredAt), Equals, false)
}
