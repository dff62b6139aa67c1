package phases_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

type ScheduleRunsSuite struct{}

var _ = Suite(&ScheduleRunsSuite{})

// scheduleRun is a Backup Velero Schedule vs took for namespace ns, its
// spec including namespaces.
func scheduleRun(name, uid, ns string, namespaces ...string) *velerov1.Backup {
	return &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: name, UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour)),
			Labels:            map[string]string{v1alpha1.NasOriginNACUUIDLabel: "u-nas", velerov1.ScheduleNameLabel: "vs"},
			Annotations:       map[string]string{v1alpha1.NasOriginNamespaceAnnotation: ns, v1alpha1.NasOriginNameAnnotation: "nightly"}},
		Spec:   velerov1.BackupSpec{IncludedNamespaces: namespaces},
		Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted},
	}
}

// scheduleFixture returns a scheme of the client-go, Velero and nacflow
// kinds, and the Enabled Velero Schedule vs (two days old, NACUUID u-nas,
// its last run a minute ago) running on cron.
func scheduleFixture(c *C, cron string) (*runtime.Scheme, *velerov1.Schedule) {
	sc := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
	c.Assert(velerov1.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	return sc, &velerov1.Schedule{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: "vs", Labels: map[string]string{v1alpha1.NasOriginNACUUIDLabel: "u-nas"},
		CreationTimestamp: metav1.NewTime(time.Now().Add(-48 * time.Hour))},
		Spec: velerov1.ScheduleSpec{Schedule: cron}, Status: velerov1.ScheduleStatus{Phase: velerov1.SchedulePhaseEnabled,
			LastBackup: &metav1.Time{Time: time.Now().Add(-time.Minute)}}}
}

// TestTakesOwnRunsThroughTheGuard: with the guarded clients, the schedule's
// run is claimed and becomes a NonAdminBackup of its namespace, linked in
// status; a run that names another namespace is not taken, and one whose
// spec the safety rule refuses is left alone, unclaimed.
func (s *ScheduleRunsSuite) TestTakesOwnRunsThroughTheGuard(c *C) {
	ctx := context.Background()
	sc, vs := scheduleFixture(c, "0 2 * * *")
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(vs,
		scheduleRun("vs-20261101020000", "uid-own", "tenant", "tenant"),
		scheduleRun("vs-20261102020000", "uid-wide", "tenant", "tenant", "other"),
		scheduleRun("vs-20261103020000", "uid-other", "other", "other"),
	).WithStatusSubresource(&v1alpha1.NonAdminBackup{}).Build()
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, phases.Options{})
	c.Assert(err, IsNil)
	fn, ok := reg.Get("SyncScheduleRuns")
	c.Assert(ok, Equals, true)
	nas := &v1alpha1.NonAdminSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "nightly"},
		Status: v1alpha1.NonAdminScheduleStatus{VeleroSchedule: &v1alpha1.VeleroSchedule{Name: "vs", Namespace: "oadp", NACUUID: "u-nas"}}}
	res, err := fn.Run(ctx, &engine.Operation{Object: nas, OADPNamespace: "oadp", UUID: "u-nas", Phase: "syncRuns"}, fn.NewArgs())
	c.Assert(err, IsNil)
	c.Check(res.Output, DeepEquals, map[string]string{"runs": "1"})
	c.Check(res.RecheckAfter > 0, Equals, true, Commentf("until the next run"))
	c.Check(nas.Status.NextRun, NotNil)
	c.Check(nas.Status.VeleroSchedule.Status.Phase, Equals, velerov1.SchedulePhaseEnabled)
	c.Assert(nas.Status.RecentBackups, HasLen, 1)
	c.Check(nas.Status.RecentBackups[0].Name, Equals, "nightly-20261101020000")

	nab := &v1alpha1.NonAdminBackup{}
	c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "nightly-20261101020000"}, nab), IsNil)
	c.Check(nab.Labels[v1alpha1.NonAdminScheduleLabel], Equals, "nightly")
	c.Assert(nab.Status.VeleroBackup, NotNil)
	c.Check(nab.Status.VeleroBackup.NACUUID, Equals, v1alpha1.NACUUIDOf("uid-own"))
	claimed := &velerov1.Backup{}
	c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "oadp", Name: "vs-20261101020000"}, claimed), IsNil)
	c.Check(claimed.Labels[v1alpha1.NabOriginNACUUIDLabel], Equals, v1alpha1.NACUUIDOf("uid-own"))
	c.Check(claimed.Annotations[v1alpha1.NabOriginNamespaceAnnotation], Equals, "tenant")
	for _, name := range []string{"vs-20261102020000", "vs-20261103020000"} {
		left := &velerov1.Backup{}
		c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "oadp", Name: name}, left), IsNil)
		c.Check(left.Labels[v1alpha1.NabOriginNACUUIDLabel], Equals, "", Commentf(name))
	}
	nabs := &v1alpha1.NonAdminBackupList{}
	c.Assert(cl.List(ctx, nabs), IsNil)
	c.Check(nabs.Items, HasLen, 1)

	// Once the run's NonAdminBackup has a restore test, the schedule tells
	// it on its next look, naming the run.
	c.Check(nas.Status.LastRestoreTest, IsNil)
	nab.Status.RestoreTest = &v1alpha1.RestoreTest{Time: metav1.Now(), Result: v1alpha1.RestoreTestSucceeded, RTO: &metav1.Duration{Duration: 3 * time.Second}}
	c.Assert(cl.Status().Update(ctx, nab), IsNil)
	_, err = fn.Run(ctx, &engine.Operation{Object: nas, OADPNamespace: "oadp", UUID: "u-nas", Phase: "syncRuns"}, fn.NewArgs())
	c.Assert(err, IsNil)
	c.Assert(nas.Status.LastRestoreTest, NotNil)
	c.Check(nas.Status.LastRestoreTest.Backup, Equals, "nightly-20261101020000")
	c.Check(nas.Status.LastRestoreTest.RTO.Duration, Equals, 3*time.Second)
}

