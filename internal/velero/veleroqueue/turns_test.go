package veleroqueue_test

import (
	"context"
	"strconv"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
	"github.com/nacflow/nacflow/phases"
)

// TurnsSuite: unit tests of Turns, the fair share of Velero's queue,
// on a fake cache: the limit, the order within a namespace, the round-robin
// across namespaces, and the decision rebuilt from the cache alone.
type TurnsSuite struct{}

var _ = Suite(&TurnsSuite{})

const turnsOADP = "oadp"

var turnsBase = time.Unix(1_700_000_000, 0)

// turnWaiter returns a NonAdminBackup of ns created at turnsBase+at seconds
// whose plan waits in WaitForTurn with limit, showing position shown.
func turnWaiter(ns, name string, at, limit, shown int) *v1alpha1.NonAdminBackup {
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name),
		CreationTimestamp: metav1.NewTime(turnsBase.Add(time.Duration(at) * time.Second))}}
	out := map[string]string{"limit": strconv.Itoa(limit)}
	if shown > 0 {
		out["position"] = strconv.Itoa(shown)
	}
	nab.Status.Plan = &v1alpha1.PlanStatus{Action: "backup", State: v1alpha1.PlanRunning, Phases: []v1alpha1.PhaseStatus{
		{Name: "validate", Func: "ValidateBackupSpec", State: v1alpha1.PhaseComplete},
		{Name: "waitForTurn", Func: "WaitForTurn", State: v1alpha1.PhaseWaiting, Output: out},
		{Name: "createBackup", Func: "CreateVeleroBackup", State: v1alpha1.PhasePending},
	}}
	return nab
}

// backupName is the Velero Backup nab creates once admitted.
func backupName(nab *v1alpha1.NonAdminBackup) string {
	return v1alpha1.NACObjectName(nab.Namespace, nab.Name, v1alpha1.NACUUIDOf(nab.UID))
}

// tenantBackup returns a Velero Backup nacflow made for namespace ns, in
// Velero phase phase.
func tenantBackup(ns, name string, phase velerov1.BackupPhase) *velerov1.Backup {
	b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: turnsOADP, Name: name,
		Labels:      map[string]string{v1alpha1.OADPLabel: v1alpha1.OADPLabelValue},
		Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: ns}}}
	b.Status.Phase = phase
	return b
}

// request returns the TurnRequest of nab with limit max.
func request(nab *v1alpha1.NonAdminBackup, max int) phases.TurnRequest {
	return phases.TurnRequest{Namespace: nab.Namespace, Name: nab.Name, Created: nab.CreationTimestamp.Time, Velero: backupName(nab), Max: max}
}

func turn(c *C, t *veleroqueue.Turns, nab *v1alpha1.NonAdminBackup, max int) phases.TurnDecision {
	d, err := t.Turn(context.Background(), request(nab, max))
	c.Assert(err, IsNil)
	return d
}

func wake(c *C, t *veleroqueue.Turns, ns string) []string {
	keys, err := t.Wake(context.Background(), "NonAdminBackup", ns)
	c.Assert(err, IsNil)
	var out []string
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}

// A namespace at its limit waits; its waiters go in creation order, one
// admission at a time, each counted before the cache shows its Backup; an
// admission asked again (a failed status write) is given again.
func (s *TurnsSuite) TestLimitAndOrderWithinNamespace(c *C) {
	w1, w2, w3 := turnWaiter("a", "w1", 1, 2, 0), turnWaiter("a", "w2", 2, 2, 0), turnWaiter("a", "w3", 3, 2, 0)
	running, queued := tenantBackup("a", "a-0", velerov1.BackupPhaseInProgress), tenantBackup("a", "a-1", velerov1.BackupPhaseQueued)
	cl := veleroqueue.NewTurnsFakeClient(testScheme, w1, w2, w3, running, queued,
		tenantBackup("a", "a-old", velerov1.BackupPhaseCompleted),                             // finished: not in Velero's queue
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: turnsOADP, Name: "admins"}}) // the admin's: nobody's share
	t := veleroqueue.NewTurns(cl, turnsOADP)

	c.Check(turn(c, t, w2, 2), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 2, Waiting: 3})
	c.Check(turn(c, t, w1, 2), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 3})
	c.Check(wake(c, t, ""), HasLen, 0, Commentf("no namespace has room"))

	// Velero finishes one: w1 (the oldest) is next, not w2.
	running.Status.Phase = velerov1.BackupPhaseCompleted
	c.Assert(cl.Update(context.Background(), running), IsNil)
	c.Check(wake(c, t, ""), DeepEquals, []string{"a/w1"})
	c.Check(turn(c, t, w2, 2), DeepEquals, phases.TurnDecision{InVelero: 1, Position: 2, Waiting: 3})
	c.Check(turn(c, t, w1, 2), DeepEquals, phases.TurnDecision{Admitted: true, InVelero: 1})
	// The cache shows neither w1's Backup nor its status yet: w1 still
	// counts, and no longer waits.
	c.Check(turn(c, t, w2, 2), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 2})
	c.Check(turn(c, t, w1, 2).Admitted, Equals, true, Commentf("asked again after a failed status write"))
	// A higher limit of w2's own plan lets it go.
	c.Check(turn(c, t, w2, 3), DeepEquals, phases.TurnDecision{Admitted: true, InVelero: 2})
}

