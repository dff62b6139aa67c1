// Command bench measures nacflow against a real local kube-apiserver + etcd
// (make bench): it starts the control plane, the nac binary as a separate
// process, plays Velero itself (status patches, never inside the product),
// creates N NonAdminBackups over M namespaces with C concurrent clients, and
// reports throughput, create→Velero Backup latency, the controller's API
// writes per NAB by verb and resource (from the API server's
// apiserver_request_total, less the bench's own writes), conflicts, writes
// per completion and per completion burst (with the burst's CPU seconds and
// NAB reconciles per completion; Velero's download service played or absent,
// -downloads), and the controller's CPU seconds and peak RSS. -restart
// measures instead a restart over settled NABs: seconds to ready, writes
// until quiet. It prints a table and writes JSON.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type config struct {
	n, m, c, secrets, burst int
	// maxInVelero is nac's --max-backups-in-velero-per-namespace.
	maxInVelero int
	// usageRate is nac's --usage-measure-rate.
	usageRate              float64
	assets, nac, jsonOut   string
	pprof, nacGOGC         string
	nacMemLimit            string
	nacArgs, apiserverProf string
	heapProfile            string
	scrapeEvery            time.Duration
	metricsRole            string
	timeout                time.Duration
	window                 time.Duration
	// downloads is -downloads: served or absent.
	downloads       string
	burstWaitVerify bool
	restart         bool
	restartObserve  time.Duration
	// scale is -scale (make bench-scale); oadp, oadpN and oadpCRDs run
	// OADP NAC beside it.
	scale          bool
	oadp, oadpCRDs string
	oadpN          int
	// downloadTTL is -download-ttl: the expiration of served
	// DownloadRequests in -scale, after which the bench deletes them as
	// Velero does.
	downloadTTL time.Duration
}

// Result is what one run measured (the JSON output).
type Result struct {
	NABs, Namespaces, Clients, UnrelatedSecrets int
	ThroughputPerSec                            float64
	CreationSeconds                             float64
	LatencyP50, LatencyP90, LatencyP99          string
	WritesPerNAB                                float64
	WritesPerNABByResource                      map[string]float64
	EventWritesPerNAB                           float64
	EventsDropped                               float64
	EventDrainSeconds                           float64
	ControllerMetricsScrapes                    int
	Conflicts                                   int
	WritesForOneCompletion                      int
	// ReconcilesForOneCompletion are the NonAdminBackup reconciles it
	// caused (controller_runtime_reconcile_total).
	ReconcilesForOneCompletion  int
	BurstSize                   int
	WritesForBurst              int
	WaitingNABsAtBurst          int
	PositionWritesOneCompletion int
	PositionWritesSerialDrain   int
	ControllerCPUSeconds        float64
	ControllerPeakRSSMiB        float64
	// ControllerRSSAnonMiB and ControllerRSSFileMiB split the resident set
	// at the end of the run: the heap and the runtime's memory, and the
	// binary's mapped code and data.
	ControllerRSSAnonMiB, ControllerRSSFileMiB float64
	// ReadsPerNAB are the GETs and LISTs of the wave (all clients less the
	// bench's own, which are none during it) per NAB.
	ReadsPerNAB float64
	// Downloads says whether the bench played Velero's download service
	// (served) or not (absent).
	Downloads string
	// OneCompletion and Burst are the figures of the one completion and
	// of the burst, until the controller was quiet; BurstVerified those
	// of the burst until every completed NAB's plan ended
	// (-burst-wait-verify).
	OneCompletion, Burst, BurstVerified *Figures `json:",omitempty"`
	// Restart is the restart mode's (-restart).
	Restart *Restart `json:",omitempty"`
}

// mainScale runs the scale mode and returns the exit code.
func mainScale(cfg config) int {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "timeout" })
	if cfg.pprof == "" {
		// The live heap at the end comes from nac's pprof endpoint.
		addr, err := freeAddr()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		cfg.pprof = addr
	}
	res, err := runScale(cfg, scaleTimeout(cfg, given))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	printScaleTable(os.Stdout, res)
	return writeJSON(cfg.jsonOut, res)
}

