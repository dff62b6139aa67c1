package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ChaosSuite runs many mixed operations while the controller is killed and
// restarted at random points, then checks that nothing was lost, duplicated,
// orphaned or left stuck (issue: reliability, crash injection).
type ChaosSuite struct{}

var _ = Suite(&ChaosSuite{})

// chaosRunLabel marks this suite's NAC objects; its controllers see only them.
const chaosRunLabel = "nacflow.test/chaos"

// playVelero plays Velero in oadp until ctx ends: new Backups complete (or
// fail, for NABs named fail-*), DeleteBackupRequests delete their Backup and
// are marked Processed, Restores complete, storage locations turn Available.
// Conflicts and objects that went away meanwhile are simply retried on the
// next pass, as Velero's own controllers would.
func playVelero(ctx context.Context, oadp string) {
	for ctx.Err() == nil {
		backups := &velerov1.BackupList{}
		if testClient.List(ctx, backups, client.InNamespace(oadp)) == nil {
			patchEach(ctx, backups.Items, func(b *velerov1.Backup) bool {
				if b.Status.Phase != "" {
					return false
				}
				b.Status.Phase = velerov1.BackupPhaseCompleted
				if strings.HasPrefix(b.Annotations[v1alpha1.NabOriginNameAnnotation], "fail-") {
					b.Status.Phase = velerov1.BackupPhaseFailed
				}
				return true
			})
		}
		dbrs := &velerov1.DeleteBackupRequestList{}
		if testClient.List(ctx, dbrs, client.InNamespace(oadp)) == nil {
			patchEach(ctx, dbrs.Items, func(d *velerov1.DeleteBackupRequest) bool {
				if d.Status.Phase == velerov1.DeleteBackupRequestPhaseProcessed {
					return false
				}
				b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: d.Spec.BackupName}}
				if err := testClient.Delete(ctx, b); err != nil && !apierrors.IsNotFound(err) {
					return false
				}
				d.Status.Phase = velerov1.DeleteBackupRequestPhaseProcessed
				return true
			})
		}
		restores := &velerov1.RestoreList{}
		if testClient.List(ctx, restores, client.InNamespace(oadp)) == nil {
			patchEach(ctx, restores.Items, func(r *velerov1.Restore) bool {
				if r.Status.Phase != "" {
					return false
				}
				r.Status.Phase = velerov1.RestorePhaseCompleted
				r.Status.CompletionTimestamp = &metav1.Time{Time: time.Now()}
				return true
			})
		}
		bsls := &velerov1.BackupStorageLocationList{}
		if testClient.List(ctx, bsls, client.InNamespace(oadp)) == nil {
			patchEach(ctx, bsls.Items, func(l *velerov1.BackupStorageLocation) bool {
				if l.Status.Phase != "" {
					return false
				}
				l.Status.Phase = velerov1.BackupStorageLocationPhaseAvailable
				return true
			})
		}
		select {
		case <-ctx.Done():
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// patchEach patches, as Velero would, each of items that change modifies
// (change returns whether it did); errors are left to the next pass.
func patchEach[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, items []T, change func(PT) bool) {
	for i := range items {
		o := PT(&items[i])
		before := o.DeepCopyObject().(client.Object)
		if change(o) {
			_ = testClient.Patch(ctx, o, client.MergeFrom(before))
		}
	}
}

// crashAfterCreate wraps a controller's client so that, with probability p,
// a create in the OADP namespace succeeds on the API server and then the
// controller dies before it can record it: kill is called and the create
// blocks until the reconcile's context is cancelled by that kill, so no
// status write of that reconcile reaches the API server.
func crashAfterCreate(oadp string, p float64, rng func() float64, kill func(), kills *atomic.Int64, spent func() bool) func(client.Client) client.Client {
	return func(cl client.Client) client.Client {
		return interceptor.NewClient(withWatch{cl}, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := c.Create(ctx, obj, opts...); err != nil || obj.GetNamespace() != oadp || spent() || rng() >= p {
					return err
				}
				kills.Add(1)
				kill()
				<-ctx.Done()
				return ctx.Err()
			},
		})
	}
}

