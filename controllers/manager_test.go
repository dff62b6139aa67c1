package controllers_test

import (
	"context"
	"strings"
	"sync"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/controllers"
	"github.com/nacflow/nacflow/dpa"
	"github.com/nacflow/nacflow/engine"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
	"github.com/nacflow/nacflow/internal/runtime/events"
	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
	"github.com/nacflow/nacflow/internal/runtime/restmapper"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
	"github.com/nacflow/nacflow/phases"
)

// controllerOptions configure one in-process controller, built as cmd/nac
// builds it.
type controllerOptions struct {
	// cfg reaches the API server (nil: testCfg).
	cfg *rest.Config
	// oadp is the OADP namespace.
	oadp string
	// requireApproval is --require-approval-for-bsl.
	requireApproval bool
	// selector, when set, limits the NAC objects seen to those it matches,
	// so that a suite's controller leaves other suites' objects alone.
	selector labels.Selector
	// wrap, when set, wraps the manager's client (fault injection).
	wrap func(client.Client) client.Client
	// restart: another controller of the same names ran in this process.
	restart bool
	// events, when set, is the manager's event broadcaster (the caller
	// shuts it down); else an unpaced one.
	events *events.Broadcaster
	// maxInVelero is --max-backups-in-velero-per-namespace (0: unlimited,
	// what the suites written before it expect).
	maxInVelero int
	// maxRestores is --max-restores-in-velero-per-namespace (0: unlimited,
	// what the suites written before it expect).
	maxRestores int
	// concurrency is --max-concurrent-reconciles (0: controller-runtime's
	// default, 1).
	concurrency int
	// usageRate is --usage-measure-rate (0: off, what the suites written
	// before it expect: their DownloadRequests are counted).
	usageRate float64
	// observe, when set, is told of each reconcile this controller starts
	// (besides reconciled).
	observe func(kind string, req ctrl.Request)
	// requesters tell who asked for a NonAdminRestore (zero: no one is
	// known, as without nac's webhook).
	requesters phases.Requesters
}

// startController starts the NAC controllers and the Blueprint controller in
// a manager, as cmd/nac does, and returns a func that stops it (like a kill:
// reconciles in flight see their context cancelled) and waits until it has.
func startController(c *C, o controllerOptions) (stop func()) {
	_, stop = startManager(c, o)
	return stop
}