// Namespaces with room go round-robin: fewest in Velero first, then the one
// whose first waiter is older; each admission counts at once, so the turns
// alternate whichever worker asks first.
func (s *TurnsSuite) TestRoundRobinAcrossNamespaces(c *C) {
	a1, a2 := turnWaiter("a", "a1", 1, 2, 0), turnWaiter("a", "a2", 2, 2, 0)
	b1, b2 := turnWaiter("b", "b1", 5, 2, 0), turnWaiter("b", "b2", 6, 2, 0)
	cl := veleroqueue.NewTurnsFakeClient(testScheme, a1, a2, b1, b2, tenantBackup("a", "a-0", velerov1.BackupPhaseInProgress))
	t := veleroqueue.NewTurns(cl, turnsOADP)

	// a has 1 in Velero, b none: b first, though a's waiter is older.
	c.Check(turn(c, t, a1, 2), DeepEquals, phases.TurnDecision{InVelero: 1, Position: 1, Waiting: 2, OtherFirst: true})
	c.Check(wake(c, t, ""), DeepEquals, []string{"b/b1"})
	c.Check(turn(c, t, b2, 2).Admitted, Equals, false, Commentf("b1 before b2"))
	c.Check(turn(c, t, b1, 2).Admitted, Equals, true)
	// 1 each: a's first waiter is older.
	c.Check(wake(c, t, ""), DeepEquals, []string{"a/a1"})
	c.Check(turn(c, t, b2, 2), DeepEquals, phases.TurnDecision{InVelero: 1, Position: 1, Waiting: 1, OtherFirst: true})
	c.Check(turn(c, t, a1, 2).Admitted, Equals, true)
	// a is full (2 of 2); b has room.
	c.Check(wake(c, t, ""), DeepEquals, []string{"b/b2"})
	c.Check(turn(c, t, a2, 2), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 1})
	c.Check(turn(c, t, b2, 2).Admitted, Equals, true)
	c.Check(wake(c, t, ""), HasLen, 0)
}

// After a restart the ledger is empty: the decision follows from the cache
// alone. A NAB whose Backup exists (created before its status write was
// lost) is admitted again and no longer counts as waiting; the Backups it
// and the others made count against the namespace; scheduled runs count,
// the admin's own Backups do not.
func (s *TurnsSuite) TestRestartRebuildsFromCache(c *C) {
	w1, w2, w3 := turnWaiter("a", "w1", 1, 2, 0), turnWaiter("a", "w2", 2, 2, 0), turnWaiter("a", "w3", 3, 2, 0)
	made := tenantBackup("a", backupName(w1), velerov1.BackupPhaseNew)
	run := tenantBackup("", "a-schedule-run", velerov1.BackupPhaseQueued)
	run.Annotations = map[string]string{v1alpha1.NasOriginNamespaceAnnotation: "a"}
	cl := veleroqueue.NewTurnsFakeClient(testScheme, w1, w2, w3, made, run,
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: turnsOADP, Name: "admins",
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "a"}}}) // no OADP label: not nacflow's
	for range 2 { // two controllers in a row decide the same
		t := veleroqueue.NewTurns(cl, turnsOADP)
		c.Check(turn(c, t, w1, 2), DeepEquals, phases.TurnDecision{Admitted: true})
		c.Check(turn(c, t, w3, 2), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 2, Waiting: 2})
		c.Check(turn(c, t, w2, 2), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 2})
		c.Check(wake(c, t, ""), HasLen, 0)
	}
	// The scheduled run ends: w2's turn.
	run.Status.Phase = velerov1.BackupPhaseFailed
	c.Assert(cl.Update(context.Background(), run), IsNil)
	t := veleroqueue.NewTurns(cl, turnsOADP)
	c.Check(wake(c, t, ""), DeepEquals, []string{"a/w2"})
	c.Check(turn(c, t, w2, 2).Admitted, Equals, true)
}

