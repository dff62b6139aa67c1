package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/controllers"
)

// FaultSuite makes the API server fail the controller — random transient
// errors, a persistent error, a whole outage — and checks that operations
// still complete, once each, with capped backoff and no hot loop.
type FaultSuite struct{}

var _ = Suite(&FaultSuite{})

// transientErrors are what an API server under stress or restarting answers.
func transientErrors() []error {
	gr := schema.GroupResource{Group: "velero.io", Resource: "backups"}
	return []error{
		apierrors.NewServiceUnavailable("the server is restarting"),
		apierrors.NewTooManyRequests("too many requests", 1),
		apierrors.NewInternalError(errors.New("etcdserver: request timed out")),
		apierrors.NewServerTimeout(gr, "create", 1),
		apierrors.NewConflict(gr, "x", errors.New("the object has been modified")),
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
	}
}

// faultyWrites wraps a controller's client so that each write fails, before
// reaching the API server, when fail says so.
func faultyWrites(fail func(verb string, obj client.Object) error) func(client.Client) client.Client {
	return func(cl client.Client) client.Client {
		return interceptor.NewClient(withWatch{cl}, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := fail("create", obj); err != nil {
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if err := fail("patch", obj); err != nil {
					return err
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if err := fail("update", obj); err != nil {
					return err
				}
				return c.Update(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if err := fail("delete", obj); err != nil {
					return err
				}
				return c.Delete(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := fail("patch "+sub, obj); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		})
	}
}

// faultRun is one test's OADP namespace, its label for the NAC objects its
// controller sees, and Velero played in it.
type faultRun struct {
	oadp, run string
	sel       labels.Selector
	stop      context.CancelFunc
}

func newFaultRun(c *C) *faultRun {
	oadp := createNamespace(c, "faults-oadp")
	run := strings.TrimPrefix(oadp, "faults-oadp-")
	ctx, cancel := context.WithCancel(context.Background())
	go playVelero(ctx, oadp)
	return &faultRun{oadp: oadp, run: run, sel: labels.SelectorFromSet(labels.Set{chaosRunLabel: run}), stop: cancel}
}

// ops creates n NonAdminBackups (and a restore of every other one) in a new
// tenant namespace, labelled for this run's controller.
func (r *faultRun) ops(c *C, n int) []client.Object {
	ns := createNamespace(c, "faults-tenant")
	var out []client.Object
	for i := range n {
		nab := newNAB(ns, fmt.Sprintf("b%d", i), velerov1.BackupSpec{})
		nab.Labels = map[string]string{chaosRunLabel: r.run}
		c.Assert(testClient.Create(context.Background(), nab), IsNil)
		out = append(out, nab)
	}
	for i := 0; i < n; i += 2 {
		nar := newNAR(ns, fmt.Sprintf("r%d", i), velerov1.RestoreSpec{BackupName: fmt.Sprintf("b%d", i)})
		nar.Labels = map[string]string{chaosRunLabel: r.run}
		c.Assert(testClient.Create(context.Background(), nar), IsNil)
		out = append(out, nar)
	}
	return out
}

// allComplete waits until every operation's plan is complete, then checks
// that no phase used up an attempt on the API server's errors and that each
// has exactly one Velero object.
func (r *faultRun) allComplete(c *C, ops []client.Object, timeout time.Duration) {
	ctx := context.Background()
	eventually(c, timeout, func() (bool, string) {
		for _, op := range ops {
			if msg := chaosOpUnsettled(ctx, r.oadp, &chaosOp{obj: op}); msg != "" {
				return false, msg
			}
		}
		return true, ""
	})
	for _, op := range ops {
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(op), op), IsNil)
		for _, ps := range op.(interface{ GetPlan() *v1alpha1.PlanStatus }).GetPlan().Phases {
			c.Check(ps.Attempts <= 1, Equals, true, Commentf("%s phase %s: %d attempts", client.ObjectKeyFromObject(op), ps.Name, ps.Attempts))
		}
		uuid := v1alpha1.DerivedNACUUID(op)
		switch op.(type) {
		case *v1alpha1.NonAdminBackup:
			c.Check(veleroBackupsOf(c, r.oadp, uuid), HasLen, 1)
		case *v1alpha1.NonAdminRestore:
			c.Check(veleroRestoresOf(c, r.oadp, uuid), HasLen, 1)
		}
	}
}

// One write in seven fails with a transient error: every operation still
// completes, once, without using up a retry, and the reconciles stay
// within a small multiple of the operations (no hot loop).
func (s *FaultSuite) TestTransientErrors(c *C) {
	r := newFaultRun(c)
	defer r.stop()
	var mu sync.Mutex
	seed := uint64(time.Now().UnixNano())
	c.Logf("seed %d", seed) // which writes fail; the interleaving is the scheduler's
	rng := rand.New(rand.NewPCG(seed, 3))
	errs := transientErrors()
	var injected atomic.Int64
	wrap := faultyWrites(func(string, client.Object) error {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() < 0.15 {
			injected.Add(1)
			return errs[rng.IntN(len(errs))]
		}
		return nil
	})
	stop := startController(c, controllerOptions{oadp: r.oadp, selector: r.sel, wrap: wrap, restart: true})
	defer stop()
	ops := r.ops(c, 30)
	r.allComplete(c, ops, 90*time.Second)
	// These operations' own reconciles (they are new: every one counted
	// is this test's).
	n := reconciled.of("NonAdminBackup", ops...) + reconciled.of("NonAdminRestore", ops...)
	c.Logf("%d operations, %d injected errors, %d reconciles", len(ops), injected.Load(), n)
	c.Check(injected.Load() > 8, Equals, true) // about 20 expected
	c.Check(n < 15*len(ops), Equals, true, Commentf("%d reconciles for %d operations", n, len(ops)))
}

// Creating Velero Backups fails until the test lets it succeed: the NAB's
// reconciles back off exponentially (250ms, 500ms, 1s: not a hot loop), and
// once the API server answers again the operation completes.
//
// No rate over a wall-clock window: each attempt is timed, and each gap
// must be at least the backoff delay that precedes it (the workqueue
// schedules the next attempt that long after the failed reconcile ended). A
// hot loop, an immediate requeue or a constant delay comes sooner; a slow
// machine only later, so this cannot fail for being slow.
func (s *FaultSuite) TestPersistentErrorBacksOff(c *C) {
	r := newFaultRun(c)
	defer r.stop()
	var failing atomic.Bool
	failing.Store(true)
	var mu sync.Mutex
	var attempts []time.Time
	wrap := faultyWrites(func(verb string, obj client.Object) error {
		if _, ok := obj.(*velerov1.Backup); ok && verb == "create" && failing.Load() {
			mu.Lock()
			attempts = append(attempts, time.Now())
			mu.Unlock()
			return apierrors.NewServiceUnavailable("etcd is down")
		}
		return nil
	})
	stop := startController(c, controllerOptions{oadp: r.oadp, selector: r.sel, wrap: wrap, restart: true})
	defer stop()
	ops := r.ops(c, 1)
	min := controllers.DefaultMinRetryDelay // 250ms: startController sets none
	backoff := []time.Duration{min, 2 * min, 4 * min}
	eventually(c, 30*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts) > len(backoff), fmt.Sprintf("%d attempts to create the Velero Backup", len(attempts))
	})
	failing.Store(false)
	mu.Lock()
	var gaps []time.Duration
	for i := 1; i < len(attempts); i++ {
		gaps = append(gaps, attempts[i].Sub(attempts[i-1]))
	}
	mu.Unlock()
	c.Logf("%d attempts, %v apart", len(gaps)+1, gaps)
	for i, d := range backoff {
		c.Check(gaps[i] >= d, Equals, true, Commentf("attempt %d came %s after attempt %d: sooner than the %s backoff", i+2, gaps[i], i+1, d))
	}
	got := getNAB(c, ops[0].(*v1alpha1.NonAdminBackup))
	c.Check(got.Status.Plan.Phase("createBackup").Message, Matches, "the API server could not answer, retrying: .*etcd is down.*")
	r.allComplete(c, ops, 30*time.Second)

	// The backoff itself: doubling from --min-retry-delay, capped at --max-retry-delay.
	rl := controllers.NewRateLimiter(250*time.Millisecond, time.Minute)
	item := reconcile.Request{}
	var delays []time.Duration
	for range 10 {
		delays = append(delays, rl.When(item))
	}
	c.Check(delays, DeepEquals, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute})
	rl.Forget(item)
	c.Check(rl.When(item), Equals, 250*time.Millisecond)
}