// writeJSON writes v as indented JSON to file (nothing for ""), and
// returns the exit code.
func writeJSON(file string, v any) int {
	if file == "" {
		return 0
	}
	data, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func main() {
	// envtest logs through controller-runtime's logger: nothing to say.
	ctrllog.SetLogger(logr.Discard())
	var cfg config
	flag.IntVar(&cfg.n, "n", 1000, "NonAdminBackups to create.")
	flag.IntVar(&cfg.m, "m", 100, "Tenant namespaces they are spread over.")
	flag.IntVar(&cfg.c, "c", 10, "Concurrent clients creating them.")
	flag.IntVar(&cfg.secrets, "secrets", 0, "Unrelated Secrets to create first (spread over the namespaces).")
	flag.IntVar(&cfg.burst, "burst", 100, "Backups Velero completes at once in the burst measurement, after one completion (at most n-1: 999 with -n 1000 completes all the others). The burst is measured until the controller is quiet: CPU, NAB reconciles and writes per completion, with and without events.")
	flag.StringVar(&cfg.downloads, "downloads", downloadsServed, "Velero's download service: served (the bench processes each DownloadRequest as soon as its watch shows it, with a URL to a local server of the file, as Velero would; its patches are not counted as the controller's) or absent (nothing serves them: verification waits for its timeout).")
	flag.BoolVar(&cfg.burstWaitVerify, "burst-wait-verify", false, "After the burst is quiet, also wait until every completed NAB's plan has ended (complete or failed; with -downloads absent that is verification's 2-minute timeout) and report the burst's figures until then too.")
	flag.BoolVar(&cfg.restart, "restart", false, "Restart mode, instead of the completions: create n NABs, settle them into a mix (a third Completed with downloads served, a third waiting in Velero's queue, a third Failed), wait until the controller is quiet and the plans that can end have ended, stop nac (SIGTERM), start it again with the same flags and report the seconds until its /readyz answers and its writes (by verb and resource, events included) until it is quiet again.")
	flag.IntVar(&cfg.maxInVelero, "max-backups-in-velero", 0, "nac's --max-backups-in-velero-per-namespace during the run. 0 (unlimited), not nac's default of 2: the targets (create→Velero Backup p99, writes per NAB) measure backups created at once, which the fair share of Velero's queue would hold back on purpose.")
	flag.StringVar(&cfg.assets, "assets", "bin", "Directory of kube-apiserver and etcd.")
	flag.StringVar(&cfg.nac, "nac", "bin/nac", "The nac binary.")
	flag.StringVar(&cfg.jsonOut, "json", "", "Write the result as JSON to this file.")
	flag.DurationVar(&cfg.timeout, "timeout", 20*time.Minute, "Give up after this long.")
	flag.DurationVar(&cfg.window, "queue-refresh-window", 2*time.Second, "nac's --queue-refresh-window during the run.")
	flag.Float64Var(&cfg.usageRate, "usage-measure-rate", 0, "nac's --usage-measure-rate during the run. 0 (off), not nac's default of 1 a second: the targets measure a backup's own path; measuring usage is a paced background cost of one DownloadRequest and one status write a backup, which at 1 a second would keep the controller from ever being quiet after a burst of 1,000.")
	flag.StringVar(&cfg.nacArgs, "nac-args", "", "Extra nac flags, space-separated (e.g. \"--max-concurrent-reconciles=16\").")
	flag.StringVar(&cfg.apiserverProf, "apiserver-cpu-profile", "", "Write an 8 s CPU profile of the kube-apiserver, taken as the NAB wave starts, to this file.")
	flag.StringVar(&cfg.pprof, "pprof", "", "nac's --pprof-bind-address during the run (to profile it).")
	flag.DurationVar(&cfg.restartObserve, "restart-observe", 0, "With -restart, also count the writes from the restart until this long after it (then quiet again), e.g. 150s to include the first periodic backup sync (every 2 min); 0: until quiet only.")
	flag.StringVar(&cfg.nacGOGC, "nac-gogc", "", "GOGC for the nac process only (empty: nac's default, 50).")
	flag.StringVar(&cfg.nacMemLimit, "nac-gomemlimit", "", "GOMEMLIMIT for the nac process only (e.g. 140MiB; empty: nac's default, a budget of 150 MiB resident less the binary's pages, that follows a larger live heap).")
	flag.StringVar(&cfg.heapProfile, "heap-profile", "", "Write the controller's heap profile, taken after the wave settled, to this file (needs -pprof).")
	flag.DurationVar(&cfg.scrapeEvery, "metrics-scrape-interval", 15*time.Second, "Scrape the controller's /metrics this often during the run, as Prometheus would (0: never).")
	flag.StringVar(&cfg.metricsRole, "metrics-reader-role", "config/rbac/metrics_reader_role.yaml", "The ClusterRole that may scrape nac's /metrics, bound to the bench's scraper.")
	flag.BoolVar(&cfg.scale, "scale", false, "Scale mode (make bench-scale), instead of the completions: create n NABs over m namespaces (spec snapshotVolumes false), complete every one (Velero Backups Completed, DownloadRequests served) until its plan ended, measure etcd's growth per NAB (from etcd: live keys and values by /registry/ part, database size), nac's peak RSS and heap, then restart nac (readyz, quiet, writes). Without -timeout, the time limit grows with n; OADP NAC's part has its own, which grows with -oadp-n squared.")
	flag.StringVar(&cfg.oadp, "oadp", "", "With -scale: OADP NAC's manager binary (make's bin/oadp-nac-manager), run first on a control plane of its own with -oadp-n NABs, the same spec and NABs per namespace, for OADPEtcdBytesPerNAB.")
	flag.IntVar(&cfg.oadpN, "oadp-n", 0, "OADP NAC's NABs with -oadp (0: min(n, 2000)).")
	flag.StringVar(&cfg.oadpCRDs, "oadp-crds", "../shared/peers/oadp-non-admin/config/crd/bases", "OADP NAC's CRDs (its source's config/crd/bases), with -oadp.")
	flag.DurationVar(&cfg.downloadTTL, "download-ttl", time.Minute, "With -scale, the expiration of each served DownloadRequest, after which the bench deletes it as Velero's controller does (Velero: 10m): the etcd figures are read once the last has gone, so that they are what a settled NAB keeps.")
	flag.Parse()
	if cfg.scale {
		os.Exit(mainScale(cfg))
	}
	if cfg.downloads != downloadsServed && cfg.downloads != downloadsAbsent {
		fmt.Fprintf(os.Stderr, "bench: -downloads %q: served or absent\n", cfg.downloads)
		os.Exit(2)
	}
	if cfg.restart && cfg.downloads != downloadsServed {
		fmt.Fprintln(os.Stderr, "bench: -restart needs -downloads served: the completed third's verification must end")
		os.Exit(2)
	}
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	printTable(os.Stdout, res)
	os.Exit(writeJSON(cfg.jsonOut, res))
}

const oadpNS = "openshift-adp"

// debugf prints a progress line when $BENCH_DEBUG is set.
func debugf(format string, args ...any) {
	if os.Getenv("BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
	}
}

func run(cfg config) (*Result, error) {
	// Ctrl-C or a kill ends the run through its deferred clean-up, so the
	// control plane and nac never outlive the bench.
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	ctx, cancel := context.WithTimeout(sigCtx, cfg.timeout)
	defer cancel()
	st, err := setUp(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer st.close()
	ctx, c, cs, nacMetrics := st.ctx, st.c, st.cs, st.nacMetrics
	events0, err := nacMetrics()
	if err != nil {
		return nil, err
	}

	before, err := scrape(ctx, cs)
	if err != nil {
		return nil, err
	}
	readsBefore, err := scrapeReads(ctx, cs)
	if err != nil {
		return nil, err
	}
	cpu0, _ := procCPU(st.pid())
	if cfg.apiserverProf != "" {
		go func() {
			data, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "8").DoRaw(ctx)
			if err == nil {
				err = os.WriteFile(cfg.apiserverProf, data, 0o644)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench: apiserver profile:", err)
			}
		}()
	}
	wt, err := wave(ctx, c, cfg.n, cfg.c, func(i int) string { return fmt.Sprintf("%s/nab-%05d", st.nss[1+i%cfg.m], i) },
		func(i int) error {
			return c.Create(ctx, &v1alpha1.NonAdminBackup{
				ObjectMeta: metav1.ObjectMeta{Namespace: st.nss[1+i%cfg.m], Name: fmt.Sprintf("nab-%05d", i)},
				Spec:       v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}},
			})
		})
	if err != nil {
		return nil, err
	}
	start, last, createdIn, lat := wt.start, wt.last, wt.createdIn, wt.lat
	// Let the controller finish the status writes of this wave, then its
	// events: --event-qps paces them, none may be dropped.
	if err := settle(ctx, cs, 3*time.Second); err != nil {
		return nil, err
	}
	// Scraped once a second: each scrape walks every cached NAC object, and
	// polling faster (it was 5 times a second) loaded the controller at
	// 10,000 NABs as no Prometheus would.
	events1, err := eventsDrained(ctx, nacMetrics)
	if err != nil {
		return nil, err
	}
	debugf("events drained")
	drainedIn := time.Since(last)
	if cfg.heapProfile != "" && cfg.pprof != "" {
		if err := saveHeapProfile(ctx, cfg.pprof, cfg.heapProfile); err != nil {
			fmt.Fprintln(os.Stderr, "bench: heap profile:", err)
		}
	}
	after, err := scrape(ctx, cs)
	if err != nil {
		return nil, err
	}
	readsAfter, err := scrapeReads(ctx, cs)
	if err != nil {
		return nil, err
	}
	oneCompletion, drained := simulateSerialDrain(cfg.n)
	res := &Result{NABs: cfg.n, Namespaces: cfg.m, Clients: cfg.c, UnrelatedSecrets: cfg.secrets,
		PositionWritesOneCompletion: oneCompletion, PositionWritesSerialDrain: drained,
		ThroughputPerSec:       float64(cfg.n) / last.Sub(start).Seconds(),
		CreationSeconds:        createdIn.Seconds(),
		LatencyP50:             pct(lat, 50).Round(time.Millisecond).String(),
		LatencyP90:             pct(lat, 90).Round(time.Millisecond).String(),
		LatencyP99:             pct(lat, 99).Round(time.Millisecond).String(),
		WritesPerNABByResource: map[string]float64{},
	}
	delta := diff(before, after)
	// The bench's own writes: one NAB create each.
	delta["POST nonadminbackups"] -= float64(cfg.n)
	total := 0.0
	for k, v := range delta {
		if v == 0 {
			continue
		}
		if strings.HasSuffix(k, " events") {
			res.EventWritesPerNAB += v / float64(cfg.n)
			continue
		}
		res.WritesPerNABByResource[k] = v / float64(cfg.n)
		total += v
	}
	res.WritesPerNAB = total / float64(cfg.n)
	reads := diff(readsBefore, readsAfter)
	for _, v := range reads {
		res.ReadsPerNAB += v / float64(cfg.n)
	}
	debugf("reads during the wave: %v", reads)
	res.Conflicts = int(conflicts(before, after))
	for k, v := range events1 {
		if strings.HasPrefix(k, "nacflow_events_dropped_total") {
			res.EventsDropped += v - events0[k]
		}
	}
	res.EventDrainSeconds = drainedIn.Seconds()

	debugf("wave measured")
	var downloads *downloadService
	if cfg.downloads == downloadsServed {
		downloads = serveDownloads(ctx, c, oadpNS)
	}
	res.Downloads = cfg.downloads
	m := &meter{ctx: ctx, c: c, cs: cs, nacMetrics: nacMetrics, downloads: downloads, pid: st.pid, window: cfg.window}
	backups, err := tenantBackups(ctx, c)
	if err != nil {
		return nil, err
	}
	if cfg.restart {
		if err := measureRestart(st, m, res, backups, cpu0, cfg.restartObserve); err != nil {
			return nil, errors.Join(err, context.Cause(ctx))
		}
		res.ControllerMetricsScrapes = int(st.scrapes.Load())
		return res, nil
	}

	// One completion, then a burst, as Velero would.
	var plans *planTracker
	if cfg.burstWaitVerify {
		plans = trackPlans(ctx, c)
	}
	s0, err := m.take()
	if err != nil {
		return nil, err
	}
	if err := patchPhase(ctx, c, backups[:1], velerov1.BackupPhaseCompleted); err != nil {
		return nil, err
	}
	if err := m.quiet(); err != nil {
		return nil, err
	}
	s1, err := m.take()
	if err != nil {
		return nil, err
	}
	one := m.figures(s0, s1, 1)
	res.ReconcilesForOneCompletion = int(one.NABReconciles)
	res.WritesForOneCompletion = int(one.Writes)
	res.OneCompletion = one
	debugf("one completion measured: %v", one.WritesByResource)
	burst := min(cfg.burst, len(backups)-1)
	res.BurstSize = burst
	res.WaitingNABsAtBurst = len(backups) - 1 - burst
	if err := patchPhase(ctx, c, backups[1:1+burst], velerov1.BackupPhaseCompleted); err != nil {
		return nil, err
	}
	if err := m.quiet(); err != nil {
		return nil, err
	}
	s2, err := m.take()
	if err != nil {
		return nil, err
	}
	res.Burst = m.figures(s1, s2, burst)
	res.WritesForBurst = int(res.Burst.Writes)
	debugf("burst measured")
	if plans != nil {
		keys := nabKeys(backups[:1+burst])
		if err := plans.waitEnded(ctx, keys); err != nil {
			return nil, errors.Join(err, context.Cause(ctx))
		}
		if err := m.quiet(); err != nil {
			return nil, err
		}
		s3, err := m.take()
		if err != nil {
			return nil, err
		}
		res.BurstVerified = m.figures(s1, s3, burst)
		res.BurstVerified.PlansEnded = plans.ended(keys)
		debugf("burst's plans ended")
	}

	cpu1, _ := procCPU(st.pid())
	res.ControllerCPUSeconds = cpu1 - cpu0
	res.ControllerPeakRSSMiB = procPeakRSS(st.pid())
	res.ControllerRSSAnonMiB = procStatusMiB(st.pid(), "RssAnon")
	res.ControllerRSSFileMiB = procStatusMiB(st.pid(), "RssFile")
	res.ControllerMetricsScrapes = int(st.scrapes.Load())
	return res, nil
}