// An admission the cache never shows (its create failed for good) stops
// holding its namespace's place after a minute.
func (s *TurnsSuite) TestLostAdmissionExpires(c *C) {
	w1, w2 := turnWaiter("a", "w1", 1, 1, 0), turnWaiter("a", "w2", 2, 1, 0)
	cl := veleroqueue.NewTurnsFakeClient(testScheme, w1, w2)
	now := turnsBase
	t := veleroqueue.NewTurns(cl, turnsOADP)
	t.Now = func() time.Time { return now }
	c.Check(turn(c, t, w1, 1).Admitted, Equals, true)
	c.Check(turn(c, t, w2, 1).Admitted, Equals, false)
	now = now.Add(59 * time.Second)
	c.Check(turn(c, t, w2, 1).Admitted, Equals, false)
	now = now.Add(2 * time.Second)
	// w1 shows as waiting still (its plan was never written): it goes
	// first again.
	c.Check(turn(c, t, w2, 1), DeepEquals, phases.TurnDecision{Position: 2, Waiting: 2})
	c.Check(turn(c, t, w1, 1).Admitted, Equals, true)
}

// Wake names, besides the next turn, the waiters of the namespace that
// changed whose shown position is stale (phases.PositionStale): not every
// waiter after each admission.
func (s *TurnsSuite) TestWakeRefreshesStalePositionsOnly(c *C) {
	var objs []client.Object
	for i := range 12 {
		// Each shows the place it had before one ahead of it left.
		objs = append(objs, turnWaiter("a", "w"+strconv.Itoa(10+i), i, 2, i+2))
	}
	objs = append(objs, tenantBackup("a", "a-0", velerov1.BackupPhaseInProgress), tenantBackup("a", "a-1", velerov1.BackupPhaseInProgress))
	t := veleroqueue.NewTurns(veleroqueue.NewTurnsFakeClient(testScheme, objs...), turnsOADP)
	// Places 1-5 are exact (shown 2-6: stale); 6-12 shown 7-13 are within
	// a third.
	c.Check(wake(c, t, "a"), DeepEquals, []string{"a/w10", "a/w11", "a/w12", "a/w13", "a/w14"})
	c.Check(wake(c, t, "b"), HasLen, 0)
}

// restoreWaiter returns a NonAdminRestore of ns created at turnsBase+at
// seconds whose plan waits in WaitForTurn with limit, showing position
// shown.
func restoreWaiter(ns, name string, at, limit, shown int) *v1alpha1.NonAdminRestore {
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("r/" + ns + "/" + name),
		CreationTimestamp: metav1.NewTime(turnsBase.Add(time.Duration(at) * time.Second))}}
	nar.Status.Plan = &v1alpha1.PlanStatus{Action: "restore", State: v1alpha1.PlanRunning, Phases: []v1alpha1.PhaseStatus{
		{Name: "validate", Func: "ValidateRestoreSpec", State: v1alpha1.PhaseComplete},
		{Name: "waitForTurn", Func: "WaitForTurn", State: v1alpha1.PhaseWaiting, Output: map[string]string{"limit": strconv.Itoa(limit), "position": strconv.Itoa(shown)}},
		{Name: "createRestore", Func: "CreateVeleroRestore", State: v1alpha1.PhasePending},
	}}
	return nar
}

// tenantRestore returns a Velero Restore nacflow made for namespace ns.
func tenantRestore(ns, name string, phase velerov1.RestorePhase) *velerov1.Restore {
	r := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: turnsOADP, Name: name,
		Labels:      map[string]string{v1alpha1.OADPLabel: v1alpha1.OADPLabelValue},
		Annotations: map[string]string{v1alpha1.NarOriginNamespaceAnnotation: ns}}}
	r.Status.Phase = phase
	return r
}

func restoreRequest(nar *v1alpha1.NonAdminRestore, max int) phases.TurnRequest {
	return phases.TurnRequest{Kind: "NonAdminRestore", Namespace: nar.Namespace, Name: nar.Name, Created: nar.CreationTimestamp.Time,
		Velero: v1alpha1.NACObjectName(nar.Namespace, nar.Name, v1alpha1.NACUUIDOf(nar.UID)), Max: max}
}

