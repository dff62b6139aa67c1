package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmware-tanzu/velero/config/crd/v1/crds"
	v2alpha1crds "github.com/vmware-tanzu/velero/config/crd/v2alpha1/crds"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// plane is a local control plane (kube-apiserver and etcd) with CRDs
// installed, a client of it and an admin kubeconfig file for the
// controllers.
type plane struct {
	env         *envtest.Environment
	c           client.WithWatch
	cs          *kubernetes.Clientset
	dir, kcPath string
}

// startPlane starts a control plane from the binaries in assets with the
// CRDs of crdDirs and Velero's.
func startPlane(assets string, crdDirs []string) (*plane, error) {
	assets, _ = filepath.Abs(assets)
	p := &plane{env: &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crdDirs,
		CRDs: append(append(crds.CRDs[:0:0], crds.CRDs...), v2alpha1crds.CRDs...), ErrorIfCRDPathMissing: true}}
	// etcd's space quota at 8 GiB, not its default 2 GiB: 100,000 NABs
	// hold ~1.4 GiB live, and the old revisions the API server compacts
	// every 5 minutes more.
	p.env.ControlPlane.Etcd = &envtest.Etcd{}
	p.env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.Itoa(8<<30))
	restCfg, err := p.env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	if err := p.connect(restCfg); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// connect makes the clients and the kubeconfig file of a started plane.
func (p *plane) connect(restCfg *rest.Config) error {
	restCfg.QPS, restCfg.Burst = 2000, 4000
	scheme, err := v1alpha1.NewScheme()
	if err != nil {
		return err
	}
	if p.c, err = client.NewWithWatch(restCfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	p.cs = kubernetes.NewForConfigOrDie(restCfg)
	admin, err := p.env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, restCfg)
	if err != nil {
		return err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	if p.dir, err = os.MkdirTemp("", "nacflow-bench-"); err != nil {
		return err
	}
	p.kcPath = filepath.Join(p.dir, "kubeconfig")
	return os.WriteFile(p.kcPath, kc, 0o600)
}

// stop stops the control plane and removes its files.
func (p *plane) stop() {
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
	_ = p.env.Stop()
}

// etcdURL is the client URL of the plane's etcd.
func (p *plane) etcdURL() string { return p.env.ControlPlane.Etcd.URL.String() }

// createNamespaces creates the OADP namespace and m tenant namespaces
// (tenant-0000, ...) and returns their names, the OADP namespace first.
func (p *plane) createNamespaces(ctx context.Context, m int) ([]string, error) {
	nss := []string{oadpNS}
	for i := range m {
		nss = append(nss, fmt.Sprintf("tenant-%04d", i))
	}
	if err := parallel(ctx, len(nss), 20, func(i int) error {
		return p.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nss[i]}})
	}); err != nil {
		return nil, fmt.Errorf("creating namespaces: %w", err)
	}
	return nss, nil
}

// stage is nacflow's control plane with the scene (namespaces, unrelated
// Secrets) and nac running as a separate process, its /metrics scraped as
// Prometheus would (every -metrics-scrape-interval).
type stage struct {
	*plane
	// ctx ends with the run's, or when nac stops on its own (stopRun).
	ctx                context.Context
	stopRun            context.CancelCauseFunc
	nss                []string
	nac                *nacProc
	nacBin             string
	args, nacEnv       []string
	logPath, probeAddr string
	metricsAddr        string
	// nacMetrics scrapes nac's /metrics (and records its heap in heap).
	nacMetrics func() (map[string]float64, error)
	scrapes    atomic.Int64
	heap       heapPeak
	cleanups   []func()
}

// close stops nac and the control plane.
func (s *stage) close() {
	for _, f := range slices.Backward(s.cleanups) {
		f()
	}
}

