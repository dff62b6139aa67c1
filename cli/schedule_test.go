package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// The schedule, download, dry-run and OADP-alias commands over the fake
// client: what each writes.
type MoreCommandsSuite struct{}

var _ = Suite(&MoreCommandsSuite{})

func (s *MoreCommandsSuite) TestScheduleCreateBuildsTheSpec(c *C) {
	o, out, errOut := testOptions(c)
	code, _ := run(o, "schedule", "create", "nightly", "--schedule", "CRON_TZ=Europe/Paris 0 2 * * *", "--ttl", "168h",
		"--include-resources", "configmaps", "--storage-location", "mine", "--rpo", "26h", "--keep-daily", "7", "--keep-last", "2",
		"--keep-failed", "1", "--labels", "team=a")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	c.Check(out.String(), Matches, "NonAdminSchedule request \"nightly\" submitted successfully.\nRun `kubectl nac schedule describe nightly -n demo` for more details.\n")
	nas := &v1alpha1.NonAdminSchedule{}
	c.Assert(o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "nightly"}, nas), IsNil)
	c.Check(nas.Spec.Schedule, Equals, "CRON_TZ=Europe/Paris 0 2 * * *")
	c.Check(nas.Spec.RPO.Duration, Equals, 26*time.Hour)
	c.Check(*nas.Spec.Retention, DeepEquals, v1alpha1.ScheduleRetention{KeepLast: 2, Daily: 7, Failed: &v1alpha1.FailedRetention{KeepLast: 1}})
	t := nas.Spec.Template.BackupSpec
	c.Assert(t, NotNil)
	c.Check(t.IncludedNamespaces, DeepEquals, []string{"demo"})
	c.Check(t.IncludedResources, DeepEquals, []string{"configmaps"})
	c.Check(t.StorageLocation, Equals, "mine")
	c.Check(t.TTL.Duration, Equals, 168*time.Hour)
	c.Check(nas.Labels, DeepEquals, map[string]string{"team": "a"})

	// No --wait (a schedule does not end), --schedule required, no
	// negative counts; nothing is created for them.
	for _, args := range [][]string{
		{"schedule", "create", "s2", "--schedule", "@daily", "--wait"},
		{"schedule", "create", "s2"},
		{"schedule", "create", "s2", "--schedule", "@daily", "--keep-last", "-1"},
		{"schedule", "create", "s2", "--schedule", "@daily", "--include-cluster-scoped-resources", "storageclasses"},
	} {
		code, _ = run(o, args...)
		c.Check(code, Equals, 2, Commentf("%v", args))
		err := o.client.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "s2"}, &v1alpha1.NonAdminSchedule{})
		c.Check(apierrors.IsNotFound(err), Equals, true, Commentf("%v", args))
	}
}

func (s *MoreCommandsSuite) TestSchedulePauseUnpauseAndDescribe(c *C) {
	nas := &v1alpha1.NonAdminSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "demo", CreationTimestamp: *at(-3600)},
		Spec:       v1alpha1.NonAdminScheduleSpec{Schedule: "0 2 * * *", Template: v1alpha1.NonAdminScheduleTemplate{BackupSpec: &v1alpha1.ScheduleBackupSpec{}}},
		Status: v1alpha1.NonAdminScheduleStatus{Phase: v1alpha1.NonAdminPhaseCreated,
			VeleroSchedule: &v1alpha1.VeleroSchedule{Name: "demo-nightly-1a2b", Namespace: "openshift-adp", Status: &velerov1.ScheduleStatus{Phase: velerov1.SchedulePhaseEnabled}},
			NextRun:        at(3600), LastSuccessfulBackup: at(-600),
			RecentBackups: []v1alpha1.NonAdminScheduledBackup{{Name: "nightly-20261123020000", VeleroBackupName: "demo-nightly-1a2b-20261123020000",
				Phase: velerov1.BackupPhaseCompleted, StartTimestamp: at(-610), CompletionTimestamp: at(-600)}},
			Retention: &v1alpha1.RetentionStatus{Policy: "daily 7", Kept: 1},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionWithinQuota, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonQuotaExceeded,
				Message: "schedule paused until there is room: quota exceeded"}},
		},
	}
	o, out, errOut := testOptions(c, nas)
	var buf bytes.Buffer
	DescribeSchedule(&buf, nas, t0)
	golden(c, "schedule-describe", buf.String())

	code, _ := run(o, "schedule", "pause", "nightly")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	c.Check(out.String(), Equals, "NonAdminSchedule nightly paused.\n")
	got := &v1alpha1.NonAdminSchedule{}
	c.Assert(o.client.Get(context.Background(), client.ObjectKeyFromObject(nas), got), IsNil)
	c.Check(got.Spec.Paused, Equals, true)
	out.Reset()
	code, _ = run(o, "nonadmin", "unpause", "schedule", "nightly")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	c.Check(out.String(), Equals, "NonAdminSchedule nightly unpaused.\n")
	c.Assert(o.client.Get(context.Background(), client.ObjectKeyFromObject(nas), got), IsNil)
	c.Check(got.Spec.Paused, Equals, false)
	code, _ = run(o, "schedule", "pause", "missing")
	c.Check(code, Equals, 2)
}