// TestRetentionPrunes: with spec.retention keepLast 2, the schedule's two
// oldest completed runs are pruned (spec.deleteBackup on their
// NonAdminBackups, an event each, status.retention), except one a restore
// still uses; the admin's maxKeep bounds a wider policy.
func (s *ScheduleRunsSuite) TestRetentionPrunes(c *C) {
	ctx := context.Background()
	sc, vs := scheduleFixture(c, "*/1 * * * *")
	objs := []client.Object{vs}
	for i := range 5 {
		b := scheduleRun(fmt.Sprintf("vs-2026110102%02d00", i), fmt.Sprintf("uid-%d", i), "tenant", "tenant")
		b.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 1, 2, i, 0, 0, time.UTC))
		objs = append(objs, b)
	}
	// A restore of the oldest run, still running: that run is in use.
	objs = append(objs, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "r"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nightly-20261101020000"}}})
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(objs...).WithStatusSubresource(&v1alpha1.NonAdminBackup{}).Build()
	recorder := record.NewFakeRecorder(20)
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl, Recorder: recorder}, phases.Options{})
	c.Assert(err, IsNil)
	fn, _ := reg.Get("SyncScheduleRuns")
	nas := &v1alpha1.NonAdminSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "nightly"},
		Spec:   v1alpha1.NonAdminScheduleSpec{Schedule: "*/1 * * * *", Retention: &v1alpha1.ScheduleRetention{KeepLast: 2}},
		Status: v1alpha1.NonAdminScheduleStatus{VeleroSchedule: &v1alpha1.VeleroSchedule{Name: "vs", Namespace: "oadp", NACUUID: "u-nas"}}}
	op := &engine.Operation{Object: nas, OADPNamespace: "oadp", UUID: "u-nas", Phase: "syncRuns"}
	_, err = fn.Run(ctx, op, fn.NewArgs())
	c.Assert(err, IsNil)
	deleting := func() []string {
		var out []string
		for i := range 5 {
			nab := &v1alpha1.NonAdminBackup{}
			c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: fmt.Sprintf("nightly-2026110102%02d00", i)}, nab), IsNil)
			if nab.Spec.DeleteBackup {
				out = append(out, nab.Name)
			}
		}
		return out
	}
	c.Check(deleting(), DeepEquals, []string{"nightly-20261101020100", "nightly-20261101020200"}, Commentf("the oldest is in use"))
	c.Assert(nas.Status.Retention, NotNil)
	c.Check(nas.Status.Retention.Policy, Equals, "keepLast 2")
	c.Check(nas.Status.Retention.Kept, Equals, int32(3))
	c.Check(nas.Status.Retention.Pruned, Equals, int32(2))
	c.Check(nas.Status.Retention.LastPruned, DeepEquals, []string{"nightly-20261101020100", "nightly-20261101020200"})
	var pruneEvents []string
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, "PrunedBackup") {
			pruneEvents = append(pruneEvents, e)
		}
	}
	c.Assert(pruneEvents, HasLen, 2)
	c.Check(pruneEvents[0], Matches, `Normal PrunedBackup NonAdminBackup nightly-20261101020100 pruned by spec.retention \(keepLast 2\): .*`)

	// A look again prunes nothing more (the two go already).
	_, err = fn.Run(ctx, op, fn.NewArgs())
	c.Assert(err, IsNil)
	c.Check(nas.Status.Retention.Pruned, Equals, int32(2))

	// The admin's maxKeep 1 bounds keepLast 2: the newest stays, and the
	// in-use oldest.
	args := fn.NewArgs().(*phases.SyncScheduleRunsArgs)
	args.MaxKeep = 1
	_, err = fn.Run(ctx, op, args)
	c.Assert(err, IsNil)
	c.Check(deleting(), DeepEquals, []string{"nightly-20261101020100", "nightly-20261101020200", "nightly-20261101020300"})
	c.Check(nas.Status.Retention.Policy, Equals, "keepLast 2; at most 1 (the admin's maxKeep)")
}