// setUp starts the control plane, the scene and nac, and waits until nac
// serves (a probe NAB gets its Velero Backup). ctx is the run's; the
// stage's ctx derives from it.
func setUp(ctx context.Context, cfg config) (st *stage, err error) {
	p, err := startPlane(cfg.assets, []string{"config/crd/bases", "test/crds"})
	if err != nil {
		return nil, err
	}
	st = &stage{plane: p, nacBin: cfg.nac, cleanups: []func(){p.stop}}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.nss, err = p.createNamespaces(ctx, cfg.m); err != nil {
		return nil, err
	}
	if err := parallel(ctx, cfg.secrets, 20, func(i int) error {
		return p.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: st.nss[1+i%cfg.m], Name: fmt.Sprintf("unrelated-%d", i)},
			Data: map[string][]byte{"k": []byte(strings.Repeat("x", 512))}})
	}); err != nil {
		return nil, fmt.Errorf("creating secrets: %w", err)
	}
	if err := st.startNac(ctx, cfg); err != nil {
		return nil, err
	}
	debugf("control plane and scene ready")
	// Wait until the controller serves: a probe NAB gets its Velero Backup.
	if err := probe(st.ctx, p.c); err != nil {
		return nil, errors.Join(err, context.Cause(st.ctx))
	}
	debugf("probe served")
	// Scraped as Prometheus would be on a cluster: over HTTPS with the
	// token of a ServiceAccount bound to the metrics reader role (the
	// endpoint's TokenReview and SubjectAccessReview are part of the cost).
	token, err := scraperToken(st.ctx, p.cs, cfg.metricsRole)
	if err != nil {
		return nil, err
	}
	st.nacMetrics = func() (map[string]float64, error) {
		nm, err := scrapeController(st.ctx, st.metricsAddr, token)
		if err == nil {
			st.heap.observe(nm)
		}
		return nm, err
	}
	if cfg.scrapeEvery > 0 {
		go st.scrapeEvery(cfg.scrapeEvery)
	}
	return st, nil
}

// startNac starts the controller, as a separate process, on free
// addresses. Backup sync and garbage collection run at their defaults,
// and the metrics endpoint is scraped: the periodic loops are part of the
// cost. The probes have a port of their own, so that the restart can ask
// /readyz when the controller is ready.
func (st *stage) startNac(ctx context.Context, cfg config) error {
	var err error
	if st.metricsAddr, err = freeAddr(); err != nil {
		return err
	}
	if st.probeAddr, err = freeAddr(); err != nil {
		return err
	}
	st.args = []string{"--kubeconfig", st.kcPath, "--oadp-namespace", oadpNS,
		"--metrics-bind-address", st.metricsAddr, "--health-probe-bind-address", st.probeAddr,
		"--queue-refresh-window", cfg.window.String(), "--zap-log-level", "error", "--pprof-bind-address", cfg.pprof,
		"--max-backups-in-velero-per-namespace", strconv.Itoa(cfg.maxInVelero),
		"--usage-measure-rate", strconv.FormatFloat(cfg.usageRate, 'g', -1, 64),
		// The played download service listens on loopback, which nac
		// refuses by default: without this every verification ends
		// VerificationUnavailable and the bench measures that instead.
		"--endpoint-allow-cidrs", "127.0.0.1/32"}
	st.args = append(st.args, strings.Fields(cfg.nacArgs)...)
	st.nacEnv = os.Environ()
	if cfg.nacGOGC != "" {
		st.nacEnv = append(st.nacEnv, "GOGC="+cfg.nacGOGC)
	}
	if cfg.nacMemLimit != "" {
		st.nacEnv = append(st.nacEnv, "GOMEMLIMIT="+cfg.nacMemLimit)
	}
	st.logPath = filepath.Join(st.dir, "nac.log")
	// The controller stopping on its own ends the run, with its last words.
	st.ctx, st.stopRun = context.WithCancelCause(ctx)
	st.cleanups = append(st.cleanups, func() { st.stopRun(nil) })
	if err := st.restartNac(); err != nil {
		return err
	}
	st.cleanups = append(st.cleanups, func() { st.nac.stop() })
	return nil
}

// restartNac starts nac with the stage's flags (again, after a stop).
func (st *stage) restartNac() error {
	nac, err := startNac(st.nacBin, st.args, st.nacEnv, st.logPath, st.stopRun)
	if err != nil {
		return err
	}
	st.nac = nac
	return nil
}