// Velero's restore queue is a lane of its own: a namespace's unfinished
// Velero Restores count against its restores' share, never its backups',
// and the other way round; the restore waiters go round-robin as backups
// do; Wake names restore waiters for NonAdminRestore only; a kind that
// waits for no turn is an error.
func (s *TurnsSuite) TestRestoreLane(c *C) {
	r1, r2, r3 := restoreWaiter("a", "r1", 1, 2, 1), restoreWaiter("a", "r2", 2, 2, 2), restoreWaiter("a", "r3", 3, 2, 3)
	b1 := restoreWaiter("b", "b1", 9, 2, 1)
	nab := turnWaiter("a", "w1", 1, 2, 0)
	cl := veleroqueue.NewTurnsFakeClient(testScheme, r1, r2, r3, b1, nab,
		tenantRestore("a", "a-r0", velerov1.RestorePhaseInProgress), tenantRestore("a", "a-r1", velerov1.RestorePhaseNew),
		tenantRestore("a", "a-old", velerov1.RestorePhaseCompleted),
		tenantBackup("b", "b-0", velerov1.BackupPhaseInProgress), tenantBackup("b", "b-1", velerov1.BackupPhaseInProgress))
	t := veleroqueue.NewTurns(cl, turnsOADP)
	ctx := context.Background()

	d, err := t.Turn(ctx, restoreRequest(r1, 2))
	c.Assert(err, IsNil)
	c.Check(d, DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 3}, Commentf("a's two restores fill its share"))
	// b's two Velero Backups do not count against its restores.
	d, err = t.Turn(ctx, restoreRequest(b1, 2))
	c.Assert(err, IsNil)
	c.Check(d, DeepEquals, phases.TurnDecision{Admitted: true})
	// a's two Velero Restores do not count against its backups.
	c.Check(turn(c, t, nab, 2), DeepEquals, phases.TurnDecision{Admitted: true})

	keys, err := t.Wake(ctx, "NonAdminRestore", "a")
	c.Assert(err, IsNil)
	c.Check(keys, HasLen, 0, Commentf("a is full"))
	running := tenantRestore("a", "a-r0", velerov1.RestorePhaseCompleted)
	got := &velerov1.Restore{}
	c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: turnsOADP, Name: "a-r0"}, got), IsNil)
	running.ResourceVersion = got.ResourceVersion
	c.Assert(cl.Update(ctx, running), IsNil)
	keys, err = t.Wake(ctx, "NonAdminRestore", "a")
	c.Assert(err, IsNil)
	c.Check(keys, DeepEquals, []types.NamespacedName{{Namespace: "a", Name: "r1"}})
	d, err = t.Turn(ctx, restoreRequest(r2, 2))
	c.Assert(err, IsNil)
	c.Check(d.Admitted, Equals, false, Commentf("r1 goes first"))
	d, err = t.Turn(ctx, restoreRequest(r1, 2))
	c.Assert(err, IsNil)
	c.Check(d, DeepEquals, phases.TurnDecision{Admitted: true, InVelero: 1})

	_, err = t.Turn(ctx, phases.TurnRequest{Kind: "NonAdminSchedule", Namespace: "a", Name: "s", Velero: "x", Max: 1})
	c.Check(err, ErrorMatches, `NonAdminSchedule operations wait for no turn in Velero's queues`)
	_, err = t.Wake(ctx, "NonAdminDownloadRequest", "a")
	c.Check(err, NotNil)
}

// scheduleRun returns the TurnRequest of the run of Velero Schedule sched
// (of NonAdminSchedule name in ns) that fell due at turnsBase+at seconds.
func scheduleRun(ns, name, sched string, at, max int) phases.TurnRequest {
	return phases.TurnRequest{Namespace: ns, Name: name, Created: turnsBase.Add(time.Duration(at) * time.Second), Velero: sched, Max: max}
}

func runTurn(c *C, t *veleroqueue.Turns, req phases.TurnRequest) phases.TurnDecision {
	d, err := t.RunTurn(context.Background(), req)
	c.Assert(err, IsNil)
	return d
}