// fixedQuota is a QuotaSource with one quota for every namespace.
type fixedQuota struct{ q *phases.CheckQuotaArgs }

func (f fixedQuota) Quota(context.Context, map[string]string) (*phases.CheckQuotaArgs, string, error) {
	return f.q, "quota-test", nil
}

// TestPausedAtQuota: a schedule whose next run would take its namespace past
// the admin's maxBackups is paused (its Velero Schedule, marked, with
// WithinQuota=False and a Warning event); a NAS spec change does not unpause
// it (CreateVeleroSchedule keeps the hold); room made by a deletion resumes
// it, and a NAS paused by its tenant stays paused.
func (s *ScheduleRunsSuite) TestPausedAtQuota(c *C) {
	ctx := context.Background()
	sc, vs := scheduleFixture(c, "*/5 * * * *")
	// Named as CreateVeleroSchedule names it, which updates it below.
	vs.Name = v1alpha1.NACObjectName("tenant", "nightly", "u-nas")
	objs := []client.Object{vs}
	for i := range 2 {
		b := scheduleRun(fmt.Sprintf("vs-2026110102%02d00", i), fmt.Sprintf("uid-%d", i), "tenant", "tenant")
		b.Labels[velerov1.ScheduleNameLabel] = vs.Name
		objs = append(objs, b)
	}
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(objs...).WithStatusSubresource(&v1alpha1.NonAdminBackup{}).Build()
	rec := record.NewFakeRecorder(100)
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl, Recorder: rec},
		phases.Options{Quotas: fixedQuota{&phases.CheckQuotaArgs{Quota: phases.Quota{MaxBackups: 3}}}})
	c.Assert(err, IsNil)
	fn, _ := reg.Get("SyncScheduleRuns")
	nas := &v1alpha1.NonAdminSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "nightly", Generation: 1},
		Spec:   v1alpha1.NonAdminScheduleSpec{Schedule: "*/5 * * * *"},
		Status: v1alpha1.NonAdminScheduleStatus{VeleroSchedule: &v1alpha1.VeleroSchedule{Name: vs.Name, Namespace: "oadp", NACUUID: "u-nas"}}}
	look := func() {
		_, err := fn.Run(ctx, &engine.Operation{Object: nas, OADPNamespace: "oadp", UUID: "u-nas", Phase: "syncRuns"}, fn.NewArgs())
		c.Assert(err, IsNil)
	}
	veleroSchedule := func() *velerov1.Schedule {
		got := &velerov1.Schedule{}
		c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "oadp", Name: vs.Name}, got), IsNil)
		return got
	}
	// events returns the events emitted since it was last called.
	events := func() string { return strings.Join(recorded(rec), "\n") }
	condition := func() *metav1.Condition {
		for i := range nas.Status.Conditions {
			if nas.Status.Conditions[i].Type == v1alpha1.ConditionWithinQuota {
				return &nas.Status.Conditions[i]
			}
		}
		return nil
	}
	// Two runs of three: room for the next.
	look()
	c.Check(veleroSchedule().Spec.Paused, Equals, false)
	c.Assert(condition(), NotNil)
	c.Check(condition().Status, Equals, metav1.ConditionTrue)
	c.Check(nas.Status.NextRun, NotNil)
	c.Check(events(), Not(Matches), `(?s).*Quota.*`)

	// A third backup of the namespace (not the schedule's): the next run
	// would be the fourth.
	c.Assert(cl.Create(ctx, &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "manual"}}), IsNil)
	look()
	got := veleroSchedule()
	c.Check(got.Spec.Paused, Equals, true)
	c.Check(got.Annotations[v1alpha1.QuotaPausedAnnotation], Equals, "true")
	c.Assert(condition(), NotNil)
	c.Check(condition().Status, Equals, metav1.ConditionFalse)
	c.Check(condition().Reason, Equals, v1alpha1.ReasonQuotaExceeded)
	c.Check(condition().Message, Matches, `schedule paused until there is room: quota exceeded: namespace tenant holds 3 backups, the most its quota allows \(maxBackups 3\).*`)
	c.Check(nas.Status.NextRun, IsNil, Commentf("no run while paused"))
	c.Check(events(), Matches, `Warning QuotaExceeded schedule paused: its next run would pass the quota: quota exceeded: namespace tenant holds 3 backups[^\n]*`)

	// The tenant edits the schedule: CreateVeleroSchedule keeps the hold.
	create, _ := reg.Get("CreateVeleroSchedule")
	nas.Status.VeleroSchedule.Spec = &velerov1.ScheduleSpec{Schedule: "*/10 * * * *"}
	_, err = create.Run(ctx, &engine.Operation{Object: nas, OADPNamespace: "oadp", UUID: "u-nas", Phase: "createSchedule"}, create.NewArgs())
	c.Assert(err, IsNil)
	c.Check(veleroSchedule().Spec.Paused, Equals, true)
	c.Check(veleroSchedule().Spec.Schedule, Equals, "*/10 * * * *")

	// Deleting the manual backup makes room: resumed.
	c.Assert(cl.Delete(ctx, &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "manual"}}), IsNil)
	look()
	got = veleroSchedule()
	c.Check(got.Spec.Paused, Equals, false)
	c.Check(got.Annotations[v1alpha1.QuotaPausedAnnotation], Equals, "")
	c.Check(condition().Status, Equals, metav1.ConditionTrue)
	c.Check(events(), Equals, "Normal ScheduleResumed schedule resumed: the namespace has room for its next run under its quota")

	// Paused at the quota again, then by its tenant: room does not resume it.
	c.Assert(cl.Create(ctx, &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "manual"}}), IsNil)
	look()
	c.Check(veleroSchedule().Spec.Paused, Equals, true)
	nas.Spec.Paused = true
	c.Assert(cl.Delete(ctx, &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "manual"}}), IsNil)
	look()
	got = veleroSchedule()
	c.Check(got.Spec.Paused, Equals, true, Commentf("the tenant's own pause stays"))
	c.Check(got.Annotations[v1alpha1.QuotaPausedAnnotation], Equals, "", Commentf("no longer held by the quota"))

	// A new schedule of the namespace at its quota is created paused: no
	// run slips in before the first look.
	c.Assert(cl.Create(ctx, &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "manual"}}), IsNil)
	made := createHourly(c, cl, create)
	c.Check(made.Spec.Paused, Equals, true)
	c.Check(made.Annotations[v1alpha1.QuotaPausedAnnotation], Equals, "true")
}

