package controllers

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type InFlightSuite struct{}

var _ = Suite(&InFlightSuite{})

// served is a DownloadRequest made for NAB tenant/nab, at resource version rv.
func served(rv string) *velerov1.DownloadRequest {
	return &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-adp", Name: "dr", ResourceVersion: rv,
		Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "tenant", v1alpha1.NabOriginNameAnnotation: "nab"}}}
}

// A Velero object's change wakes the NAB waiting on it ahead of new
// operations (priority 0) on controller-runtime's priority queue; its
// creation, an unchanged resync and the initial list keep their priority.
func (s *InFlightSuite) TestVeleroChangesGoFirst(c *C) {
	ctx := context.Background()
	h := toOrigin[*v1alpha1.NonAdminBackup]()
	nab := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: "nab"}}
	other := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: "new"}}
	for _, tc := range []struct {
		what string
		add  func(q requests)
		want int
	}{
		{"update", func(q requests) {
			h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: served("1"), ObjectNew: served("2")}, q)
		}, PriorityInFlight},
		{"delete", func(q requests) { h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: served("2")}, q) }, PriorityInFlight},
		{"unchanged update (resync)", func(q requests) {
			h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: served("2"), ObjectNew: served("2")}, q)
		}, handler.LowPriority},
		{"create", func(q requests) { h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: served("1")}, q) }, 0},
		{"initial list", func(q requests) {
			h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: served("1"), IsInInitialList: true}, q)
		}, handler.LowPriority},
	} {
		q := priorityqueue.New[reconcile.Request]("inflight-" + tc.what)
		// A new operation queued first, at priority 0.
		q.AddWithOpts(priorityqueue.AddOpts{}, other)
		tc.add(q)
		c.Assert(q.Len(), Equals, 2, Commentf("%s", tc.what))
		first, prio, _ := q.GetWithPriority()
		if tc.want > 0 {
			c.Check(first, Equals, nab, Commentf("%s: the waiting NAB first", tc.what))
			c.Check(prio, Equals, tc.want, Commentf("%s", tc.what))
		} else {
			c.Check(first, Equals, other, Commentf("%s: the new operation first", tc.what))
			q.Done(first)
			got, prio, _ := q.GetWithPriority()
			c.Check(got, Equals, nab, Commentf("%s", tc.what))
			c.Check(prio, Equals, tc.want, Commentf("%s", tc.what))
		}
		q.ShutDown()
	}
}

// On a plain work queue the wrapper changes nothing: the request is added.
func (s *InFlightSuite) TestPlainQueue(c *C) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	toOrigin[*v1alpha1.NonAdminBackup]().Update(context.Background(),
		event.TypedUpdateEvent[client.Object]{ObjectOld: served("1"), ObjectNew: served("2")}, q)
	c.Assert(q.Len(), Equals, 1)
	got, _ := q.Get()
	c.Check(got.NamespacedName, Equals, types.NamespacedName{Namespace: "tenant", Name: "nab"})
}

// A worker waiting on the queue when it shuts down gets shutdown at once,
// and so does one asking afterwards: the manager's stop does not wait out
// its grace period (controller-runtime v0.21's own queue leaves them
// waiting).
func (s *InFlightSuite) TestShutdownWakesWaitingWorkers(c *C) {
	q := newQueue("inflight-shutdown", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	c.Assert(ok, Equals, true, Commentf("the controllers see a priority queue"))
	item := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: "nab"}}
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: PriorityInFlight}, item)
	got, prio, shutdown := pq.GetWithPriority()
	c.Assert(shutdown, Equals, false)
	c.Check(got, Equals, item)
	c.Check(prio, Equals, PriorityInFlight)
	pq.Done(got)

	waiting := make(chan bool, 2)
	for range 2 {
		go func() { _, _, shutdown := pq.GetWithPriority(); waiting <- shutdown }()
	}
	time.Sleep(50 * time.Millisecond) // both workers are waiting
	pq.ShutDown()
	for range 2 {
		select {
		case shutdown := <-waiting:
			c.Check(shutdown, Equals, true)
		case <-time.After(5 * time.Second):
			c.Fatal("a worker waiting on the queue was not woken by its shutdown")
		}
	}
	after := make(chan bool, 1)
	go func() { _, shutdown := pq.Get(); after <- shutdown }()
	select {
	case shutdown := <-after:
		c.Check(shutdown, Equals, true)
	case <-time.After(5 * time.Second):
		c.Fatal("Get after the shutdown waited")
	}
	pq.ShutDown() // twice: no panic
}
