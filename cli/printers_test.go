package cli

import (
	"bytes"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type PrintersSuite struct{}

var _ = Suite(&PrintersSuite{})

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

// A compacted plan (no phase start times, single attempts as 0) tells the
// same timeline: each phase started when the one before it ended.
func (s *PrintersSuite) TestDescribeCompactedPlan(c *C) {
	var whole, compacted bytes.Buffer
	DescribeBackup(&whole, completedBackup(), nil, t0.Add(time.Minute))
	nab := completedBackup()
	p := nab.Status.Plan
	p.Spec, p.Compacted = nil, true
	for _, ph := range append([]*v1alpha1.PhaseStatus{p.DeferPhase}, pointers(p.Phases)...) {
		ph.StartTime, ph.Output = nil, nil
		if ph.Attempts == 1 {
			ph.Attempts = 0
		}
	}
	DescribeBackup(&compacted, nab, nil, t0.Add(time.Minute))
	c.Check(compacted.String(), Equals, whole.String())
	c.Check(compacted.String(), Matches, `(?s).*verify\s+VerifyBackupContents\s+complete\s+\+12s\s+2s\s+1\s+.*`)
}

// A plan that completed with every phase plain keeps only its summary:
// describe says so instead of a timeline, and --wait ends on "complete".
func (s *PrintersSuite) TestDescribeSummaryPlan(c *C) {
	nab := completedBackup()
	p := nab.Status.Plan
	p.Spec, p.Compacted, p.Phases, p.DeferPhase, p.Current = nil, true, nil, nil, "finalStatus: complete"
	var b bytes.Buffer
	DescribeBackup(&b, nab, nil, t0.Add(time.Minute))
	c.Check(b.String(), Matches, `(?s).*Plan:\s+backup \(blueprint nonadminbackup, \S+\): complete, \S+\n`+
		`\s+Started:.*\n\s+Completed:.*\n\s+Phases:\s+every phase completed at its first attempt \(the list is not kept; last: finalStatus: complete\)\n.*`)
	c.Check(strings.Contains(b.String(), "PHASE"), Equals, false)
	pr := BackupProgress(nab)
	c.Check(pr.Ended, Equals, true)
	c.Check(pr.Failure, Equals, "")
	c.Check(strings.HasPrefix(ProgressLine(pr), "complete"), Equals, true, Commentf("%s", ProgressLine(pr)))
	c.Check(ProgressBar(pr, 4), Equals, "[####]")
}

func pointers[T any](l []T) []*T {
	out := make([]*T, len(l))
	for i := range l {
		out[i] = &l[i]
	}
	return out
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
			Conditions: []metav1.Condition{{Type: "ClusterAdminApproved", Status: metav1.ConditionFalse, Reason: "PendingApproval", Message: "waiting for approval"}},
			// Linked to its request while pending, as RequestApproval does.
			VeleroBackupStorageLocation: &v1alpha1.VeleroBackupStorageLocation{NACUUID: "demo-mine-77", Name: "demo-mine-77", Namespace: "openshift-adp"}},
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