// scrapeEvery scrapes nac's /metrics every interval until the run ends.
func (st *stage) scrapeEvery(interval time.Duration) {
	for {
		select {
		case <-st.ctx.Done():
			return
		case <-time.After(interval):
			if _, err := st.nacMetrics(); err == nil {
				st.scrapes.Add(1)
			}
		}
	}
}

// pid is the running nac's process id.
func (st *stage) pid() int { return st.nac.pid() }

// heapPeak keeps the highest Go heap a controller's /metrics showed:
// go_memstats_heap_inuse_bytes (the spans in use: live objects and not yet
// swept garbage, the runtime's HeapInuse) and go_memstats_heap_alloc_bytes
// (the allocated objects, live and not yet swept: HeapAlloc).
type heapPeak struct {
	mu           sync.Mutex
	inuse, alloc float64
}

func (h *heapPeak) observe(nm map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inuse = max(h.inuse, nm["go_memstats_heap_inuse_bytes"])
	h.alloc = max(h.alloc, nm["go_memstats_heap_alloc_bytes"])
}

// take returns the peaks in MiB and starts over (for a new process).
func (h *heapPeak) take() (inuseMiB, allocMiB float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	inuseMiB, allocMiB = h.inuse/(1<<20), h.alloc/(1<<20)
	h.inuse, h.alloc = 0, 0
	return inuseMiB, allocMiB
}

// waveTimes are the times of a NAB wave.
type waveTimes struct {
	start, last time.Time
	createdIn   time.Duration
	// lat is each NAB's create → Velero Backup, sorted.
	lat []time.Duration
}

// wave creates n NABs with create on k clients and waits until the Velero
// Backup of each (its origin annotations, namespace/name, key(i)) has
// appeared in the OADP namespace, watching them.
func wave(ctx context.Context, c client.WithWatch, n, k int, key func(int) string, create func(int) error) (*waveTimes, error) {
	seen := map[string]time.Time{}
	var seenMu sync.Mutex
	// The watches end with the wave (wctx).
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	w, err := c.Watch(wctx, &velerov1.BackupList{}, client.InNamespace(oadpNS))
	if err != nil {
		return nil, err
	}
	allSeen := make(chan struct{})
	go func() {
		// The API server ends a watch after its timeout (30 to 60 min):
		// a wave of 100,000 outlasts it. A new watch without a resource
		// version starts with every existing Backup as Added, so none
		// is missed (a Backup seen again keeps its first time).
		for wctx.Err() == nil {
			for ev := range w.ResultChan() {
				if ev.Type != watch.Added {
					continue
				}
				b := ev.Object.(*velerov1.Backup)
				key := b.Annotations[v1alpha1.NabOriginNamespaceAnnotation] + "/" + b.Annotations[v1alpha1.NabOriginNameAnnotation]
				seenMu.Lock()
				if _, ok := seen[key]; !ok && strings.HasPrefix(key, "tenant-") {
					seen[key] = time.Now()
					if len(seen) == n {
						close(allSeen)
					}
				}
				seenMu.Unlock()
			}
			w.Stop()
			for wctx.Err() == nil {
				var err error
				if w, err = c.Watch(wctx, &velerov1.BackupList{}, client.InNamespace(oadpNS)); err == nil {
					break
				}
				time.Sleep(time.Second)
			}
		}
	}()
	created := make([]time.Time, n)
	wt := &waveTimes{start: time.Now()}
	if err := parallel(ctx, n, k, func(i int) error {
		created[i] = time.Now()
		return create(i)
	}); err != nil {
		return nil, fmt.Errorf("creating NABs: %w", err)
	}
	debugf("NABs created")
	wt.createdIn = time.Since(wt.start)
	select {
	case <-allSeen:
	case <-ctx.Done():
		seenMu.Lock()
		defer seenMu.Unlock()
		return nil, fmt.Errorf("timed out: %d of %d Velero Backups seen", len(seen), n)
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	for i := range n {
		t := seen[key(i)]
		wt.lat = append(wt.lat, t.Sub(created[i]))
		if t.After(wt.last) {
			wt.last = t
		}
	}
	slices.Sort(wt.lat)
	debugf("all Velero Backups seen")
	return wt, nil
}
