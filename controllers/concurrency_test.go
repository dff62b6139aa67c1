package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/runtime/events"
)

// ConcurrencySuite: every write the controller makes to a NAC object carries
// the resourceVersion it read: a write between our read and our
// patch is never lost, and never makes the story be told twice.
type ConcurrencySuite struct{}

var _ = Suite(&ConcurrencySuite{})

// interleave returns a client wrapper that, the first time the controller
// patches object name (metadata when sub is "", else the subresource sub),
// first runs meddle — another writer's change landing between our read and
// our write — then sends our patch.
func interleave(name, sub string, meddle func()) func(client.Client) client.Client {
	var once sync.Once
	hit := func(obj client.Object) {
		if obj.GetName() == name {
			once.Do(meddle)
		}
	}
	return func(cl client.Client) client.Client {
		return interceptor.NewClient(withWatch{cl}, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if sub == "" {
					hit(obj)
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, s string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if s == sub {
					hit(obj)
				}
				return c.SubResource(s).Patch(ctx, obj, p, opts...)
			},
		})
	}
}

// A finalizer another controller adds between our read and our finalizer
// patch survives: our patch is refused (Conflict) and retried from a fresh
// read, instead of replacing the list with the one we read.
func (s *ConcurrencySuite) TestForeignFinalizerSurvives(c *C) {
	r := newFaultRun(c)
	defer r.stop()
	ns := createNamespace(c, "concurrency")
	key := types.NamespacedName{Namespace: ns, Name: "fin"}
	const foreign = "example.com/keep-me"
	meddle := func() {
		nab := &v1alpha1.NonAdminBackup{}
		if err := testClient.Get(context.Background(), key, nab); err != nil {
			panic(err)
		}
		before := nab.DeepCopy()
		controllerutil.AddFinalizer(nab, foreign)
		if err := testClient.Patch(context.Background(), nab, client.MergeFrom(before)); err != nil {
			panic(err)
		}
	}
	stop := startController(c, controllerOptions{oadp: r.oadp, selector: r.sel, wrap: interleave("fin", "", meddle), restart: true})
	defer stop()
	nab := newNAB(ns, "fin", velerov1.BackupSpec{})
	nab.Labels = map[string]string{chaosRunLabel: r.run}
	c.Assert(testClient.Create(context.Background(), nab), IsNil)
	r.allComplete(c, []client.Object{nab}, 30*time.Second)
	got := getNAB(c, nab)
	c.Check(controllerutil.ContainsFinalizer(got, foreign), Equals, true, Commentf("finalizers: %v", got.Finalizers))
	c.Check(controllerutil.ContainsFinalizer(got, v1alpha1.NonAdminBackupFinalizer), Equals, true, Commentf("finalizers: %v", got.Finalizers))
	// Let it go.
	before := got.DeepCopy()
	controllerutil.RemoveFinalizer(got, foreign)
	c.Assert(testClient.Patch(context.Background(), got, client.MergeFrom(before)), IsNil)
}