// probe creates a NAB in the OADP namespace's neighbour and waits for its
// Velero Backup, then deletes both.
func probe(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-probe"}}
	if err := c.Create(ctx, ns); err != nil {
		return err
	}
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "probe"},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
	if err := c.Create(ctx, nab); err != nil {
		return err
	}
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(nab), nab); err != nil {
			return err
		}
		if nab.Status.VeleroBackup != nil && nab.Status.VeleroBackup.Name != "" {
			if err := c.Delete(ctx, nab); err != nil {
				return err
			}
			return probeGone(ctx, c, nab)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the controller did not serve the probe NAB")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probeGone waits until the probe NAB is gone (its finalizer removed, up
// to 30 s), so that no measurement counts its deletion.
func probeGone(ctx context.Context, c client.Client, nab *v1alpha1.NonAdminBackup) error {
	for range 300 {
		if err := c.Get(ctx, client.ObjectKeyFromObject(nab), nab); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	debugf("the probe NAB is still there after 30 s")
	return nil
}

// parallel runs f(0..n-1) on k workers and returns the first error.
func parallel(ctx context.Context, n, k int, f func(int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range max(1, k) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

var sampleLine = regexp.MustCompile(`^((?:nacflow_[a-z_]+|controller_runtime_reconcile_total|workqueue_depth|go_memstats_heap_(?:inuse|alloc)_bytes)(\{[^}]*\})?) ([0-9.e+-]+)$`)

// scraperToken installs the metrics reader ClusterRole of the file role,
// binds it to a new ServiceAccount bench-scraper of the OADP namespace and
// returns a token of that ServiceAccount (a TokenRequest, valid 24 h).
func scraperToken(ctx context.Context, cs kubernetes.Interface, role string) (string, error) {
	data, err := os.ReadFile(role)
	if err != nil {
		return "", err
	}
	cr := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, cr); err != nil {
		return "", fmt.Errorf("%s: %w", role, err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating ClusterRole %s: %w", cr.Name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: oadpNS, Name: "bench-scraper"}}
	if _, err := cs.CoreV1().ServiceAccounts(oadpNS).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the scraper's ServiceAccount: %w", err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-scraper"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: oadpNS, Name: sa.Name}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("binding the scraper: %w", err)
	}
	day := int64(24 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts(oadpNS).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking a token of the scraper: %w", err)
	}
	return tr.Status.Token, nil
}

// scrapeClient scrapes nac's metrics endpoint, whose certificate is
// self-signed.
var scrapeClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// scrapeController returns the controller's nacflow_* samples and its
// reconcile counts (controller_runtime_reconcile_total), as
// "name{labels}" → value, scraped over HTTPS with the bearer token.
func scrapeController(ctx context.Context, addr, token string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping the controller's metrics: %s: %s", resp.Status, tail(string(raw), 200))
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if m := sampleLine.FindStringSubmatch(line); m != nil {
			out[m[1]], _ = strconv.ParseFloat(m[3], 64)
		}
	}
	return out, nil
}

// saveHeapProfile writes the heap profile served on the controller's pprof
// address to file.
func saveHeapProfile(ctx context.Context, addr, file string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/heap", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

var requestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)

// writeVerbs and readVerbs are the verbs scrape and scrapeReads count.
var (
	writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true}
	readVerbs  = map[string]bool{"GET": true, "LIST": true}
)

// scrape returns apiserver_request_total of write verbs as "VERB resource[/sub]"
// (and "code=409" for conflicts) → count.
func scrape(ctx context.Context, cs *kubernetes.Clientset) (map[string]float64, error) {
	return scrapeVerbs(ctx, cs, writeVerbs)
}

// scrapeReads is scrape for GET and LIST.
func scrapeReads(ctx context.Context, cs *kubernetes.Clientset) (map[string]float64, error) {
	return scrapeVerbs(ctx, cs, readVerbs)
}

func scrapeVerbs(ctx context.Context, cs *kubernetes.Clientset, verbs map[string]bool) (map[string]float64, error) {
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := requestLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(m[1], ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		verb := labels["verb"]
		if !verbs[verb] {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		res := labels["resource"]
		if labels["subresource"] != "" {
			res += "/" + labels["subresource"]
		}
		out[verb+" "+res] += v
		if labels["code"] == "409" {
			out["code=409"] += v
		}
	}
	return out, nil
}

func diff(a, b map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range b {
		if k != "code=409" {
			d[k] = v - a[k]
		}
	}
	return d
}

func conflicts(a, b map[string]float64) float64 { return b["code=409"] - a["code=409"] }

// settle waits until no write reaches the API server for quiet.
func settle(ctx context.Context, cs *kubernetes.Clientset, quiet time.Duration) error {
	prev, err := scrape(ctx, cs)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet):
		}
		cur, err := scrape(ctx, cs)
		if err != nil {
			return err
		}
		changed := false
		for k, v := range diff(prev, cur) {
			// The API server renews its own identity lease every 10 s.
			if v != 0 && !strings.HasSuffix(k, " events") && !strings.HasSuffix(k, " leases") {
				changed = true
			}
		}
		if !changed {
			return nil
		}
		prev = cur
	}
}