// withWatch lets interceptor wrap a manager's client (which has no Watch).
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

// chaosOp is one operation of the run and what it must end as.
type chaosOp struct {
	obj client.Object
	// gone: the object must be deleted by the end (deleteBackup or kubectl delete).
	gone bool
}

func (s *ChaosSuite) TestCrashInjection(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	c.Logf("seed %d", seed)
	var rngMu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 1))
	random := func() float64 { rngMu.Lock(); defer rngMu.Unlock(); return rng.Float64() }

	oadp := createNamespace(c, "chaos-oadp")
	run := strings.TrimPrefix(oadp, "chaos-oadp-")
	sel := labels.SelectorFromSet(labels.Set{chaosRunLabel: run})
	mark := func(o client.Object) client.Object {
		o.SetLabels(map[string]string{chaosRunLabel: run})
		return o
	}

	// The controller, killed and restarted at random: on a timer, and right
	// after random creates in the OADP namespace (before their status write).
	ch := startChaos(c, controllerOptions{oadp: oadp, selector: sel, restart: true}, 0.25, 1200*time.Millisecond, 100, random)
	defer ch.stop()
	veleroCtx, stopVelero := context.WithCancel(ctx)
	defer stopVelero()
	go playVelero(veleroCtx, oadp)

	// The operations: per tenant 10 backups (one failing in Velero), 4
	// restores, 2 permanent deletions, 1 kubectl delete of a backup, 4
	// storage locations of which 1 is deleted again.
	const tenants = 10
	var ops []*chaosOp
	var nss []string
	for range tenants {
		ns := createNamespace(c, "chaos-tenant")
		nss = append(nss, ns)
		c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
			Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=x\naws_secret_access_key=x-secret\n")}}), IsNil)
	}
	for _, ns := range nss {
		for i := range 10 {
			name := fmt.Sprintf("b%d", i)
			if i == 9 {
				name = "fail-b9"
			}
			ops = append(ops, &chaosOp{obj: mark(newNAB(ns, name, velerov1.BackupSpec{})), gone: i == 4 || i == 5 || i == 6})
		}
		for i := range 4 {
			ops = append(ops, &chaosOp{obj: mark(newNAR(ns, fmt.Sprintf("r%d", i), velerov1.RestoreSpec{BackupName: fmt.Sprintf("b%d", i)}))})
			ops = append(ops, &chaosOp{obj: mark(newNABSL(ns, fmt.Sprintf("l%d", i), "creds")), gone: i == 3})
		}
	}
	// Backups first (a restore of a backup that does not exist yet is
	// refused, as in OADP NAC), each kind in a random order.
	shuffle := rand.New(rand.NewPCG(seed, 2)).Shuffle
	var nabs, others []*chaosOp
	for _, op := range ops {
		if _, ok := op.obj.(*v1alpha1.NonAdminBackup); ok {
			nabs = append(nabs, op)
		} else {
			others = append(others, op)
		}
	}
	shuffle(len(nabs), func(i, j int) { nabs[i], nabs[j] = nabs[j], nabs[i] })
	shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	for _, op := range append(nabs, others...) {
		c.Assert(testClient.Create(ctx, op.obj), IsNil)
	}
	c.Logf("%d operations", len(ops)+4*tenants) // + per tenant: deleteBackup ×2, kubectl delete of a NAB and a NABSL

	// The deletions, as soon as what they delete is ready, still under chaos.
	pending := map[client.ObjectKey]func() (bool, error){}
	for _, ns := range nss {
		for _, name := range []string{"b4", "b5"} {
			key := client.ObjectKey{Namespace: ns, Name: name}
			pending[key] = func() (bool, error) {
				nab := &v1alpha1.NonAdminBackup{}
				if err := testClient.Get(ctx, key, nab); err != nil {
					return false, err
				}
				if nab.Status.Plan == nil || nab.Status.Plan.State != v1alpha1.PlanComplete {
					return false, nil
				}
				before := nab.DeepCopy()
				nab.Spec.DeleteBackup = true
				return true, testClient.Patch(ctx, nab, client.MergeFrom(before))
			}
		}
		for _, o := range []client.Object{&v1alpha1.NonAdminBackup{}, &v1alpha1.NonAdminBackupStorageLocation{}} {
			key := client.ObjectKey{Namespace: ns, Name: "b6"}
			if _, ok := o.(*v1alpha1.NonAdminBackupStorageLocation); ok {
				key.Name = "l3"
			}
			pending[key] = func() (bool, error) {
				if err := testClient.Get(ctx, key, o); err != nil {
					return false, err
				}
				if p := o.(engine.Object).GetPlan(); p == nil || p.State != v1alpha1.PlanComplete {
					return false, nil
				}
				return true, testClient.Delete(ctx, o)
			}
		}
	}
	requestDeletions := func() (bool, string) {
		var waiting []string
		for key, try := range pending {
			done, err := try()
			if err == nil && done {
				delete(pending, key)
				continue
			}
			waiting = append(waiting, chaosWhy(ctx, key, err))
		}
		sort.Strings(waiting)
		return len(pending) == 0, fmt.Sprintf("%d deletions not yet requested: %s", len(pending), strings.Join(waiting, "; "))
	}
	// How far the operations get while the controller is still being
	// killed depends on the machine: on a loaded one an incarnation lives
	// longer but does less. So the deletions wait for the chaos (which ends
	// by itself after its budget of kills), and then must all be requested
	// within 90 s of a controller that stays up.
	eventually(c, 5*time.Minute, func() (bool, string) {
		done, msg := requestDeletions()
		return done || ch.calm(), msg
	})
	c.Logf("chaos spent its budget after %s", ch.spentAfter())
	eventually(c, 90*time.Second, requestDeletions)

	// Let the chaos go on a little, then a controller that stays up.
	time.Sleep(2 * time.Second)
	kills, crashes := ch.stop()
	c.Check(kills > 5, Equals, true)
	c.Check(crashes > 5, Equals, true)
	stop := startController(c, controllerOptions{oadp: oadp, selector: sel, restart: true})
	defer stop()

	// Each poll reads only the operations not yet seen settled (220 reads
	// a poll kept the package's API server busy for every other test);
	// then all of them once more, together.
	settled := map[*chaosOp]bool{}
	eventually(c, 90*time.Second, func() (bool, string) {
		for _, op := range ops {
			if settled[op] {
				continue
			}
			if msg := chaosOpUnsettled(ctx, oadp, op); msg != "" {
				return false, msg
			}
			settled[op] = true
		}
		return true, ""
	})
	for _, op := range ops {
		c.Check(chaosOpUnsettled(ctx, oadp, op), Equals, "")
	}
	stopVelero()

	// Exactly one Velero object per live operation, none for gone ones, and
	// no orphans in the OADP namespace.
	owners := map[string]bool{}
	adopted := 0
	for _, op := range ops {
		if op.gone {
			continue
		}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(op.obj), op.obj), IsNil)
		uuid := v1alpha1.DerivedNACUUID(op.obj)
		owners[uuid] = true
		var n int
		switch op.obj.(type) {
		case *v1alpha1.NonAdminBackup:
			n = len(veleroBackupsOf(c, oadp, uuid))
		case *v1alpha1.NonAdminRestore:
			n = len(veleroRestoresOf(c, oadp, uuid))
		case *v1alpha1.NonAdminBackupStorageLocation:
			req, bsl, sec := bslObjects(c, oadp, uuid)
			c.Check(req != nil && sec != nil, Equals, true, Commentf("%s: request %v, secret %v", client.ObjectKeyFromObject(op.obj), req != nil, sec != nil))
			if bsl != nil {
				n = 1
			}
		}
		c.Check(n, Equals, 1, Commentf("%T %s", op.obj, client.ObjectKeyFromObject(op.obj)))
		// An ended plan keeps no completed phase's message: the events tell
		// how each phase ended.
		if slices.ContainsFunc(eventStory(c, op.obj.GetNamespace(), op.obj.GetName()), func(e string) bool {
			return strings.Contains(e, ": Adopted ")
		}) {
			adopted++
		}
	}
	c.Logf("%d operations adopted the object a killed controller had created", adopted)
	c.Check(adopted > 0, Equals, true)
	for _, list := range []client.ObjectList{&velerov1.BackupList{}, &velerov1.RestoreList{}, &velerov1.BackupStorageLocationList{},
		&velerov1.DeleteBackupRequestList{}, &corev1.SecretList{}, &v1alpha1.NonAdminBackupStorageLocationRequestList{}} {
		c.Assert(testClient.List(ctx, list, client.InNamespace(oadp)), IsNil)
		items, err := meta.ExtractList(list)
		c.Assert(err, IsNil)
		for _, item := range items {
			o := item.(client.Object)
			l := o.GetLabels()
			owner := l[v1alpha1.NabOriginNACUUIDLabel] + l[v1alpha1.NarOriginNACUUIDLabel] + l[v1alpha1.NabslOriginNACUUIDLabel]
			c.Check(owners[owner], Equals, true, Commentf("orphan %T %s (owner %q)", o, o.GetName(), owner))
		}
	}
}