// A tenant's spec edit between our read and our status write: the write
// (the start of a run for the old spec) is refused and retried from a fresh
// read, so the location's action starts once, for the spec in force — one
// "Started action" in the events — instead of once for the old spec and again for the
// new one.
func (s *ConcurrencySuite) TestEditBetweenReadAndStatusWrite(c *C) {
	r := newFaultRun(c)
	defer r.stop()
	ns := createNamespace(c, "concurrency")
	c.Assert(testClient.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=x\naws_secret_access_key=x-secret\n")}}), IsNil)
	key := types.NamespacedName{Namespace: ns, Name: "edited"}
	meddle := func() {
		l := &v1alpha1.NonAdminBackupStorageLocation{}
		if err := testClient.Get(context.Background(), key, l); err != nil {
			panic(err)
		}
		before := l.DeepCopy()
		l.Spec.BackupStorageLocationSpec.Config = map[string]string{"region": "edited-meanwhile"}
		if err := testClient.Patch(context.Background(), l, client.MergeFrom(before)); err != nil {
			panic(err)
		}
	}
	stop := startController(c, controllerOptions{oadp: r.oadp, selector: r.sel, wrap: interleave("edited", "status", meddle), restart: true})
	defer stop()
	l := newNABSL(ns, "edited", "creds")
	l.Labels = map[string]string{chaosRunLabel: r.run}
	c.Assert(testClient.Create(context.Background(), l), IsNil)
	eventually(c, 30*time.Second, func() (bool, string) {
		g := getNABSL(c, l)
		p := g.Status.Plan
		return p != nil && p.State == v1alpha1.PlanComplete, fmt.Sprintf("%+v", p)
	})
	got := getNABSL(c, l)
	c.Check(got.Status.VeleroBackupStorageLocation.Spec.Config["region"], Equals, "edited-meanwhile")
	// Events are written asynchronously: wait for the story's end, then
	// count its beginnings.
	var started int
	eventually(c, 10*time.Second, func() (bool, string) {
		events := &corev1.EventList{}
		c.Assert(testClient.List(context.Background(), events, client.InNamespace(ns),
			client.MatchingFields{"involvedObject.name": "edited"}), IsNil)
		started = 0
		ended := false
		for _, e := range events.Items {
			// A reconcile's transitions are one event: count the
			// beginnings its message tells.
			started += strings.Count(e.Message, "Started action") * int(max(e.Count, 1))
			if e.Reason == engine.EventEndedAction {
				ended = true
			}
		}
		return ended, fmt.Sprintf("%d events, no EndedAction yet", len(events.Items))
	})
	c.Check(started, Equals, 1, Commentf("actions started"))
}

// A wave of operations larger than the event queue: 60 NonAdminBackups,
// room for 4 events, 8 written a second (slow enough that the queue fills
// even when the machine is loaded and reconciles are slow). Reconciles wait for room instead
// of dropping (client-go's broadcaster drops past its queue): every NAB's
// story reaches the API server — exactly one event starting its action —
// and nacflow_events_dropped_total does not move.
func (s *ConcurrencySuite) TestEventWaveNotDropped(c *C) {
	r := newFaultRun(c)
	defer r.stop()
	// The writer is held until the queue of 4 is full, so the wave meets a
	// full queue however fast or slow this machine is; then it writes at
	// 8 events per second.
	gate := &gatedLimiter{open: make(chan struct{}), RateLimiter: flowcontrol.NewTokenBucketRateLimiter(8, 5)}
	broadcaster := events.NewBroadcasterWithLimiter(gate, 4)
	defer broadcaster.Shutdown()
	defer gate.release()
	dropped0, waited0 := droppedTotal(c), queueWaitSeconds(c)
	stop := startController(c, controllerOptions{oadp: r.oadp, selector: r.sel, restart: true, events: broadcaster})
	defer stop()
	ns := createNamespace(c, "wave")
	const n = 60
	for i := range n {
		nab := newNAB(ns, fmt.Sprintf("w%02d", i), velerov1.BackupSpec{})
		nab.Labels = map[string]string{chaosRunLabel: r.run}
		c.Assert(testClient.Create(context.Background(), nab), IsNil)
	}
	eventually(c, 60*time.Second, func() (bool, string) {
		return broadcaster.Queued() == 4, fmt.Sprintf("%d events queued, want a full queue of 4", broadcaster.Queued())
	})
	gate.release()
	started := map[string]int{}
	eventually(c, 90*time.Second, func() (bool, string) {
		list := &corev1.EventList{}
		c.Assert(testClient.List(context.Background(), list, client.InNamespace(ns)), IsNil)
		clear(started)
		for _, e := range list.Items {
			started[e.InvolvedObject.Name] += strings.Count(e.Message, "Started action backup")
		}
		return len(started) == n, fmt.Sprintf("%d of %d NABs have their story", len(started), n)
	})
	for name, k := range started {
		c.Check(k, Equals, 1, Commentf("%s: actions started", name))
	}
	c.Check(droppedTotal(c)-dropped0, Equals, 0.0)
	c.Check(queueWaitSeconds(c) > waited0, Equals, true, Commentf("the queue of 4 was full at times"))
}

// gatedLimiter blocks Accept until release, then paces as RateLimiter.
type gatedLimiter struct {
	flowcontrol.RateLimiter
	open chan struct{}
	once sync.Once
}

func (g *gatedLimiter) Accept() {
	<-g.open
	g.RateLimiter.Accept()
}

func (g *gatedLimiter) release() { g.once.Do(func() { close(g.open) }) }

// droppedTotal is nacflow_events_dropped_total, every reason summed.
func droppedTotal(c *C) float64 { return metricValue(c, "nacflow_events_dropped_total", nil) }

// queueWaitSeconds is nacflow_event_queue_wait_seconds_total.
func queueWaitSeconds(c *C) float64 {
	return metricValue(c, "nacflow_event_queue_wait_seconds_total", nil)
}
