package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/controllers"
)

var update = flag.Bool("update", false, "rewrite the golden files of internal/cli/testdata")

type PrintersSuite struct{}

var _ = Suite(&PrintersSuite{})

// t0 is when every fixture's plan started.
var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func at(sec int) *metav1.Time {
	t := metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))
	return &t
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(c *C, name, got string) {
	path := filepath.Join("testdata", name+".golden")
	if *update {
		c.Assert(os.MkdirAll("testdata", 0o755), IsNil)
		c.Assert(os.WriteFile(path, []byte(got), 0o644), IsNil)
	}
	want, err := os.ReadFile(path)
	c.Assert(err, IsNil, Commentf("run go test ./internal/cli/ -update to create %s", path))
	c.Check(got, Equals, string(want), Commentf("%s differs: run go test ./internal/cli/ -update and review the diff", path))
}

// completedBackup is a NAB whose plan and Velero Backup completed.
func completedBackup() *v1alpha1.NonAdminBackup {
	return &v1alpha1.NonAdminBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "demo", CreationTimestamp: *at(-1), Labels: map[string]string{"team": "a"}},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{
			IncludedResources: []string{"configmaps"}, TTL: metav1.Duration{Duration: 72 * time.Hour}}},
		Status: v1alpha1.NonAdminBackupStatus{
			Phase: v1alpha1.NonAdminPhaseCreated,
			Plan: &v1alpha1.PlanStatus{Action: "backup", Blueprint: "nonadminbackup", BlueprintGeneration: "built-in",
				State: v1alpha1.PlanComplete, Current: "verify: complete", StartTime: at(0), CompletionTime: at(14),
				Phases: []v1alpha1.PhaseStatus{
					{Name: "validate", Func: "ValidateBackupSpec", State: v1alpha1.PhaseComplete, StartTime: at(0), CompletionTime: at(0), Attempts: 1, Message: "spec accepted"},
					{Name: "createBackup", Func: "CreateVeleroBackup", State: v1alpha1.PhaseComplete, StartTime: at(0), CompletionTime: at(1), Attempts: 2, Message: "created Velero Backup openshift-adp/demo-b1-1a2b3c"},
					{Name: "waitForBackup", Func: "WaitFor", State: v1alpha1.PhaseComplete, StartTime: at(1), CompletionTime: at(12), Attempts: 1, Message: "Velero Backup demo-b1-1a2b3c is Completed"},
					{Name: "verify", Func: "VerifyBackupContents", State: v1alpha1.PhaseComplete, StartTime: at(12), CompletionTime: at(14), Attempts: 1, Message: "3 items, all of namespace demo"},
				},
				DeferPhase: &v1alpha1.PhaseStatus{Name: "finalStatus", Func: "SyncStatus", State: v1alpha1.PhaseComplete, StartTime: at(14), CompletionTime: at(14), Attempts: 1}},
			VeleroBackup: &v1alpha1.VeleroBackup{NACUUID: "demo-b1-1a2b3c", Name: "demo-b1-1a2b3c", Namespace: "openshift-adp",
				Status: &velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted, StartTimestamp: at(2), CompletionTimestamp: at(11),
					Expiration: at(72 * 3600), Warnings: 1, Progress: &velerov1.BackupProgress{TotalItems: 3, ItemsBackedUp: 3}}},
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "BackupAccepted", Message: "backup accepted"},
				{Type: "Verified", Status: metav1.ConditionTrue, Reason: "ContentsVerified", Message: "every item is of namespace demo"},
			},
		},
	}
}

// waitingBackup is a NAB queued behind others, Velero half way through.
func waitingBackup() *v1alpha1.NonAdminBackup {
	nab := completedBackup()
	nab.Name = "b2"
	p := nab.Status.Plan
	p.State, p.CompletionTime, p.Current = v1alpha1.PlanRunning, nil, "waitForBackup: waiting"
	p.Phases[2] = v1alpha1.PhaseStatus{Name: "waitForBackup", Func: "WaitFor", State: v1alpha1.PhaseWaiting, StartTime: at(1), Attempts: 1,
		Message: "Velero Backup demo-b2-4d5e6f is InProgress: 20 of 40 items backed up"}
	p.Phases[3] = v1alpha1.PhaseStatus{Name: "verify", Func: "VerifyBackupContents", State: v1alpha1.PhasePending}
	p.DeferPhase = &v1alpha1.PhaseStatus{Name: "finalStatus", Func: "SyncStatus", State: v1alpha1.PhasePending}
	nab.Status.VeleroBackup.Name = "demo-b2-4d5e6f"
	nab.Status.VeleroBackup.Status = &velerov1.BackupStatus{Phase: velerov1.BackupPhaseInProgress, StartTimestamp: at(2),
		Progress: &velerov1.BackupProgress{TotalItems: 40, ItemsBackedUp: 20}}
	nab.Status.QueueInfo = &v1alpha1.QueueInfo{EstimatedQueuePosition: 2}
	nab.Status.DataMoverDataUploads = &v1alpha1.DataMoverDataUploads{Total: 3, Completed: 1, InProgress: 2}
	nab.Status.Conditions = nab.Status.Conditions[:1]
	return nab
}