// chaosWhy says why the deletion of key is not requested yet: the error
// reading or deleting it, or the state of its NonAdminBackup or
// NonAdminBackupStorageLocation plan (names are unique per kind here: b* for
// backups, l* for storage locations).
func chaosWhy(ctx context.Context, key client.ObjectKey, err error) string {
	if err != nil {
		return fmt.Sprintf("%s: %v", key, err)
	}
	var o client.Object = &v1alpha1.NonAdminBackup{}
	if strings.HasPrefix(key.Name, "l") {
		o = &v1alpha1.NonAdminBackupStorageLocation{}
	}
	if err := testClient.Get(ctx, key, o); err != nil {
		return fmt.Sprintf("%s: %v", key, err)
	}
	return fmt.Sprintf("%T %s: %s", o, key, planStory(o.(engine.Object).GetPlan()))
}

// planStory is a plan's state, current phase and each phase's state and
// message, for failure messages.
func planStory(p *v1alpha1.PlanStatus) string {
	if p == nil {
		return "no plan"
	}
	var msgs []string
	for _, ps := range p.Phases {
		msgs = append(msgs, fmt.Sprintf("%s=%s %q", ps.Name, ps.State, ps.Message))
	}
	return fmt.Sprintf("plan %s (%s): %s", p.State, p.Current, strings.Join(msgs, "; "))
}