// A schedule's due run takes a turn as a NonAdminBackup created when it fell
// due would: it waits while the namespace is full or an older waiter of its
// own is first; admitted, it holds a place (for the runs of the namespace's
// other schedules and for its NonAdminBackups) until Velero's Backup of that
// schedule, made since the admission, is in the cache — or the admission
// expires unused.
func (s *TurnsSuite) TestScheduledRunsTakeTurns(c *C) {
	now := turnsBase.Add(100 * time.Second)
	w := turnWaiter("a", "w", 50, 2, 0) // waits since before the runs fell due
	inFlight := tenantBackup("a", "a-0", velerov1.BackupPhaseInProgress)
	cl := veleroqueue.NewTurnsFakeClient(testScheme, w, inFlight)
	t := veleroqueue.NewTurns(cl, turnsOADP)
	t.Now = func() time.Time { return now }

	// The older NonAdminBackup goes first.
	c.Check(runTurn(c, t, scheduleRun("a", "s1", "vs1", 60, 2)), DeepEquals, phases.TurnDecision{InVelero: 1, Position: 2, Waiting: 2})
	c.Check(turn(c, t, w, 2), DeepEquals, phases.TurnDecision{Admitted: true, InVelero: 1})
	// The namespace is full now (a-0 and w's admission): no run goes.
	c.Check(runTurn(c, t, scheduleRun("a", "s1", "vs1", 60, 2)), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 1})

	inFlight.Status.Phase = velerov1.BackupPhaseCompleted
	c.Assert(cl.Update(context.Background(), inFlight), IsNil)
	c.Check(runTurn(c, t, scheduleRun("a", "s1", "vs1", 60, 2)), DeepEquals, phases.TurnDecision{Admitted: true, InVelero: 1})
	c.Check(runTurn(c, t, scheduleRun("a", "s1", "vs1", 60, 2)).Admitted, Equals, true, Commentf("asked again before Velero took it"))
	// Two places taken (w's admission, s1's run): the next schedule's run
	// and a new NonAdminBackup wait.
	c.Check(runTurn(c, t, scheduleRun("a", "s2", "vs2", 60, 2)), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 1})
	w2 := turnWaiter("a", "w2", 90, 2, 0)
	c.Assert(cl.Create(context.Background(), w2), IsNil)
	c.Check(turn(c, t, w2, 2), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 1})

	// A Backup of vs1 made before the admission is not its run; the one
	// Velero makes for it is, and it then counts as itself, unfinished.
	old := tenantBackup("a", "vs1-old", velerov1.BackupPhaseCompleted)
	old.Labels[velerov1.ScheduleNameLabel] = "vs1"
	old.CreationTimestamp = metav1.NewTime(turnsBase)
	c.Assert(cl.Create(context.Background(), old), IsNil)
	c.Check(runTurn(c, t, scheduleRun("a", "s2", "vs2", 60, 2)).Admitted, Equals, false)
	taken := tenantBackup("a", "vs1-run", velerov1.BackupPhaseNew)
	taken.Labels[velerov1.ScheduleNameLabel] = "vs1"
	taken.Annotations = map[string]string{v1alpha1.NasOriginNamespaceAnnotation: "a"}
	taken.CreationTimestamp = metav1.NewTime(now)
	c.Assert(cl.Create(context.Background(), taken), IsNil)
	c.Check(runTurn(c, t, scheduleRun("a", "s2", "vs2", 60, 2)), DeepEquals, phases.TurnDecision{InVelero: 2, Position: 1, Waiting: 2})
	c.Check(runTurn(c, t, scheduleRun("a", "s1", "vs1", 120, 2)).Admitted, Equals, false, Commentf("vs1's next run is a new turn"))

	// w is deleted before its Backup came: its admission holds the place
	// until it expires, then s2 goes; an admitted run Velero never takes
	// expires too.
	c.Assert(cl.Delete(context.Background(), w), IsNil)
	c.Check(runTurn(c, t, scheduleRun("a", "s2", "vs2", 60, 2)).Admitted, Equals, false)
	now = now.Add(2 * time.Minute)
	c.Check(runTurn(c, t, scheduleRun("a", "s2", "vs2", 60, 2)), DeepEquals, phases.TurnDecision{Admitted: true, InVelero: 1})
	now = now.Add(4 * time.Minute)
	c.Check(turn(c, t, w2, 2), DeepEquals, phases.TurnDecision{Admitted: true, InVelero: 1})
}

// Round-robin: a namespace's due run goes after another namespace's waiting
// NonAdminBackup that goes first (fewer in Velero).
func (s *TurnsSuite) TestScheduledRunYieldsToRoundRobin(c *C) {
	b1 := turnWaiter("b", "b1", 80, 2, 0)
	cl := veleroqueue.NewTurnsFakeClient(testScheme, b1, tenantBackup("a", "a-0", velerov1.BackupPhaseInProgress))
	t := veleroqueue.NewTurns(cl, turnsOADP)
	c.Check(runTurn(c, t, scheduleRun("a", "s1", "vs1", 60, 2)), DeepEquals, phases.TurnDecision{InVelero: 1, Position: 1, Waiting: 1, OtherFirst: true})
	c.Check(turn(c, t, b1, 2).Admitted, Equals, true)
	c.Check(runTurn(c, t, scheduleRun("a", "s1", "vs1", 60, 2)).Admitted, Equals, true)
}