// --dry-run=client prints and creates nothing, for every create verb; an
// unknown --dry-run is refused.
func (s *MoreCommandsSuite) TestDryRunCreatesNothing(c *C) {
	for _, args := range [][]string{
		{"backup", "create", "x", "--dry-run=client", "-o", "yaml"},
		{"restore", "create", "x", "--from-backup", "b1", "--dry-run=client", "-o", "yaml"},
		{"schedule", "create", "x", "--schedule", "@daily", "--dry-run=client", "-o", "yaml"},
		{"bsl", "create", "x", "--provider", "aws", "--bucket", "b", "--credential", "s=k", "--dry-run=client", "-o", "yaml"},
		{"nonadmin", "create", "backup", "x", "--dry-run"},
	} {
		o, out, errOut := testOptions(c)
		code, _ := run(o, args...)
		c.Assert(code, Equals, 0, Commentf("%v: %s", args, errOut))
		if args[len(args)-1] == "yaml" {
			c.Check(out.String(), Matches, `(?s)apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdmin.*name: x\n.*`, Commentf("%v", args))
		} else {
			c.Check(out.String(), Equals, "NonAdminBackup \"x\" created (dry run)\n")
		}
		for _, l := range []client.ObjectList{&v1alpha1.NonAdminBackupList{}, &v1alpha1.NonAdminRestoreList{}, &v1alpha1.NonAdminScheduleList{}, &v1alpha1.NonAdminBackupStorageLocationList{}} {
			c.Assert(o.client.List(context.Background(), l), IsNil)
			items, _ := metaExtractList(l)
			c.Check(items, HasLen, 0, Commentf("%v created something", args))
		}
	}
	o, _, errOut := testOptions(c)
	code, _ := run(o, "backup", "create", "x", "--dry-run=maybe")
	c.Check(code, Equals, 2)
	c.Check(errOut.String(), Equals, "Error: --dry-run: \"maybe\" is not one of \"none\", \"server\", \"client\"\n")
}

// OADP's words run the same commands: nonadmin backup get, na get backup
// and backup get print the same.
func (s *MoreCommandsSuite) TestOADPWordsRunTheSameCommands(c *C) {
	var outs []string
	for _, args := range [][]string{{"backup", "get"}, {"nonadmin", "backup", "get"}, {"na", "get", "backup"}, {"nonadmin", "get", "backups"}} {
		o, out, errOut := testOptions(c, completedBackup())
		o.Now = func() time.Time { return t0.Add(time.Minute) }
		code, _ := run(o, args...)
		c.Assert(code, Equals, 0, Commentf("%v: %s", args, errOut))
		outs = append(outs, out.String())
	}
	c.Check(outs[0], Matches, `NAME\s+REQUEST-PHASE.*\nb1\s+Created\s+Completed.*\n`)
	for _, o := range outs[1:] {
		c.Check(o, Equals, outs[0])
	}
	o0, _, _ := testOptions(nil)
	root := NewRootCommand(o0)
	for _, path := range [][]string{{"nabsl-request", "approve"}, {"nonadmin", "create", "schedule"}} {
		cmd, _, err := root.Find(path)
		c.Assert(err, IsNil, Commentf("%v", path))
		c.Check(cmd.Short, Not(Equals), "", Commentf("%v has the help of the command it runs", path))
	}
}