func pct(l []time.Duration, p int) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := (len(l)*p + 99) / 100
	if i > 0 {
		i--
	}
	return l[min(i, len(l)-1)]
}

// procCPU returns the user+system CPU seconds of pid (Linux /proc).
func procCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100, nil // clock ticks: 100 per second on Linux
}

// procPeakRSS returns the peak resident set size of pid in MiB (VmHWM).
func procPeakRSS(pid int) float64 { return procStatusMiB(pid, "VmHWM") }

// procStatusMiB returns the field of /proc/pid/status (a size in kB) in
// MiB, 0 when it cannot be read.
func procStatusMiB(pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, field+":") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func printTable(w io.Writer, r *Result) {
	fmt.Fprintf(w, "nacflow bench: %d NonAdminBackups over %d namespaces, %d clients, %d unrelated Secrets\n\n", r.NABs, r.Namespaces, r.Clients, r.UnrelatedSecrets)
	fmt.Fprintf(w, "%-44s %s\n", "metric", "value")
	fmt.Fprintf(w, "%-44s %.1f NAB/s\n", "throughput (create → Velero Backup)", r.ThroughputPerSec)
	fmt.Fprintf(w, "%-44s %.1f s\n", "the bench's NAB creation took", r.CreationSeconds)
	fmt.Fprintf(w, "%-44s %s / %s / %s\n", "latency p50 / p90 / p99", r.LatencyP50, r.LatencyP90, r.LatencyP99)
	fmt.Fprintf(w, "%-44s %.2f\n", "controller API writes per NAB (no events)", r.WritesPerNAB)
	for _, k := range slices.Sorted(maps.Keys(r.WritesPerNABByResource)) {
		fmt.Fprintf(w, "  %-42s %.2f\n", k, r.WritesPerNABByResource[k])
	}
	fmt.Fprintf(w, "%-44s %.2f (all of the wave's, none queued)\n", "event writes per NAB", r.EventWritesPerNAB)
	fmt.Fprintf(w, "%-44s %.0f\n", "events dropped", r.EventsDropped)
	fmt.Fprintf(w, "%-44s %.2f\n", "writes per NAB including events", r.WritesPerNAB+r.EventWritesPerNAB)
	fmt.Fprintf(w, "%-44s %.2f\n", "API reads (GET, LIST) per NAB", r.ReadsPerNAB)
	fmt.Fprintf(w, "%-44s %d\n", "409 conflicts", r.Conflicts)
	fmt.Fprintf(w, "%-44s %s\n", "Velero's download service", r.Downloads)
	if r.Restart == nil {
		fmt.Fprintf(w, "%-44s %d (%d NAB reconciles)\n", "controller writes for one completion", r.WritesForOneCompletion, r.ReconcilesForOneCompletion)
		printFigures(w, "  one completion", r.OneCompletion)
		fmt.Fprintf(w, "%-44s %d (burst of %d, %d NABs waiting)\n", "controller writes for a completion burst", r.WritesForBurst, r.BurstSize, r.WaitingNABsAtBurst)
		printFigures(w, "burst, until quiet", r.Burst)
		printFigures(w, "burst, until every plan ended", r.BurstVerified)
	}
	printRestart(w, r.Restart)
	fmt.Fprintf(w, "%-44s %d (%d waiting; refresh rule, simulated)\n", "position writes for one completion", r.PositionWritesOneCompletion, r.NABs-1)
	fmt.Fprintf(w, "%-44s %d (n = %d; n²/2 = %d without the rule)\n", "position writes to drain the queue serially", r.PositionWritesSerialDrain, r.NABs, r.NABs*r.NABs/2)
	fmt.Fprintf(w, "%-44s %.1f s\n", "controller CPU", r.ControllerCPUSeconds)
	fmt.Fprintf(w, "%-44s %.1f MiB\n", "controller peak RSS", r.ControllerPeakRSSMiB)
	fmt.Fprintf(w, "%-44s %.1f MiB heap and runtime + %.1f MiB the binary's mapped code\n", "  resident at the end", r.ControllerRSSAnonMiB, r.ControllerRSSFileMiB)
	fmt.Fprintf(w, "%-44s %d\n", "controller /metrics scrapes during the run", r.ControllerMetricsScrapes)
}