// failedBackup is a NAB refused by its validate phase.
func failedBackup() *v1alpha1.NonAdminBackup {
	nab := completedBackup()
	nab.Name = "bad"
	nab.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
	nab.Status.VeleroBackup = nil
	p := nab.Status.Plan
	p.State, p.Current = v1alpha1.PlanFailed, "validate: failed"
	p.Phases[0] = v1alpha1.PhaseStatus{Name: "validate", Func: "ValidateBackupSpec", State: v1alpha1.PhaseFailed, StartTime: at(0), CompletionTime: at(0), Attempts: 1,
		Message: "spec.backupSpec.includedNamespaces: [other] names another namespace; a NonAdminBackup backs up its own namespace only"}
	for i := 1; i < 4; i++ {
		p.Phases[i] = v1alpha1.PhaseStatus{Name: p.Phases[i].Name, Func: p.Phases[i].Func, State: v1alpha1.PhaseSkipped}
	}
	nab.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "InvalidBackupSpec", Message: "spec.backupSpec.includedNamespaces: [other] names another namespace"}}
	return nab
}

func (s *PrintersSuite) TestDescribeBackupCompleted(c *C) {
	var b bytes.Buffer
	DescribeBackup(&b, completedBackup(), &Details{Resources: map[string][]string{
		"v1/ConfigMap": {"demo/settings", "demo/kube-root-ca.crt"}, "v1/Namespace": {"demo"}}}, t0.Add(time.Minute))
	DescribeEvents(&b, []corev1.Event{
		{Type: "Normal", Reason: "EndedPhase", Message: "Ended phase waitForBackup (WaitFor) in 11s: Velero Backup demo-b1-1a2b3c is Completed", Count: 1, LastTimestamp: *at(12)},
		{Type: "Normal", Reason: "StartedAction", Message: "Started action backup of blueprint nonadminbackup", Count: 1, LastTimestamp: *at(0)},
	}, t0.Add(time.Minute))
	golden(c, "describe-backup-completed", b.String())
	// What the issue asks of the timeline: each phase with its function,
	// state, start, duration, attempts and message.
	c.Check(b.String(), Matches, `(?s).*createBackup\s+CreateVeleroBackup\s+complete\s+\+0s\s+1s\s+2\s+created Velero Backup.*`)
	c.Check(b.String(), Matches, `(?s).*waitForBackup\s+WaitFor\s+complete\s+\+1s\s+11s\s+1\s+.*`)
}

func (s *PrintersSuite) TestDescribeBackupWaiting(c *C) {
	var b bytes.Buffer
	DescribeBackup(&b, waitingBackup(), nil, t0.Add(90*time.Second))
	golden(c, "describe-backup-waiting", b.String())
	c.Check(b.String(), Matches, `(?s).*Progress:\s+queue position 2; 20 of 40 items backed up; 1 of 3 volumes uploaded by the data mover\n.*`)
	c.Check(b.String(), Matches, `(?s).*waitForBackup\s+WaitFor\s+waiting\s+\+1s\s+1m29s….*`)
}

func (s *PrintersSuite) TestDescribeBackupFailed(c *C) {
	var b bytes.Buffer
	DescribeBackup(&b, failedBackup(), &Details{Unavailable: "the backup has no Velero Backup"}, t0.Add(time.Minute))
	golden(c, "describe-backup-failed", b.String())
}

func (s *PrintersSuite) TestDescribeRestore(c *C) {
	nar := &v1alpha1.NonAdminRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "demo", CreationTimestamp: *at(0)},
		Spec:       v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "b1"}},
		Status: v1alpha1.NonAdminRestoreStatus{Phase: v1alpha1.NonAdminPhaseCreated,
			Plan: &v1alpha1.PlanStatus{Action: "restore", Blueprint: "nonadminrestore", BlueprintGeneration: "3", State: v1alpha1.PlanComplete,
				StartTime: at(0), CompletionTime: at(6), Phases: []v1alpha1.PhaseStatus{
					{Name: "validate", Func: "ValidateRestoreSpec", State: v1alpha1.PhaseComplete, StartTime: at(0), CompletionTime: at(0), Attempts: 1},
					{Name: "waitForRestore", Func: "WaitFor", State: v1alpha1.PhaseComplete, StartTime: at(1), CompletionTime: at(6), Attempts: 1, Message: "Velero Restore demo-r1-aa is Completed"},
				}},
			VeleroRestore: &v1alpha1.VeleroRestore{Name: "demo-r1-aa", Namespace: "openshift-adp", Status: &velerov1.RestoreStatus{
				Phase: velerov1.RestorePhaseCompleted, StartTimestamp: at(1), CompletionTimestamp: at(5), Progress: &velerov1.RestoreProgress{TotalItems: 2, ItemsRestored: 2}}},
		},
	}
	var b bytes.Buffer
	DescribeRestore(&b, nar, &Details{Resources: map[string][]string{"v1/ConfigMap": {"demo/settings"}}}, t0.Add(time.Hour))
	golden(c, "describe-restore", b.String())
}

