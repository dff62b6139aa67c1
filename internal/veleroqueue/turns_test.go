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
	"github.com/nacflow/nacflow/internal/veleroqueue"
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
	return phases.TurnRequest{Namespace: nab.Namespace, Name: nab.Name, Created: nab.CreationTimestamp.Time, Backup: backupName(nab), Max: max}
}

func turn(c *C, t *veleroqueue.Turns, nab *v1alpha1.NonAdminBackup, max int) phases.TurnDecision {
	d, err := t.Turn(context.Background(), request(nab, max))
	c.Assert(err, IsNil)
	return d
}

func wake(c *C, t *veleroqueue.Turns, ns string) []string {
	keys, err := t.Wake(context.Background(), ns)
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