// printFigures prints f under title (nothing for nil).
func printFigures(w io.Writer, title string, f *Figures) {
	if f == nil {
		return
	}
	fmt.Fprintf(w, "%-44s %.1f s, controller CPU %.1f s\n", title, f.Seconds, f.ControllerCPUSeconds)
	fmt.Fprintf(w, "  %-42s %.2f (%.0f)\n", "NAB reconciles per completion", f.ReconcilesPerCompletion, f.NABReconciles)
	fmt.Fprintf(w, "  %-42s %.2f / %.2f\n", "writes per completion: no events / incl.", f.WritesPerCompletion, f.WritesPerCompletionInclEvents)
	printWrites(w, f.WritesByResource, float64(f.Completions))
	if f.BenchDownloadPatches > 0 {
		fmt.Fprintf(w, "    %-40s %.0f (not counted)\n", "the bench's DownloadRequest patches", f.BenchDownloadPatches)
	}
	if f.FieldsChanged != nil {
		fmt.Fprintf(w, "  %-42s %d\n", "NABs changed (status, spec or metadata)", f.NABsChanged)
		printCounts(w, f.FieldsChanged, "NABs")
	}
	if f.PlansEnded > 0 {
		fmt.Fprintf(w, "  %-42s %d of %d\n", "plans ended", f.PlansEnded, f.Completions+1)
	}
}