// startManager is startController that also returns the manager, so that a
// caller can wait for its caches.
func startManager(c *C, o controllerOptions) (ctrl.Manager, func()) {
	cfg := o.cfg
	if cfg == nil {
		cfg = testCfg
	}
	cacheOpts := controllers.CacheOptions(o.oadp, pagedlist.DefaultPageSize)
	if o.selector != nil {
		for _, obj := range []client.Object{&v1alpha1.NonAdminBackup{}, &v1alpha1.NonAdminRestore{}, &v1alpha1.NonAdminBackupStorageLocation{},
			&v1alpha1.NonAdminSchedule{}} {
			cacheOpts.ByObject[obj] = cache.ByObject{Label: o.selector}
		}
	}
	broadcaster := o.events
	if broadcaster == nil {
		broadcaster = events.NewBroadcaster(0, 0, 0) // unlimited: tests read events at once
	}
	opts := ctrl.Options{
		Scheme:           testScheme,
		Metrics:          metricsserver.Options{BindAddress: "0"},
		Cache:            cacheOpts,
		MapperProvider:   restmapper.New,
		EventBroadcaster: broadcaster, //nolint:staticcheck // shut down with the manager below
		Controller:       config.Controller{SkipNameValidation: &o.restart, MaxConcurrentReconciles: o.concurrency},
	}
	if o.wrap != nil {
		opts.NewClient = func(cfg *rest.Config, co client.Options) (client.Client, error) {
			cl, err := client.New(cfg, co)
			if err != nil {
				return nil, err
			}
			return o.wrap(cl), nil
		}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	c.Assert(err, IsNil)
	queue := veleroqueue.NewBackupQueue()
	// As cmd/nac: flags given win, else the OADP namespace's DPA.
	settings := &dpa.Source{Reader: mgr.GetAPIReader(), Namespace: o.oadp}
	if o.requireApproval {
		settings.Flags.RequireApprovalForBSL = &o.requireApproval
	}
	turns := veleroqueue.NewTurns(mgr.GetClient(), o.oadp)
	registry, err := phases.NewRegistry(phases.Clients{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor("nacflow-blueprint"), Queue: queue, Turns: turns},
		phases.Options{RequireApprovalForBSL: o.requireApproval, Settings: settings, MaxBackupsInVelero: o.maxInVelero, MaxRestoresInVelero: o.maxRestores, Resolver: testDNS, Endpoints: veleroDownloads.endpoints(c),
			Requesters: o.requesters,
			Quotas:     phases.BlueprintQuotas{Resolver: &blueprints.Resolver{Reader: mgr.GetClient(), Namespace: o.oadp}}})
	c.Assert(err, IsNil)
	deps := func(kind string) controllers.Deps {
		recorder := mgr.GetEventRecorderFor(strings.ToLower(kind) + "-controller")
		return controllers.Deps{
			Client:        mgr.GetClient(),
			APIReader:     mgr.GetAPIReader(),
			Runner:        &engine.Runner{Registry: registry, Recorder: recorder, Observer: nacmetrics.Observer{Kind: kind}},
			Recorder:      recorder,
			Blueprints:    &blueprints.Resolver{Reader: mgr.GetClient(), Namespace: o.oadp},
			OADPNamespace: o.oadp,
			Observe: func(kind string, req ctrl.Request) {
				reconciled.observe(kind, req)
				if o.observe != nil {
					o.observe(kind, req)
				}
			},
		}
	}
	// Every kind of the registry, as cmd/nac starts them.
	reconcilers, err := controllers.NewReconcilers(&controllers.Shared{Deps: deps,
		Queue: queue, Turns: turns, QueueRefreshWindow: time.Second,
		Usage:                 controllers.NewUsageMeter(registry, o.oadp, o.usageRate, controllers.DefaultUsageMeasureBurst),
		RequireApprovalForBSL: o.requireApproval, Settings: settings, CredentialCheckPeriod: time.Second,
		EndpointRevision: phases.EndpointRevision(testDNS)})
	c.Assert(err, IsNil)
	for _, r := range reconcilers {
		c.Assert(r.SetupWithManager(mgr), IsNil)
	}
	bpr := &controllers.BlueprintReconciler{Client: mgr.GetClient(), Registry: registry,
		Recorder: mgr.GetEventRecorderFor("blueprint-controller"), OADPNamespace: o.oadp}
	c.Assert(bpr.SetupWithManager(mgr), IsNil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return mgr, func() {
		cancel()
		c.Check(<-done, IsNil)
		broadcaster.Shutdown()
	}
}

// reconciled counts the reconciles of every NAC object of this process, per
// kind and object, as every controller the tests start reports them
// (controllers.Deps.Observe). A check that a controller is quiet counts the
// objects under test here, never controller-runtime's reconcile_total: that
// one counts every object of the controller, and a controller started
// without a label selector reconciles every earlier test's objects at its
// start, later on a slower machine.
var reconciled = &reconcileCounts{n: map[reconcileKey]int{}}

type reconcileKey struct {
	kind string
	key  types.NamespacedName
}

type reconcileCounts struct {
	mu sync.Mutex
	n  map[reconcileKey]int
}

func (r *reconcileCounts) observe(kind string, req ctrl.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[reconcileKey{kind, req.NamespacedName}]++
}

// of returns how many reconciles the objects of kind (NonAdminBackup, …)
// named by objs have had in this process, together.
func (r *reconcileCounts) of(kind string, objs ...client.Object) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	for _, o := range objs {
		total += r.n[reconcileKey{kind, client.ObjectKeyFromObject(o)}]
	}
	return total
}