// chaosOpUnsettled returns why op has not reached its end yet ("" when it has).
func chaosOpUnsettled(ctx context.Context, oadp string, op *chaosOp) string {
	key := client.ObjectKeyFromObject(op.obj)
	o := op.obj.DeepCopyObject().(client.Object)
	err := testClient.Get(ctx, key, o)
	if op.gone {
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("%T %s not deleted yet (%v)", o, key, err)
	}
	if err != nil {
		return fmt.Sprintf("%T %s: %v", o, key, err)
	}
	p := o.(engine.Object).GetPlan()
	if p == nil {
		return fmt.Sprintf("%T %s has no plan", o, key)
	}
	want := v1alpha1.PlanComplete
	if strings.HasPrefix(key.Name, "fail-") {
		nab := o.(*v1alpha1.NonAdminBackup)
		if nab.Status.VeleroBackup == nil || nab.Status.VeleroBackup.Status == nil || nab.Status.VeleroBackup.Status.Phase != velerov1.BackupPhaseFailed {
			return fmt.Sprintf("%s: Velero's failure not mirrored yet", key)
		}
		if p.State == v1alpha1.PlanComplete || p.State == v1alpha1.PlanFailed {
			return ""
		}
	}
	if p.State != want {
		return fmt.Sprintf("%T %s: %s", o, key, planStory(p))
	}
	return ""
}

