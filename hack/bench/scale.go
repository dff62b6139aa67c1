package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ScaleResult is what one -scale run measured (make bench-scale's JSON):
// N NABs over M namespaces created (Velero's Backups seen), every one
// completed (its Velero Backup patched Completed, its DownloadRequests
// served) until its plan ended, etcd's growth, then a restart of nac.
type ScaleResult struct {
	NABs, Namespaces, Clients int
	// NABSpec is the spec of every NAB, nacflow's and OADP NAC's.
	NABSpec string
	// CreationSeconds is the bench's creation of the NABs; WaveSeconds
	// until every Velero Backup appeared; CompletionSeconds from the
	// Backups' Completed patches until every plan ended and nac was
	// quiet; TotalSeconds the whole run, OADP NAC's part included.
	CreationSeconds, WaveSeconds, CompletionSeconds, TotalSeconds float64
	ThroughputPerSec                                              float64
	LatencyP50, LatencyP90, LatencyP99                            string
	// Completed are the NABs whose status.veleroBackup.status.phase is
	// Completed at the end (their status.phase stays Created, as OADP
	// NAC's); PlansEnded those whose status.plan.state is complete or
	// failed.
	Completed, PlansEnded int
	// EventsDropped is the rise of nacflow_events_dropped_total over the
	// run, before the restart.
	EventsDropped float64
	// ControllerPeakRSSMiB is nac's VmHWM (/proc) over the whole run before
	// the restart; ControllerRSSAnonMiB and ControllerRSSFileMiB split its
	// resident set at that time (see Result).
	ControllerPeakRSSMiB, ControllerRSSAnonMiB, ControllerRSSFileMiB float64
	// ControllerHeapMiB is the highest go_memstats_heap_inuse_bytes (the
	// Go runtime's HeapInuse: spans holding live objects and garbage not
	// yet swept) of nac's /metrics over every scrape before the restart
	// (every -metrics-scrape-interval, and once a second while the bench
	// waits for events to drain); ControllerHeapAllocPeakMiB the highest
	// go_memstats_heap_alloc_bytes (HeapAlloc) of the same scrapes.
	ControllerHeapMiB, ControllerHeapAllocPeakMiB float64
	// ControllerLiveHeapMiB is nac's live heap after every plan ended and
	// nac was quiet: HeapAlloc (runtime.MemStats) right after a forced GC,
	// from its pprof endpoint's /debug/pprof/heap?gc=1&debug=1 (the scale
	// mode serves pprof on a free loopback port unless -pprof names one;
	// -heap-profile also saves that profile).
	ControllerLiveHeapMiB    float64
	ControllerCPUSeconds     float64
	ControllerMetricsScrapes int
	// EtcdBytesPerNAB is the growth of len(key)+len(value) of etcd's live
	// keys under /registry/ from before the wave to after every plan
	// ended, per NAB; EtcdBytesPerNABByPart the same by part (every
	// /registry/<group>/<resource>/ or /registry/<resource>/ that
	// changed); Etcd the details (keys, database size).
	EtcdBytesPerNAB       float64
	EtcdBytesPerNABByPart map[string]float64
	// EtcdEventBytesPerNAB is the events' part of EtcdBytesPerNAB: they
	// live an hour (kube-apiserver's --event-ttl); EtcdLastingBytesPerNAB
	// the rest, what a NAB keeps in etcd for its life (the
	// DownloadRequests of its verification expired before etcd was read).
	EtcdEventBytesPerNAB, EtcdLastingBytesPerNAB float64
	// EtcdDbSizeDeltaPerNAB is the growth of etcd's database file per NAB
	// (old revisions included until compaction).
	EtcdDbSizeDeltaPerNAB float64
	Etcd                  *EtcdGrowth
	// OADPEtcdBytesPerNAB and OADPEtcdBytesPerNABByPart are OADP NAC's, on
	// a control plane of its own (-oadp), 0 and nil when it was not run;
	// OADP the rest of its run.
	OADPEtcdBytesPerNAB       float64
	OADPEtcdBytesPerNABByPart map[string]float64
	OADP                      *OADPRun `json:",omitempty"`
	// RestartReadySeconds: from the new process's start to its /readyz
	// 200 (target ≤ 60 s); RestartQuietSeconds to quiet (target ≤ 120 s).
	RestartReadySeconds, RestartQuietSeconds float64
	// RestartWrites are nac's writes from its start until quiet, events
	// included, less the metrics endpoint's TokenReviews and
	// SubjectAccessReviews (RestartAuthWrites) and lease writes
	// (RestartLeaseWrites, left out, the API server's own renewals among
	// them): target 0. RestartWritesByResource are all of them by "VERB
	// resource", the TokenReviews and SubjectAccessReviews included.
	RestartWrites                         float64
	RestartWritesByResource               map[string]float64
	RestartAuthWrites, RestartLeaseWrites float64
	// RestartReviewWrites are the other access reviews among RestartWrites
	// (nac's own SelfSubjectAccessReviews, its capability checks at
	// start): requests the API server answers without storing anything.
	RestartReviewWrites float64
	// RestartPeakRSSMiB and RestartHeapMiB are the restarted process's
	// VmHWM and highest go_memstats_heap_inuse_bytes until quiet.
	RestartPeakRSSMiB, RestartHeapMiB float64
	Restart                           *Restart
	// Writes are the API server's writes from before the wave until every
	// plan ended and nac was quiet, by "VERB resource", events included,
	// lease renewals left out: nac's and the bench's, which creates the
	// NABs and plays Velero (it completes each Backup, serves and deletes
	// each DownloadRequest): where the API server's time went.
	// WritesPerNAB is their sum over NABs.
	Writes       map[string]float64
	WritesPerNAB float64
}

// scaleSpec is the NAB spec of the scale run, nacflow's and OADP NAC's:
// no volume snapshots, the included namespace implied (the NAB's own).
const scaleSpec = `{"backupSpec":{"snapshotVolumes":false}}`

// scaleTimeout is the time limit of nacflow's part of the run: -timeout
// when it was given, else one that grows with the NABs (20 min and 40 ms a
// NAB: creation and completion each take ~15 min at 100,000).
func scaleTimeout(cfg config, given bool) time.Duration {
	if given {
		return cfg.timeout
	}
	return 20*time.Minute + time.Duration(cfg.n)*40*time.Millisecond
}

// oadpTimeout is the time limit of OADP NAC's part: 10 min and 0.6 ms a
// NAB squared. OADP NAC updates every waiting NAB's queue position on each
// Velero Backup event, through a client limited to 20 requests a second:
// its 2,000 NABs took 11 min to get their Backups and as long again to
// complete on a loaded machine.
func oadpTimeout(cfg config) time.Duration {
	k := time.Duration(cfg.oadpNAB())
	return 10*time.Minute + k*k*600*time.Microsecond
}

// runScale runs the scale mode (-scale): OADP NAC's part first (-oadp),
// on a control plane of its own, stopped before nacflow's starts. Each
// part has its own time limit.
func runScale(cfg config, timeout time.Duration) (*ScaleResult, error) {
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	begin := time.Now()
	res := &ScaleResult{NABs: cfg.n, Namespaces: cfg.m, Clients: cfg.c, NABSpec: scaleSpec}
	if cfg.oadp != "" {
		octx, cancel := context.WithTimeout(ctx, oadpTimeout(cfg))
		o, err := runOADP(octx, cfg)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("OADP NAC: %w", err)
		}
		res.OADP, res.OADPEtcdBytesPerNAB, res.OADPEtcdBytesPerNABByPart = o, o.Etcd.BytesPerNAB, o.Etcd.BytesPerNABByPart
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := setUp(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer st.close()
	if err := scaleNacflow(st, cfg, res); err != nil {
		return nil, errors.Join(err, context.Cause(st.ctx))
	}
	res.TotalSeconds = time.Since(begin).Seconds()
	return res, nil
}

// scaleNacflow measures nacflow on st into res: the wave, the
// completions, etcd, the restart.
func scaleNacflow(st *stage, cfg config, res *ScaleResult) error {
	ctx, c := st.ctx, st.c
	events0, err := st.nacMetrics()
	if err != nil {
		return err
	}
	etcd0, err := readEtcd(ctx, st.etcdURL(), oadpNS)
	if err != nil {
		return err
	}
	cpu0, _ := procCPU(st.pid())
	plans := trackPlans(ctx, c)
	m := &meter{ctx: ctx, cs: st.cs, nacMetrics: st.nacMetrics, downloads: serveDownloadsFor(ctx, c, oadpNS, cfg.downloadTTL), pid: st.pid, window: cfg.window}
	before, err := m.take()
	if err != nil {
		return err
	}
	// Velero keeps up: each Backup completes as it appears, each answered
	// DownloadRequest goes once expired; the location is the admin's.
	if err := c.Create(ctx, adminLocation()); err != nil {
		return fmt.Errorf("creating the default BackupStorageLocation: %w", err)
	}
	go playVelero(ctx, c, oadpNS)
	name := func(i int) (string, string) { return st.nss[1+i%cfg.m], fmt.Sprintf("nab-%06d", i) }
	wt, err := wave(ctx, c, cfg.n, cfg.c, func(i int) string { ns, n := name(i); return ns + "/" + n }, func(i int) error {
		ns, n := name(i)
		return c.Create(ctx, scaleNAB(ns, n))
	})
	if err != nil {
		return err
	}
	res.setWave(wt)
	debugf("wave done in %.1f s", res.WaveSeconds)
	keys := make([]string, cfg.n)
	for i := range keys {
		ns, n := name(i)
		keys[i] = ns + "/" + n
	}
	if err := completeAll(st, m, plans, keys, res); err != nil {
		return err
	}
	after, err := m.take()
	if err != nil {
		return err
	}
	res.Writes = map[string]float64{}
	for k, v := range diff(before.writes, after.writes) {
		if v != 0 && !strings.HasSuffix(k, " leases") {
			res.Writes[k] = v
			res.WritesPerNAB += v / float64(cfg.n)
		}
	}
	if err := waitDownloadsExpired(ctx, c, cfg.downloadTTL); err != nil {
		return err
	}
	events1, err := st.nacMetrics()
	if err != nil {
		return err
	}
	for k, v := range events1 {
		if strings.HasPrefix(k, "nacflow_events_dropped_total") {
			res.EventsDropped += v - events0[k]
		}
	}
	etcd1, err := readEtcd(ctx, st.etcdURL(), oadpNS)
	if err != nil {
		return err
	}
	res.Etcd = etcdGrowth(etcd0, etcd1, cfg.n)
	res.EtcdBytesPerNAB, res.EtcdBytesPerNABByPart, res.EtcdDbSizeDeltaPerNAB = res.Etcd.BytesPerNAB, res.Etcd.BytesPerNABByPart, res.Etcd.DbSizeDeltaPerNAB
	res.EtcdEventBytesPerNAB = res.EtcdBytesPerNABByPart[eventsPart]
	res.EtcdLastingBytesPerNAB = res.EtcdBytesPerNAB - res.EtcdEventBytesPerNAB
	debugf("etcd read")
	res.setController(st, cfg, cpu0)
	r := &Restart{Completed: res.Completed}
	if err := restart(st, m, r, cfg.n, cfg.restartObserve); err != nil {
		return err
	}
	res.setRestart(r)
	res.ControllerMetricsScrapes = int(st.scrapes.Load())
	return nil
}

// completeAll waits until the plan of every NAB of keys ("ns/name") ended
// (playVelero completes their Backups as they appear) and nac is quiet,
// and counts the Completed NABs. CompletionSeconds runs from the end of
// the wave.
func completeAll(st *stage, m *meter, plans *planTracker, keys []string, res *ScaleResult) error {
	start := time.Now()
	if err := plans.waitEnded(st.ctx, keys); err != nil {
		return err
	}
	debugf("plans ended")
	if err := m.quiet(); err != nil {
		return err
	}
	res.CompletionSeconds = time.Since(start).Seconds()
	res.Completed, res.PlansEnded = plans.completed(keys), plans.ended(keys)
	return nil
}

// eventsPart is the part (partOf) of core events.
const eventsPart = "/registry/events/"

// adminLocation is the cluster's default BackupStorageLocation, the
// admin's (no tenant label): what every NAB of the run backs up to, as on
// a cluster with Velero installed.
func adminLocation() *velerov1.BackupStorageLocation {
	return &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadpNS, Name: "default"},
		Spec: velerov1.BackupStorageLocationSpec{Provider: "aws", Default: true,
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "admin"}}}}
}

