package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// The fixtures and helpers the suites share.

var update = flag.Bool("update", false, "rewrite the golden files of cli/testdata")

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
	c.Assert(err, IsNil, Commentf("run go test ./cli/ -update to create %s", path))
	c.Check(got, Equals, string(want), Commentf("%s differs: run go test ./cli/ -update and review the diff", path))
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
				{Type: "RestoreTested", Status: metav1.ConditionTrue, Reason: "RestoreTestSucceeded", Message: "Velero Backup demo-b1-1a2b3c restored into sandbox demo-rt-2a97516c: 3 of 3 items; RTO 4s"},
			},
			RestoreTest: &v1alpha1.RestoreTest{Time: *at(20), Result: v1alpha1.RestoreTestSucceeded, RTO: &metav1.Duration{Duration: 4 * time.Second},
				ItemsExpected: 3, ItemsRestored: 3, VeleroRestore: "demo-rt-b1-1a2b3c", Sandbox: "demo-rt-2a97516c",
				Message: "Velero Backup demo-b1-1a2b3c restored into sandbox demo-rt-2a97516c: 3 of 3 items; RTO 4s"},
		},
	}
}

// waitingBackup is a NAB queued behind others, Velero half way through.
func waitingBackup() *v1alpha1.NonAdminBackup {
	nab := completedBackup()
	nab.Status.RestoreTest = nil // tested only once completed
	nab.Status.Conditions = nab.Status.Conditions[:2]
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
	nab.Status.RestoreTest = nil // tested only once completed
	nab.Status.Conditions = nab.Status.Conditions[:2]
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

func testScheme(c *C) *runtime.Scheme {
	s, err := v1alpha1.NewScheme()
	c.Assert(err, IsNil)
	return s
}

// testOptions returns Options over buffers and the controller-runtime fake
// client holding objs (narrow unit tests only: the e2e suite runs the
// plugin against the real stack).
func testOptions(c *C, objs ...client.Object) (*Options, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	o := NewOptions(genericiooptions.IOStreams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut})
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