// chaos is a controller killed and restarted at random (startChaos).
type chaos struct {
	c *C
	// budget is how many kills the chaos makes at most; then the last
	// controller stays up until stop. A loaded machine gets as many crashes
	// as a fast one, not more for being slow: with kills on a clock, an
	// incarnation there did too little between kills for 220 operations to
	// end in any window.
	budget         int64
	kills, crashes atomic.Int64
	// began is when the chaos started; spentAt, once the budget is spent,
	// how long after began (a time.Duration, 0 before).
	began            time.Time
	spentAt          atomic.Int64
	done, stopSignal chan struct{}
	stopping         sync.Once
}

// startChaos starts the controller of o and, until the returned chaos is
// stopped or budget kills are made, kills and restarts it after random
// waits of 300 ms to 300 ms + spread, and right after a create in the OADP
// namespace that reaches the API server (with probability p, before the
// create's reconcile can write its status: crashAfterCreate).
func startChaos(c *C, o controllerOptions, p float64, spread time.Duration, budget int64, random func() float64) *chaos {
	ch := &chaos{c: c, budget: budget, began: time.Now(), done: make(chan struct{}), stopSignal: make(chan struct{})}
	spent := func() bool { return ch.kills.Load() >= ch.budget }
	killNow := make(chan struct{}, 1)
	kill := func() {
		select {
		case killNow <- struct{}{}:
		default:
		}
	}
	o.wrap = crashAfterCreate(o.oadp, p, random, kill, &ch.crashes, spent)
	// The timer runs from the moment the caches are synced, for 300 ms plus
	// a random part of spread (every fourth incarnation: of four spreads,
	// so that an operation whose next step takes longer than one spread
	// also ends), and an incarnation also does some work before it is
	// killed: at least 10 reconciles started. On a loaded machine a
	// wall-clock timer alone killed controllers before they had done
	// anything, and the operations never ended.
	var started atomic.Int64
	o.observe = func(string, ctrl.Request) { started.Add(1) }
	synced, cancelSync := context.WithCancel(context.Background())
	start := func() func() {
		started.Store(0)
		mgr, stop := startManager(c, o)
		mgr.GetCache().WaitForCacheSync(synced)
		return stop
	}
	const minWork = 10
	timer := func(abort <-chan struct{}) <-chan struct{} {
		done := make(chan struct{})
		life := spread
		if ch.kills.Load()%4 == 3 {
			life *= 4
		}
		wait := 300*time.Millisecond + time.Duration(random()*float64(life))
		go func() {
			defer close(done)
			select {
			case <-abort:
				return
			case <-time.After(wait):
			}
			for started.Load() < minWork {
				select {
				case <-abort:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		return done
	}
	go func() {
		defer close(ch.done)
		defer cancelSync()
		go func() { <-ch.stopSignal; cancelSync() }()
		stop := start()
		for {
			if spent() {
				ch.spentAt.Store(int64(time.Since(ch.began)))
				<-ch.stopSignal
				stop()
				return
			}
			abort := make(chan struct{})
			select {
			case <-ch.stopSignal:
				close(abort)
				stop()
				return
			case <-killNow:
			case <-timer(abort):
			}
			close(abort)
			stop()
			ch.kills.Add(1)
			stop = start()
		}
	}()
	return ch
}

// calm reports whether the chaos has spent its budget of kills: the
// controller running now stays up until stop.
func (ch *chaos) calm() bool { return ch.spentAt.Load() > 0 }

// spentAfter returns how long after its start the chaos spent its budget
// (0 while it has not).
func (ch *chaos) spentAfter() time.Duration {
	return time.Duration(ch.spentAt.Load()).Round(time.Millisecond)
}

// stop ends the chaos once the controller has stopped, logs how often it
// was killed, and returns the counts: every kill, and those between a create
// and its status write. Stopping again only returns the counts, so that a
// test may defer it: one that fails early must not leave its controllers
// killing and restarting under the tests after it.
func (ch *chaos) stop() (kills, crashes int64) {
	ch.stopping.Do(func() { close(ch.stopSignal) })
	<-ch.done
	ch.c.Logf("controller killed %d times (budget %d), %d of them between a create and its status write", ch.kills.Load(), ch.budget, ch.crashes.Load())
	return ch.kills.Load(), ch.crashes.Load()
}