func (s *PrintersSuite) TestDescribeBSLAndRequest(c *C) {
	spec := &velerov1.BackupStorageLocationSpec{Provider: "aws", StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "demo", Prefix: "team-a"}},
		Config: map[string]string{"region": "us-east-1", "s3ForcePathStyle": "true"}, Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"}, Key: "cloud"}}
	nabsl := &v1alpha1.NonAdminBackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "demo", CreationTimestamp: *at(0)},
		Spec:       v1alpha1.NonAdminBackupStorageLocationSpec{BackupStorageLocationSpec: spec},
		Status: v1alpha1.NonAdminBackupStorageLocationStatus{Phase: v1alpha1.NonAdminPhaseNew,
			Plan: &v1alpha1.PlanStatus{Action: "create", Blueprint: "nonadminbackupstoragelocation", State: v1alpha1.PlanRunning, StartTime: at(0),
				Phases: []v1alpha1.PhaseStatus{{Name: "approval", Func: "RequestApproval", State: v1alpha1.PhaseWaiting, StartTime: at(0), Attempts: 1,
					Message: "waiting for a cluster admin to approve NonAdminBackupStorageLocationRequest demo-mine-77"}}},
			Conditions: []metav1.Condition{{Type: "ClusterAdminApproved", Status: metav1.ConditionFalse, Reason: "PendingApproval", Message: "waiting for approval"}}},
	}
	var b bytes.Buffer
	DescribeBSL(&b, nabsl, t0.Add(5*time.Minute))
	golden(c, "describe-bsl", b.String())

	req := &v1alpha1.NonAdminBackupStorageLocationRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-mine-77", Namespace: "openshift-adp", CreationTimestamp: *at(0)},
		Spec:       v1alpha1.NonAdminBackupStorageLocationRequestSpec{ApprovalDecision: v1alpha1.ApprovalPending},
		Status: v1alpha1.NonAdminBackupStorageLocationRequestStatus{Phase: "Pending",
			SourceNonAdminBSL: &v1alpha1.SourceNonAdminBSL{NACUUID: "demo-mine-77", Namespace: "demo", Name: "mine", RequestedSpec: spec}},
	}
	b.Reset()
	DescribeBSLRequest(&b, req)
	golden(c, "describe-bsl-request", b.String())
}

// printTable prints t as kubectl get would.
func printTable(c *C, t *metav1.Table, wide bool) string {
	var b bytes.Buffer
	c.Assert(printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(t, &b), IsNil)
	return b.String()
}

func (s *PrintersSuite) TestTables(c *C) {
	now := t0.Add(2 * time.Hour)
	nabs := &v1alpha1.NonAdminBackupList{Items: []v1alpha1.NonAdminBackup{*completedBackup(), *waitingBackup(), *failedBackup()}}
	golden(c, "get-backups", printTable(c, BackupTable(nabs, now), false))
	golden(c, "get-backups-wide", printTable(c, BackupTable(nabs, now), true))
	c.Check(printTable(c, BackupTable(nabs, now), false), Matches, `NAME\s+REQUEST-PHASE\s+VELERO-PHASE\s+PLAN-PHASE\s+CREATED\s+AGE\n`+
		`b1\s+Created\s+Completed\s+verify: complete\s+2026-11-23T09:59:59Z\s+120m\n(?s).*`)
	nars := &v1alpha1.NonAdminRestoreList{Items: []v1alpha1.NonAdminRestore{{
		ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "demo", CreationTimestamp: *at(0)},
		Spec:       v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "b1"}}}}}
	golden(c, "get-restores-wide", printTable(c, RestoreTable(nars, now), true))
}

