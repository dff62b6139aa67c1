package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// FairShareSuite: one tenant's burst of backups cannot fill Velero's queue
// (the fair share of Velero's queue). The test plays Velero by patching Backups' status and
// watches every Backup the controller creates, in the API server's order.
type FairShareSuite struct{}

var _ = Suite(&FairShareSuite{})

// veleroWatch records the Velero objects of one kind (Backups or Restores)
// of one OADP namespace as the API server reports them: creation order, and
// for each tenant namespace the most unfinished objects it ever had at once.
type veleroWatch struct {
	mu sync.Mutex
	// order names the objects in creation order; origin maps each to its
	// tenant namespace; finished those that finished.
	order    []string
	origin   map[string]string
	finished map[string]bool
	// unfinished and peak count by tenant namespace.
	unfinished, peak map[string]int
	stop             context.CancelFunc
}

// watchVelero starts recording the objects of list's kind in oadp: origin
// is the annotation naming an object's tenant namespace, done whether it
// finished.
func watchVelero(c *C, oadp string, list client.ObjectList, origin string, done func(runtime.Object) bool) *veleroWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &veleroWatch{origin: map[string]string{}, finished: map[string]bool{}, unfinished: map[string]int{}, peak: map[string]int{}, stop: cancel}
	wi, err := testClient.Watch(ctx, list, client.InNamespace(oadp))
	c.Assert(err, IsNil)
	go func() {
		defer wi.Stop()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-wi.ResultChan():
				if !ok {
					panic("the watch ended before the test") // a gap would hide a peak
				}
				if obj, isObject := e.Object.(client.Object); isObject {
					w.observe(e.Type, obj, obj.GetAnnotations()[origin], done(e.Object))
				}
			}
		}
	}()
	return w
}

// watchBackups starts recording the Velero Backups of oadp.
func watchBackups(c *C, oadp string) *veleroWatch {
	return watchVelero(c, oadp, &velerov1.BackupList{}, v1alpha1.NabOriginNamespaceAnnotation, func(o runtime.Object) bool {
		b, ok := o.(*velerov1.Backup)
		return ok && v1alpha1.BackupFinished(b.Status.Phase)
	})
}

// watchRestores starts recording the Velero Restores of oadp.
func watchRestores(c *C, oadp string) *veleroWatch {
	return watchVelero(c, oadp, &velerov1.RestoreList{}, v1alpha1.NarOriginNamespaceAnnotation, func(o runtime.Object) bool {
		r, ok := o.(*velerov1.Restore)
		return ok && v1alpha1.RestoreFinished(r.Status.Phase)
	})
}

func (w *veleroWatch) observe(t watch.EventType, obj client.Object, ns string, done bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := obj.GetName()
	if _, seen := w.origin[name]; !seen {
		w.order, w.origin[name] = append(w.order, name), ns
		w.unfinished[ns]++
		w.peak[ns] = max(w.peak[ns], w.unfinished[ns])
	}
	if !w.finished[name] && (t == watch.Deleted || done) {
		w.finished[name] = true
		w.unfinished[ns]--
	}
}

// of returns the objects made for ns in creation order, and the oldest
// unfinished one ("" when none).
func (w *veleroWatch) of(ns string) (all []string, oldest string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range w.order {
		if w.origin[name] == ns {
			all = append(all, name)
			if oldest == "" && !w.finished[name] {
				oldest = name
			}
		}
	}
	return all, oldest
}

// nextToFinish waits until an object made for ns that the test has not
// finished yet (completed) exists, and returns the oldest: the one Velero
// would finish next.
func (w *veleroWatch) nextToFinish(c *C, ns string, completed map[string]bool) string {
	var oldest string
	eventually(c, 20*time.Second, func() (bool, string) {
		oldest = ""
		all, _ := w.of(ns)
		for _, name := range all {
			if !completed[name] {
				oldest = name
				break
			}
		}
		return oldest != "", fmt.Sprintf("no unfinished object of %s after %d finished", ns, len(completed))
	})
	return oldest
}

// index returns where name stands in creation order (-1: never seen).
func (w *veleroWatch) index(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Index(w.order, name)
}

func (w *veleroWatch) peakOf(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak[ns]
}