// waitDownloadsExpired waits until no DownloadRequest is left in the OADP
// namespace (playVelero deletes each ttl after it was answered), at most
// ttl and a minute.
func waitDownloadsExpired(ctx context.Context, c client.Client, ttl time.Duration) error {
	deadline := time.Now().Add(ttl + time.Minute)
	for {
		list := &velerov1.DownloadRequestList{}
		if err := c.List(ctx, list, client.InNamespace(oadpNS), client.Limit(1)); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("DownloadRequests still there %s after the last plan ended", ttl+time.Minute)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// setWave records the wave's times.
func (res *ScaleResult) setWave(wt *waveTimes) {
	res.CreationSeconds = wt.createdIn.Seconds()
	res.WaveSeconds = wt.last.Sub(wt.start).Seconds()
	res.ThroughputPerSec = float64(len(wt.lat)) / max(res.WaveSeconds, 1e-9)
	res.LatencyP50 = pct(wt.lat, 50).Round(time.Millisecond).String()
	res.LatencyP90 = pct(wt.lat, 90).Round(time.Millisecond).String()
	res.LatencyP99 = pct(wt.lat, 99).Round(time.Millisecond).String()
}

// setController records nac's CPU, resident set and heap before the
// restart (and its heap profile's in-use total with -heap-profile).
func (res *ScaleResult) setController(st *stage, cfg config, cpu0 float64) {
	cpu1, _ := procCPU(st.pid())
	res.ControllerCPUSeconds = cpu1 - cpu0
	res.ControllerPeakRSSMiB = procPeakRSS(st.pid())
	res.ControllerRSSAnonMiB = procStatusMiB(st.pid(), "RssAnon")
	res.ControllerRSSFileMiB = procStatusMiB(st.pid(), "RssFile")
	res.ControllerHeapMiB, res.ControllerHeapAllocPeakMiB = st.heap.take()
	var err error
	if res.ControllerLiveHeapMiB, err = liveHeapMiB(st.ctx, cfg.pprof); err != nil {
		fmt.Fprintln(os.Stderr, "bench: live heap:", err)
	}
	if cfg.heapProfile != "" {
		if err := saveHeapProfile(st.ctx, cfg.pprof, cfg.heapProfile); err != nil {
			fmt.Fprintln(os.Stderr, "bench: heap profile:", err)
		}
	}
}

// setRestart records the restart's figures.
func (res *ScaleResult) setRestart(r *Restart) {
	res.Restart = r
	res.RestartReadySeconds, res.RestartQuietSeconds = r.ReadySeconds, r.QuietSeconds
	res.RestartWrites = r.WritesTotal - r.AuthWrites
	res.RestartWritesByResource = r.Writes
	res.RestartAuthWrites, res.RestartLeaseWrites = r.AuthWrites, r.LeaseWrites
	for k, v := range r.Writes {
		if strings.HasPrefix(k, "POST ") && strings.HasSuffix(k, "reviews") && k != "POST tokenreviews" && k != "POST subjectaccessreviews" {
			res.RestartReviewWrites += v
		}
	}
	res.RestartPeakRSSMiB, res.RestartHeapMiB = r.ControllerPeakRSSMiB, r.ControllerHeapInuseMiB
}

// target returns "ok" when ok, else "MISSED".
func target(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

func printScaleTable(w io.Writer, r *ScaleResult) {
	fmt.Fprintf(w, "nacflow bench-scale: %d NonAdminBackups over %d namespaces, %d clients, spec %s\n\n", r.NABs, r.Namespaces, r.Clients, r.NABSpec)
	fmt.Fprintf(w, "%-46s %s\n", "metric", "value")
	fmt.Fprintf(w, "%-46s %.1f s (Velero Backups seen: %.1f s, %.1f NAB/s)\n", "NAB creation", r.CreationSeconds, r.WaveSeconds, r.ThroughputPerSec)
	fmt.Fprintf(w, "%-46s %s / %s / %s\n", "create → Velero Backup p50 / p90 / p99", r.LatencyP50, r.LatencyP90, r.LatencyP99)
	fmt.Fprintf(w, "%-46s %.1f s\n", "completion: Backups Completed → plans ended", r.CompletionSeconds)
	fmt.Fprintf(w, "%-46s %d of %d (plans ended: %d)\n", "NABs Completed", r.Completed, r.NABs, r.PlansEnded)
	fmt.Fprintf(w, "%-46s %.0f\n", "events dropped", r.EventsDropped)
	fmt.Fprintf(w, "%-46s %.2f\n", "API writes per NAB (nac's, the bench's NABs and Velero's)", r.WritesPerNAB)
	printWrites(w, r.Writes, float64(r.NABs))
	fmt.Fprintf(w, "%-46s %.1f MiB (%.1f heap and runtime + %.1f binary at the end)\n", "controller peak RSS (VmHWM)", r.ControllerPeakRSSMiB, r.ControllerRSSAnonMiB, r.ControllerRSSFileMiB)
	fmt.Fprintf(w, "%-46s %.1f MiB (HeapAlloc peak %.1f MiB)\n", "controller heap: peak heap_inuse of scrapes", r.ControllerHeapMiB, r.ControllerHeapAllocPeakMiB)
	fmt.Fprintf(w, "%-46s %.1f MiB\n", "  live heap at the end (HeapAlloc after GC)", r.ControllerLiveHeapMiB)
	fmt.Fprintf(w, "%-46s %.1f s, %d /metrics scrapes\n", "controller CPU", r.ControllerCPUSeconds, r.ControllerMetricsScrapes)
	printEtcd(w, "nacflow", r.Etcd)
	fmt.Fprintf(w, "  %-45s %.0f B (events, which live 1 h: %.0f B)\n", "kept for the NAB's life (all but events)", r.EtcdLastingBytesPerNAB, r.EtcdEventBytesPerNAB)
	if r.OADP != nil {
		o := r.OADP
		fmt.Fprintf(w, "%-46s %d NABs over %d namespaces, %d Completed\n", "OADP NAC, control plane of its own", o.NABs, o.Namespaces, o.Completed)
		fmt.Fprintf(w, "  %-44s %.1f s (Velero Backups seen: %.1f s)\n", "OADP NAC: creation → all Completed", o.Seconds, o.WaveSeconds)
		fmt.Fprintf(w, "  %-44s %.1f MiB\n", "OADP NAC peak RSS", o.ControllerPeakRSSMiB)
		printEtcd(w, "OADP NAC", o.Etcd)
		fmt.Fprintf(w, "  %-44s %s\n", "what differs", oadpDiffers)
	} else {
		fmt.Fprintf(w, "%-46s not run (BENCH_OADP=1)\n", "OADP NAC")
	}
	fmt.Fprintf(w, "%-46s %.2f s (target ≤ 60 s: %s)\n", "restart: start → /readyz 200", r.RestartReadySeconds, target(r.RestartReadySeconds <= 60))
	fmt.Fprintf(w, "%-46s %.1f s (target ≤ 120 s: %s)\n", "restart: start → quiet", r.RestartQuietSeconds, target(r.RestartQuietSeconds <= 120))
	fmt.Fprintf(w, "%-46s %.0f (target 0: %s; + %.0f TokenReviews/SARs, %.0f lease writes apart)\n", "restart: writes until quiet", r.RestartWrites,
		target(r.RestartWrites == 0), r.RestartAuthWrites, r.RestartLeaseWrites)
	fmt.Fprintf(w, "  %-44s %.0f (nac's access reviews: not stored)\n", "of them, self access reviews", r.RestartReviewWrites)
	printWrites(w, r.RestartWritesByResource, 1)
	if x := r.Restart; x != nil {
		fmt.Fprintf(w, "  %-44s %.1f s\n", "start → as many NAB reconciles as NABs", x.ReconciledSeconds)
		fmt.Fprintf(w, "  %-44s %d\n", "NABs changed since before the restart", x.NABsChanged)
		printCounts(w, x.FieldsChanged, "NABs")
		fmt.Fprintf(w, "  %-44s %.1f s CPU, peak RSS %.1f MiB, heap_inuse %.1f MiB\n", "restarted controller", x.ControllerCPUSeconds, r.RestartPeakRSSMiB, r.RestartHeapMiB)
	}
	fmt.Fprintf(w, "%-46s %.1f s\n", "the whole run took", r.TotalSeconds)
}

// printEtcd prints etcd's growth per NAB, by part, largest first.
func printEtcd(w io.Writer, who string, g *EtcdGrowth) {
	if g == nil {
		return
	}
	fmt.Fprintf(w, "%-46s %.0f B (live keys and values)\n", who+": etcd bytes per NAB", g.BytesPerNAB)
	parts := slices.SortedFunc(maps.Keys(g.BytesPerNABByPart), func(a, b string) int {
		return cmp.Or(cmp.Compare(g.BytesPerNABByPart[b], g.BytesPerNABByPart[a]), strings.Compare(a, b))
	})
	for _, p := range parts {
		fmt.Fprintf(w, "  %-44s %8.1f B  %6.2f keys\n", p, g.BytesPerNABByPart[p], g.KeysPerNABByPart[p])
	}
	fmt.Fprintf(w, "  %-44s %.0f B (in use %.0f B); %.1f MiB now (in use %.1f)\n", "db size growth per NAB", g.DbSizeDeltaPerNAB, g.DbSizeInUseDeltaPerNAB, g.DbSizeMiB, g.DbSizeInUseMiB)
	for _, p := range slices.Sorted(maps.Keys(g.ObjectBytesByField)) {
		fields := g.ObjectBytesByField[p]
		var parts []string
		for _, f := range slices.SortedFunc(maps.Keys(fields), func(a, b string) int { return cmp.Compare(fields[b], fields[a]) }) {
			parts = append(parts, fmt.Sprintf("%s %.0f", f, fields[f]))
		}
		fmt.Fprintf(w, "  %-44s %s\n", "one object of "+strings.TrimPrefix(p, "/registry/"), strings.Join(parts, ", "))
	}
}

// liveHeapMiB returns HeapAlloc right after a forced GC of the nac serving
// pprof on addr: the "# HeapAlloc = " line of its heap profile's text
// form, asked with gc=1.
func liveHeapMiB(ctx context.Context, addr string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/heap?gc=1&debug=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "# HeapAlloc = "); ok {
			b, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return b / (1 << 20), err
		}
	}
	return 0, fmt.Errorf("no HeapAlloc in %s's heap profile", addr)
}