// flakyProxy forwards TCP to the API server and can go down like a
// restarting API server: every open connection (watches included) is cut
// and new ones are refused until it comes back.
type flakyProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
}

func newFlakyProxy(c *C, target string) *flakyProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	p := &flakyProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p
}

func (p *flakyProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		go pipe(in, out)
		go pipe(out, in)
	}
}

// setDown takes the "API server" down (cutting every connection) or up.
func (p *flakyProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for conn := range p.conns {
			_ = conn.Close()
		}
		p.conns = map[net.Conn]struct{}{}
	}
}

func (p *flakyProxy) close() { _ = p.ln.Close(); p.setDown(true) }

// The API server goes away for 5 s in the middle of a run — watches cut,
// connections refused — while tenants create more NABs and Velero finishes
// backups. Once it is back, every operation completes, once, with no
// attempt used up.
func (s *FaultSuite) TestAPIServerOutage(c *C) {
	r := newFaultRun(c)
	defer r.stop()
	u, err := url.Parse(testCfg.Host)
	c.Assert(err, IsNil)
	proxy := newFlakyProxy(c, u.Host)
	defer proxy.close()
	cfg := rest.CopyConfig(testCfg)
	cfg.Host = "https://" + proxy.ln.Addr().String()
	stop := startController(c, controllerOptions{cfg: cfg, oadp: r.oadp, selector: r.sel, restart: true})
	defer stop()

	first := r.ops(c, 10)
	eventually(c, 20*time.Second, func() (bool, string) {
		for _, op := range first {
			if nab, ok := op.(*v1alpha1.NonAdminBackup); ok {
				if got := getNAB(c, nab); got.Status.VeleroBackup == nil || got.Status.VeleroBackup.Name == "" {
					return false, "no Velero Backup yet for " + nab.Name
				}
			}
		}
		return true, ""
	})
	proxy.setDown(true)
	second := r.ops(c, 10) // created while the controller cannot reach the API server
	time.Sleep(5 * time.Second)
	proxy.setDown(false)
	r.allComplete(c, append(first, second...), 90*time.Second)
}