// waitingFor returns the NABs of ns whose plan waits in WaitForTurn.
func waitingFor(c *C, ns string) []v1alpha1.NonAdminBackup {
	list := &v1alpha1.NonAdminBackupList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(ns)), IsNil)
	var out []v1alpha1.NonAdminBackup
	for _, nab := range list.Items {
		if p := nab.Status.Plan; p != nil && p.Phase("waitForTurn") != nil && p.Phase("waitForTurn").State == v1alpha1.PhaseWaiting {
			out = append(out, nab)
		}
	}
	return out
}

// A tenant creates 25 NonAdminBackups at once, reconciled by 8 workers in
// parallel; at most 2 (the limit) of its
// Velero Backups are ever unfinished, the rest wait saying why and where.
// Another tenant's backup made then goes into Velero at once, before the
// first tenant's next one: next in Velero's queue. Velero then finishes
// the first tenant's backups one at a time — the controller restarts
// halfway, its in-memory ledger lost — and every one of the 25 completes
// with exactly one Velero Backup.
func (s *FairShareSuite) TestBurstLeavesAnotherTenantNext(c *C) {
	ctx := context.Background()
	oadp := createNamespace(c, "fair-oadp")
	run := strings.TrimPrefix(oadp, "fair-oadp-")
	opts := controllerOptions{oadp: oadp, selector: labels.SelectorFromSet(labels.Set{chaosRunLabel: run}), restart: true, maxInVelero: 2,
		concurrency: 8} // parallel workers decide at once, as cmd/nac's 32 do
	backups := watchBackups(c, oadp)
	defer backups.stop()
	stop := startController(c, opts)
	defer func() { stop() }()
	a, b := createNamespace(c, "fair-a"), createNamespace(c, "fair-b")
	create := func(ns, name string) *v1alpha1.NonAdminBackup {
		nab := newNAB(ns, name, velerov1.BackupSpec{})
		nab.Labels = map[string]string{chaosRunLabel: run}
		c.Assert(testClient.Create(ctx, nab), IsNil)
		return nab
	}
	var burst []*v1alpha1.NonAdminBackup
	for i := range 25 {
		burst = append(burst, create(a, fmt.Sprintf("b%02d", i)))
	}

	// Two in Velero, 23 waiting, each saying why and where it stands; the
	// first five places are exact.
	eventually(c, 30*time.Second, func() (bool, string) {
		all, _ := backups.of(a)
		waiting := waitingFor(c, a)
		if len(all) != 2 || len(waiting) != 23 {
			return false, fmt.Sprintf("%d Velero Backups, %d waiting", len(all), len(waiting))
		}
		slices.SortFunc(waiting, func(x, y v1alpha1.NonAdminBackup) int {
			if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(x.Name, y.Name)
		})
		for i, nab := range waiting[:5] {
			want := fmt.Sprintf("%d", i+1)
			if got := nab.Status.Plan.Phase("waitForTurn").Output["position"]; got != want {
				return false, fmt.Sprintf("%s shows position %s, is %s", nab.Name, got, want)
			}
		}
		return true, ""
	})
	waiting := waitingFor(c, a)
	msg := regexp.MustCompile(`^waiting for a turn in Velero's queue: namespace ` + a + ` has 2 of its 2 backups in Velero; this is [0-9]+(st|nd|rd|th) of [0-9]+ waiting in ` + a + `$`)
	for _, nab := range waiting {
		c.Check(nab.Status.Plan.Phase("waitForTurn").Message, Matches, msg.String())
		cond := meta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionQueued)
		c.Assert(cond, NotNil)
		c.Check(cond.Status, Equals, metav1.ConditionFalse)
		c.Check(cond.Reason, Equals, v1alpha1.ReasonWaitingForTurn)
		c.Check(cond.Message, Equals, nab.Status.Plan.Phase("waitForTurn").Message)
		c.Check(nab.Status.VeleroBackup == nil || nab.Status.VeleroBackup.Name == "", Equals, true)
		c.Check(nab.Status.Plan.Phase("createBackup").State, Equals, v1alpha1.PhasePending)
	}
	// Events are delivered after the status write, asynchronously.
	eventually(c, 10*time.Second, func() (bool, string) {
		got := eventReasons(c, a, waiting[0].Name)
		return slices.Equal(got, []string{"Normal PhaseWaiting"}), fmt.Sprintf("events %q", got)
	})

	// The other tenant's backup goes to Velero at once.
	other := create(b, "one")
	var otherBackup string
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, other)
		if got.Status.VeleroBackup != nil {
			otherBackup = got.Status.VeleroBackup.Name
		}
		return otherBackup != "", fmt.Sprintf("%+v", got.Status.Plan)
	})
	c.Check(getNAB(c, other).Status.Plan.Phase("waitForTurn").Message, Equals,
		"its turn in Velero's queue: namespace "+b+" had 0 of its 2 backups in Velero")

	// Velero finishes the first tenant's backups, oldest first, one at a
	// time.
	completed := map[string]bool{}
	for done := 0; done < 25; done++ {
		oldest := backups.nextToFinish(c, a, completed)
		completeBackup(c, oadp, oldest, velerov1.BackupPhaseCompleted)
		completed[oldest] = true
		if done == 0 {
			// The first tenant's next Backup comes after the other's: in
			// Velero's queue (creation order), the other tenant is next.
			eventually(c, 10*time.Second, func() (bool, string) {
				all, _ := backups.of(a)
				return len(all) == 3, fmt.Sprintf("%d Velero Backups of %s", len(all), a)
			})
			all, _ := backups.of(a)
			c.Check(backups.index(otherBackup) < backups.index(all[2]), Equals, true,
				Commentf("%s's Backup at %d, %s's third at %d", b, backups.index(otherBackup), a, backups.index(all[2])))
		}
		if done == 10 {
			stop() // a restart: the admissions ledger is lost
			stop = startController(c, opts)
		}
	}
	completeBackup(c, oadp, otherBackup, velerov1.BackupPhaseCompleted)

	eventually(c, 30*time.Second, func() (bool, string) {
		var left []string
		for _, nab := range burst {
			if got := getNAB(c, nab); got.Status.Plan == nil || got.Status.Plan.State != v1alpha1.PlanComplete {
				left = append(left, fmt.Sprintf("%s (%s, %d events)", nab.Name, got.Status.Plan.Current, len(eventReasons(c, a, nab.Name))))
			}
		}
		return len(left) == 0, "not complete: " + strings.Join(left, ", ")
	})
	all, _ := backups.of(a)
	c.Check(all, HasLen, 25, Commentf("one Velero Backup per NonAdminBackup"))
	for _, nab := range burst {
		got := getNAB(c, nab)
		c.Check(veleroBackupsOf(c, oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 1, Commentf(nab.Name))
		c.Check(slices.Contains(all, got.Status.VeleroBackup.Name), Equals, true, Commentf(nab.Name))
	}
	c.Check(backups.peakOf(a), Equals, 2, Commentf("the limit held at every moment"))
	c.Check(backups.peakOf(b), Equals, 1)
}