// TestGetOutputFormats: -o yaml of one object prints it with its kind;
// -o name prints kind/name lines; a table when unset.
func (s *PrintersSuite) TestGetOutputFormats(c *C) {
	o, out, _ := testOptions(nil)
	o.ConfigFlags.Namespace = ptr.To("demo")
	g := addGetFlags(&cobra.Command{Use: "get"}, true)
	format := "yaml"
	g.print.OutputFormat = &format
	list := &v1alpha1.NonAdminBackupList{Items: []v1alpha1.NonAdminBackup{*completedBackup()}}
	c.Assert(g.printList(o, testScheme(c), list, BackupTable), IsNil)
	c.Check(out.String(), Matches, `(?s)apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\n.*name: b1\n.*`)
	out.Reset()
	format = "name"
	list.Items = append(list.Items, *waitingBackup())
	c.Assert(g.printList(o, testScheme(c), list, BackupTable), IsNil)
	c.Check(out.String(), Equals, "nonadminbackup.oadp.openshift.io/b1\nnonadminbackup.oadp.openshift.io/b2\n")
}

func (s *PrintersSuite) TestProgress(c *C) {
	pr := BackupProgress(waitingBackup())
	c.Check(pr.Ended, Equals, false)
	c.Check(ProgressLine(pr), Equals, "[3/4] waitForBackup (WaitFor) waiting · 20 of 40 items · 1 of 3 volumes uploaded · queue position 2 · "+
		"Velero Backup demo-b2-4d5e6f is InProgress: 20 of 40 items backed up")
	c.Check(ProgressBar(pr, 10), Equals, "[#####-----]")

	done := BackupProgress(completedBackup())
	c.Check(done.Ended, Equals, true)
	c.Check(done.Failure, Equals, "")
	c.Check(ProgressBar(done, 4), Equals, "[####]")

	bad := BackupProgress(failedBackup())
	c.Check(bad.Ended, Equals, true)
	c.Check(bad.Failure, Equals, "phase validate (ValidateBackupSpec) failed: spec.backupSpec.includedNamespaces: [other] names another namespace; a NonAdminBackup backs up its own namespace only")

	// A plan that completed while Velero's Backup ended PartiallyFailed is
	// not a success.
	partial := completedBackup()
	partial.Status.VeleroBackup.Status.Phase = velerov1.BackupPhasePartiallyFailed
	c.Check(BackupProgress(partial).Failure, Equals, "the Velero Backup ended PartiallyFailed")

	// Before the controller started the plan of the action.
	fresh := completedBackup()
	fresh.Status.Plan, fresh.Status.VeleroBackup = nil, nil
	c.Check(BackupProgress(fresh).Ended, Equals, false)
	c.Check(ProgressLine(BackupProgress(fresh)), Equals, "pending · waiting for the controller to start the plan")
}

// TestPlainProgressPrintsChangesOnly: off a terminal, one line per change.
func (s *PrintersSuite) TestPlainProgressPrintsChangesOnly(c *C) {
	var b bytes.Buffer
	r := &progressRenderer{w: &b}
	pr := BackupProgress(waitingBackup())
	r.show(pr, time.Second)
	r.show(pr, 2*time.Second)
	pr.Done = 30
	r.show(pr, 3*time.Second)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	c.Assert(lines, HasLen, 2)
	c.Check(lines[1], Matches, `\s+3s  \[3/4\] waitForBackup \(WaitFor\) waiting · 30 of 40 items.*`)

	b.Reset()
	t := &progressRenderer{w: &b, terminal: true}
	t.show(pr, time.Second)
	t.end()
	c.Check(b.String(), Matches, "\r\033\\[K\\[#+-*\\] 1s \\[3/4\\] waitForBackup.*\n")

	// Cut to the terminal's width: a wrapped line cannot be redrawn.
	b.Reset()
	t = &progressRenderer{w: &b, terminal: true, width: 40}
	t.show(pr, time.Second)
	c.Check(b.String(), Equals, "\r\033[K[##################------] 1s [3/4] wa…")
}

func testScheme(c *C) *runtime.Scheme {
	s, err := controllers.NewScheme()
	c.Assert(err, IsNil)
	return s
}

// testOptions returns Options over buffers and the controller-runtime fake
// client holding objs (narrow unit tests only: the e2e suite runs the
// plugin against the real stack).
func testOptions(c *C, objs ...client.Object) (*Options, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	o := NewOptions(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	o.Now = func() time.Time { return t0.Add(time.Hour) }
	o.PollInterval = time.Millisecond
	o.OADPNamespace = "openshift-adp"
	if c != nil {
		o.SetClient(fake.NewClientBuilder().WithScheme(testScheme(c)).WithObjects(objs...).
			WithStatusSubresource(&v1alpha1.NonAdminBackup{}, &v1alpha1.NonAdminRestore{}, &v1alpha1.NonAdminBackupStorageLocation{},
				&v1alpha1.NonAdminBackupStorageLocationRequest{}, &v1alpha1.NonAdminDownloadRequest{}).Build())
	}
	return o, &out, &errOut
}