// backup download writes the file as Velero stores it (gzipped), named
// after the backup, and keeps an existing file unless --force.
func (s *MoreCommandsSuite) TestBackupDownloadWritesTheGzipFile(c *C) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("the contents of b1"))
	c.Assert(w.Close(), IsNil)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(gz.Bytes()) }))
	defer srv.Close()
	o, out, errOut := testOptions(c, completedBackup())
	serveDownloads(o, srv.URL)
	dir := c.MkDir()
	wd, err := os.Getwd()
	c.Assert(err, IsNil)
	c.Assert(os.Chdir(dir), IsNil) // the default file name is relative
	defer func() { c.Assert(os.Chdir(wd), IsNil) }()
	code, _ := run(o, "backup", "download", "b1")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	c.Check(out.String(), Equals, "BackupContents of NonAdminBackup b1 written to b1-data.tar.gz.\n")
	got, err := os.ReadFile(filepath.Join(dir, "b1-data.tar.gz"))
	c.Assert(err, IsNil)
	c.Check(got, DeepEquals, gz.Bytes())
	code, _ = run(o, "backup", "download", "b1")
	c.Check(code, Equals, 2)
	c.Check(errOut.String(), Matches, `(?s).*b1-data.tar.gz exists: use --force to overwrite it\n`)
	code, _ = run(o, "backup", "download", "b1", "--force", "--kind", string(velerov1.DownloadTargetKindBackupResourceList), "-o", "list.json.gz")
	c.Check(code, Equals, 0)
	code, _ = run(o, "backup", "download", "b1", "--kind", "Secrets")
	c.Check(code, Equals, 2)
	reqs := &v1alpha1.NonAdminDownloadRequestList{}
	c.Assert(o.client.List(context.Background(), reqs), IsNil)
	c.Check(reqs.Items, HasLen, 0, Commentf("the requests are deleted afterwards"))
}

// servingClient plays nacflow and Velero for NonAdminDownloadRequests: each
// is served at once with url.
type servingClient struct {
	client.Client
	url string
}

func (s *servingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := s.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if r, ok := obj.(*v1alpha1.NonAdminDownloadRequest); ok {
		r.Status.VeleroDownloadRequest.Status = &velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: s.url}
	}
	return nil
}

// serveDownloads makes o's client serve every download request with url.
func serveDownloads(o *Options, url string) {
	o.SetClient(&servingClient{Client: o.client, url: url})
}

// describe draws the volume data moved as bars with bytes, percent and the
// speed since Velero started; --wait's line says the percent and bytes.
func (s *MoreCommandsSuite) TestVolumeProgressBars(c *C) {
	nab := waitingBackup()
	nab.Status.DataMoverDataUploads.BytesDone, nab.Status.DataMoverDataUploads.TotalBytes = 450<<20, 1000<<20
	nab.Status.FileSystemPodVolumeBackups = &v1alpha1.FileSystemPodVolumeBackups{Total: 1, Completed: 1, BytesDone: 2048, TotalBytes: 2048}
	var buf bytes.Buffer
	DescribeBackup(&buf, nab, nil, t0.Add(32*time.Second)) // Velero started at +2s: 30 s of transfer
	c.Check(buf.String(), Matches, `(?s).*\nVolume Data:\n`+
		`  Data Mover:          \[#########-----------\]  45%  450\.0 MiB of 1000\.0 MiB  15\.0 MiB/s\n`+
		`  File System:         \[####################\] 100%  2\.0 KiB of 2\.0 KiB  68 B/s\n.*`)
	pr := backupOperation(nab).progress()
	c.Check(pr.Volumes, Equals, "1 of 3 volumes uploaded (45%, 450.0 MiB of 1000.0 MiB)")
	// Without byte counts (OADP's CRD, an older controller): no bars.
	nab.Status.DataMoverDataUploads.TotalBytes, nab.Status.FileSystemPodVolumeBackups = 0, nil
	buf.Reset()
	DescribeBackup(&buf, nab, nil, t0.Add(32*time.Second))
	c.Check(strings.Contains(buf.String(), "Volume Data"), Equals, false)
	c.Check(humanBytes(1023), Equals, "1023 B")
	c.Check(humanBytes(3<<40), Equals, "3.0 TiB")
}

// describe names the uploader of the pod volumes (status.uploaderType).
func (s *MoreCommandsSuite) TestDescribeNamesTheUploader(c *C) {
	nab := waitingBackup()
	nab.Status.FileSystemPodVolumeBackups = &v1alpha1.FileSystemPodVolumeBackups{Total: 2, Completed: 1}
	var buf bytes.Buffer
	DescribeBackup(&buf, nab, nil, t0.Add(32*time.Second))
	c.Check(buf.String(), Matches, `(?s).*1 of 2 pod volumes backed up\b[^ ].*`)
	nab.Status.UploaderType = "kopia"
	buf.Reset()
	DescribeBackup(&buf, nab, nil, t0.Add(32*time.Second))
	c.Check(buf.String(), Matches, `(?s).*1 of 2 pod volumes backed up by kopia.*`)
}