// Velero runs every tenant's restores one at a time, in one queue. A
// tenant creates 12 NonAdminRestores at once, reconciled by 8 workers; at
// most 2 (the limit) of its Velero Restores are ever unfinished, the rest
// wait saying why and where. Another tenant's restore made then goes into
// Velero at once, before the first tenant's third: next in Velero's queue.
// Velero then finishes the first tenant's restores one at a time — the
// controller restarting halfway — and every one of the 12 completes with
// exactly one Velero Restore.
func (s *FairShareSuite) TestRestoreBurstLeavesAnotherTenantNext(c *C) {
	ctx := context.Background()
	oadp := createNamespace(c, "fair-oadp")
	run := strings.TrimPrefix(oadp, "fair-oadp-")
	opts := controllerOptions{oadp: oadp, selector: labels.SelectorFromSet(labels.Set{chaosRunLabel: run}), restart: true, maxRestores: 2,
		concurrency: 8}
	restores := watchRestores(c, oadp)
	defer restores.stop()
	stop := startController(c, opts)
	defer func() { stop() }()
	a, b := createNamespace(c, "fair-a"), createNamespace(c, "fair-b")
	// Each tenant has one completed backup to restore.
	for _, ns := range []string{a, b} {
		nab := newNAB(ns, "src", velerov1.BackupSpec{})
		nab.Labels = map[string]string{chaosRunLabel: run}
		c.Assert(testClient.Create(ctx, nab), IsNil)
		var got *v1alpha1.NonAdminBackup
		eventually(c, 20*time.Second, func() (bool, string) {
			got = getNAB(c, nab)
			return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", "no Velero Backup yet"
		})
		completeBackup(c, oadp, got.Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
		eventually(c, 20*time.Second, func() (bool, string) {
			got = getNAB(c, nab)
			return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanComplete, fmt.Sprintf("%+v", got.Status.Plan)
		})
	}
	create := func(ns, name string) *v1alpha1.NonAdminRestore {
		nar := newNAR(ns, name, velerov1.RestoreSpec{BackupName: "src"})
		nar.Labels = map[string]string{chaosRunLabel: run}
		c.Assert(testClient.Create(ctx, nar), IsNil)
		return nar
	}
	var burst []*v1alpha1.NonAdminRestore
	for i := range 12 {
		burst = append(burst, create(a, fmt.Sprintf("r%02d", i)))
	}
	waitingRestores := func(ns string) []v1alpha1.NonAdminRestore {
		list := &v1alpha1.NonAdminRestoreList{}
		c.Assert(testClient.List(ctx, list, client.InNamespace(ns)), IsNil)
		var out []v1alpha1.NonAdminRestore
		for _, nar := range list.Items {
			if p := nar.Status.Plan; p != nil && p.Phase("waitForTurn") != nil && p.Phase("waitForTurn").State == v1alpha1.PhaseWaiting {
				out = append(out, nar)
			}
		}
		return out
	}
	eventually(c, 30*time.Second, func() (bool, string) {
		all, _ := restores.of(a)
		n, waiting := len(all), len(waitingRestores(a))
		return n == 2 && waiting == 10, fmt.Sprintf("%d Velero Restores, %d waiting", n, waiting)
	})
	msg := `^waiting for a turn in Velero's queue: namespace ` + a + ` has 2 of its 2 restores in Velero; this is [0-9]+(st|nd|rd|th) of [0-9]+ waiting in ` + a + `$`
	for _, nar := range waitingRestores(a) {
		c.Check(nar.Status.Plan.Phase("waitForTurn").Message, Matches, msg)
		cond := meta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionQueued)
		c.Assert(cond, NotNil)
		c.Check(cond.Status, Equals, metav1.ConditionFalse)
		c.Check(cond.Reason, Equals, v1alpha1.ReasonWaitingForTurn)
		c.Check(nar.Status.Plan.Phase("createRestore").State, Equals, v1alpha1.PhasePending)
	}

	// The other tenant's restore goes to Velero at once.
	other := create(b, "one")
	var otherRestore string
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAR(c, other)
		if got.Status.VeleroRestore != nil {
			otherRestore = got.Status.VeleroRestore.Name
		}
		return otherRestore != "", fmt.Sprintf("%+v", got.Status.Plan)
	})

	completed := map[string]bool{}
	for done := 0; done < 12; done++ {
		oldest := restores.nextToFinish(c, a, completed)
		setRestorePhase(c, oadp, oldest, velerov1.RestorePhaseCompleted)
		completed[oldest] = true
		if done == 0 {
			var all []string
			eventually(c, 10*time.Second, func() (bool, string) {
				all, _ = restores.of(a)
				return len(all) == 3, fmt.Sprintf("%d Velero Restores of %s", len(all), a)
			})
			c.Check(restores.index(otherRestore) < restores.index(all[2]), Equals, true,
				Commentf("%s's Restore at %d, %s's third at %d", b, restores.index(otherRestore), a, restores.index(all[2])))
		}
		if done == 5 {
			stop() // a restart: the admissions ledger is lost
			stop = startController(c, opts)
		}
	}
	setRestorePhase(c, oadp, otherRestore, velerov1.RestorePhaseCompleted)
	eventually(c, 30*time.Second, func() (bool, string) {
		var left []string
		for _, nar := range burst {
			if got := getNAR(c, nar); got.Status.Plan == nil || got.Status.Plan.State != v1alpha1.PlanComplete {
				left = append(left, nar.Name)
			}
		}
		return len(left) == 0, "not complete: " + strings.Join(left, ", ")
	})
	all, _ := restores.of(a)
	c.Check(all, HasLen, 12, Commentf("one Velero Restore per NonAdminRestore"))
	for _, nar := range burst {
		got := getNAR(c, nar)
		c.Check(veleroRestoresOf(c, oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 1, Commentf(nar.Name))
	}
	c.Check(restores.peakOf(a), Equals, 2, Commentf("the limit held at every moment"))
	c.Check(restores.peakOf(b), Equals, 1)
}