// printWrites prints writes by verb and resource, in total and divided by
// per when it is above 1.
func printWrites(w io.Writer, writes map[string]float64, per float64) {
	for _, k := range slices.Sorted(maps.Keys(writes)) {
		if per > 1 {
			fmt.Fprintf(w, "    %-40s %.0f (%.2f each)\n", k, writes[k], writes[k]/per)
		} else {
			fmt.Fprintf(w, "    %-40s %.0f\n", k, writes[k])
		}
	}
}

// printRestart prints the restart mode's figures (nothing for nil).
func printRestart(w io.Writer, r *Restart) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "%-44s %d Completed, %d waiting (New), %d Failed; settled in %.1f s\n", "restart over settled NABs", r.Completed, r.Waiting, r.Failed, r.SettleSeconds)
	fmt.Fprintf(w, "  %-42s %.2f s\n", "start → /readyz 200", r.ReadySeconds)
	fmt.Fprintf(w, "  %-42s %.1f s\n", "start → as many NAB reconciles as NABs", r.ReconciledSeconds)
	fmt.Fprintf(w, "  %-42s %.1f s\n", "start → quiet", r.QuietSeconds)
	fmt.Fprintf(w, "  %-42s %.0f (%.0f of them events)\n", "controller writes, start → quiet", r.WritesTotal, r.EventWrites)
	printWrites(w, r.Writes, 1)
	if r.ObservedSeconds > 0 {
		fmt.Fprintf(w, "  %-42s %.0f\n", fmt.Sprintf("controller writes, start → %.0f s", r.ObservedSeconds), r.ObservedTotal)
		printWrites(w, r.ObservedWrites, 1)
	}
	fmt.Fprintf(w, "  %-42s %d\n", "NABs changed since before the restart", r.NABsChanged)
	printCounts(w, r.FieldsChanged, "NABs")
	fmt.Fprintf(w, "  %-42s %.0f\n", "NAB reconciles, start → quiet", r.NABReconciles)
	fmt.Fprintf(w, "  %-42s %.1f s, peak RSS %.1f MiB\n", "restarted controller CPU", r.ControllerCPUSeconds, r.ControllerPeakRSSMiB)
}

// printCounts prints counts by key, sorted, each followed by unit.
func printCounts(w io.Writer, counts map[string]int, unit string) {
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(w, "    %-40s %d %s\n", k, counts[k], unit)
	}
}