// runTurns is a TurnKeeper whose scheduled runs get decision d; it records
// the requests.
type runTurns struct {
	d    phases.TurnDecision
	reqs []phases.TurnRequest
}

func (t *runTurns) Turn(context.Context, phases.TurnRequest) (phases.TurnDecision, error) {
	return phases.TurnDecision{}, fmt.Errorf("a schedule asks for its runs' turns only")
}

func (t *runTurns) RunTurn(_ context.Context, req phases.TurnRequest) (phases.TurnDecision, error) {
	t.reqs = append(t.reqs, req)
	return t.d, nil
}

// TestRunsTakeTurnsInShare: with a fair share of Velero's queue, a
// schedule's Velero Schedule stays paused between runs (marked); its due run
// asks for its turn, waits with WithinShare=False (one event, a recheck
// within a minute, the next run still shown) and, admitted, the schedule is
// resumed for it with no pending skip; once Velero took the run it is paused
// again. The tenant's own pause wins; with no share the hold is released.
// A new schedule is created paused.
func (s *ScheduleRunsSuite) TestRunsTakeTurnsInShare(c *C) {
	ctx := context.Background()
	sc, vs := scheduleFixture(c, "*/5 * * * *")
	vs.Name = v1alpha1.NACObjectName("tenant", "nightly", "u-nas")
	lastRun := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	vs.Status.LastBackup = &metav1.Time{Time: lastRun}
	cl := fake.NewClientBuilder().WithScheme(sc).WithObjects(vs).WithStatusSubresource(&v1alpha1.NonAdminBackup{}).Build()
	rec := record.NewFakeRecorder(100)
	turns := &runTurns{d: phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 1}}
	registry := func(max int) *engine.Registry {
		reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl, Recorder: rec, Turns: turns}, phases.Options{MaxBackupsInVelero: max})
		c.Assert(err, IsNil)
		return reg
	}
	fn, _ := registry(2).Get("SyncScheduleRuns")
	nas := &v1alpha1.NonAdminSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "nightly", Generation: 1},
		Spec:   v1alpha1.NonAdminScheduleSpec{Schedule: "*/5 * * * *"},
		Status: v1alpha1.NonAdminScheduleStatus{VeleroSchedule: &v1alpha1.VeleroSchedule{Name: vs.Name, Namespace: "oadp", NACUUID: "u-nas"}}}
	look := func() engine.Result {
		res, err := fn.Run(ctx, &engine.Operation{Object: nas, OADPNamespace: "oadp", UUID: "u-nas", Phase: "syncRuns"}, fn.NewArgs())
		c.Assert(err, IsNil)
		return res
	}
	veleroSchedule := func() *velerov1.Schedule {
		got := &velerov1.Schedule{}
		c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "oadp", Name: vs.Name}, got), IsNil)
		return got
	}
	events := func() []string { return recorded(rec) }
	condition := func() metav1.Condition {
		for _, cond := range nas.Status.Conditions {
			if cond.Type == v1alpha1.ConditionWithinShare {
				return cond
			}
		}
		return metav1.Condition{}
	}
	due := lastRun.Truncate(5 * time.Minute).Add(5 * time.Minute).UTC()

	// Due, and the namespace has its two backups in Velero: the run waits.
	res := look()
	got := veleroSchedule()
	c.Check(got.Spec.Paused, Equals, true)
	c.Check(got.Annotations[v1alpha1.SharePausedAnnotation], Equals, "true")
	c.Check(condition().Status, Equals, metav1.ConditionFalse)
	c.Check(condition().Reason, Equals, v1alpha1.ReasonWaitingForTurn)
	c.Check(condition().Message, Equals, "the run due at "+due.Format(time.RFC3339)+
		" is waiting for a turn in Velero's queue: namespace tenant has 2 of its 2 backups in Velero; this is 1st of 1 waiting in tenant")
	c.Check(events(), DeepEquals, []string{"Normal RunWaitsForTurn " + condition().Message})
	c.Check(res.RecheckAfter > 0 && res.RecheckAfter <= time.Minute+time.Second, Equals, true, Commentf("%s", res.RecheckAfter))
	c.Check(nas.Status.NextRun, NotNil, Commentf("the waiting run is still shown"))
	c.Assert(turns.reqs, HasLen, 1)
	c.Check(turns.reqs[0].Created.Equal(due), Equals, true, Commentf("due %s, asked %s", due, turns.reqs[0].Created))
	turns.reqs[0].Created = time.Time{}
	c.Check(turns.reqs[0], DeepEquals, phases.TurnRequest{Namespace: "tenant", Name: "nightly", Velero: vs.Name, Max: 2})
	look()
	c.Check(events(), HasLen, 0, Commentf("told once"))

	// Its turn: resumed for the run, with no skip pending.
	turns.d = phases.TurnDecision{Admitted: true, InVelero: 1}
	look()
	got = veleroSchedule()
	c.Check(got.Spec.Paused, Equals, false)
	c.Check(got.Annotations[v1alpha1.SharePausedAnnotation], Equals, "")
	c.Assert(got.Spec.SkipImmediately, NotNil)
	c.Check(*got.Spec.SkipImmediately, Equals, false)
	c.Check(condition().Status, Equals, metav1.ConditionTrue)
	c.Check(condition().Reason, Equals, v1alpha1.ReasonRunsTakeTurns)

	// Velero took the run: paused until the next is due, which asks again.
	got.Status.LastBackup = &metav1.Time{Time: time.Now()}
	c.Assert(cl.Update(ctx, got), IsNil)
	asked := len(turns.reqs)
	look()
	got = veleroSchedule()
	c.Check(got.Spec.Paused, Equals, true)
	c.Check(got.Annotations[v1alpha1.SharePausedAnnotation], Equals, "true")
	c.Check(condition().Status, Equals, metav1.ConditionTrue)
	c.Check(turns.reqs, HasLen, asked, Commentf("no turn asked before the run is due"))

	// The tenant pauses it: the share lets go, the tenant's pause stays.
	nas.Spec.Paused = true
	look()
	got = veleroSchedule()
	c.Check(got.Spec.Paused, Equals, true)
	c.Check(got.Annotations[v1alpha1.SharePausedAnnotation], Equals, "")

	// No share (max 0): a held schedule is released, the condition gone.
	nas.Spec.Paused = false
	look()
	c.Check(veleroSchedule().Annotations[v1alpha1.SharePausedAnnotation], Equals, "true")
	fn, _ = registry(0).Get("SyncScheduleRuns")
	look()
	got = veleroSchedule()
	c.Check(got.Spec.Paused, Equals, false)
	c.Check(got.Annotations[v1alpha1.SharePausedAnnotation], Equals, "")
	c.Check(condition().Type, Equals, "", Commentf("WithinShare removed"))

	// A new schedule under a share is created paused, marked.
	create, _ := registry(2).Get("CreateVeleroSchedule")
	made := createHourly(c, cl, create)
	c.Check(made.Spec.Paused, Equals, true)
	c.Check(made.Annotations[v1alpha1.SharePausedAnnotation], Equals, "true")
}

// createHourly runs create (CreateVeleroSchedule) for a new hourly
// NonAdminSchedule of namespace tenant and returns the Velero Schedule it
// made.
func createHourly(c *C, cl client.Client, create engine.Func) *velerov1.Schedule {
	ctx := context.Background()
	second := &v1alpha1.NonAdminSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "hourly"},
		Status: v1alpha1.NonAdminScheduleStatus{VeleroSchedule: &v1alpha1.VeleroSchedule{Spec: &velerov1.ScheduleSpec{Schedule: "0 * * * *"}}}}
	res, err := create.Run(ctx, &engine.Operation{Object: second, OADPNamespace: "oadp", UUID: "u-hourly", Phase: "createSchedule"}, create.NewArgs())
	c.Assert(err, IsNil)
	made := &velerov1.Schedule{}
	c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: "oadp", Name: res.Output["name"]}, made), IsNil)
	return made
}

// recorded returns the events rec holds, oldest first, emptying it.
func recorded(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
