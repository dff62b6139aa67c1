package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// Restart is what a restart of the controller over settled NABs cost
// (-restart).
type Restart struct {
	// Completed, Waiting and Failed NABs before the restart: their Velero
	// Backups Completed (downloads served, so verification ended), New
	// (waiting in Velero's queue) and Failed.
	Completed, Waiting, Failed int
	// SettleSeconds is how long the mix took to settle (plans ended,
	// controller quiet) before the restart.
	SettleSeconds float64
	// ReadySeconds: from the new process's start until its /readyz
	// answered 200.
	ReadySeconds float64
	// ReconciledSeconds: from its start until it had reconciled as many
	// NABs as there are (each once, from its caches' first list; to the
	// 500 ms of the scrapes); 0 if it never did before quiet.
	ReconciledSeconds float64
	// QuietSeconds: from its start until the controller was quiet again
	// (its work queues empty, no write for 3 s, no event queued).
	QuietSeconds float64
	// Writes are the controller's API writes from its start until quiet,
	// by "VERB resource[/subresource]", events included (the bench's
	// DownloadRequest patches and the API server's lease renewals left
	// out); WritesTotal their sum, EventWrites the events among them.
	Writes                   map[string]float64
	WritesTotal, EventWrites float64
	// ObservedSeconds, ObservedWrites and ObservedTotal: with
	// -restart-observe, the writes from the start until that long after
	// it (and quiet again), to catch the periodic passes (backup sync
	// every 2 min) and the waits' rechecks.
	ObservedSeconds float64            `json:",omitempty"`
	ObservedWrites  map[string]float64 `json:",omitempty"`
	ObservedTotal   float64            `json:",omitempty"`
	// NABsChanged and FieldsChanged: the NABs that differ from before the
	// restart (at quiet, or at the end of -restart-observe), and how many
	// changed each field (see Figures).
	NABsChanged   int
	FieldsChanged map[string]int
	// NABReconciles of the new process until quiet.
	NABReconciles float64
	// ControllerCPUSeconds and ControllerPeakRSSMiB of the new process
	// until quiet.
	ControllerCPUSeconds, ControllerPeakRSSMiB float64
	// ControllerHeapInuseMiB is the new process's highest
	// go_memstats_heap_inuse_bytes its /metrics showed until quiet.
	ControllerHeapInuseMiB float64
	// AuthWrites are the metrics endpoint's TokenReviews and
	// SubjectAccessReviews among Writes (POSTs the scraper's requests
	// cause, not the reconcilers); LeaseWrites the lease writes left out
	// of Writes (the API server's own renewals, every 10 s, and nac's
	// leader election lease, if it is on).
	AuthWrites, LeaseWrites float64
}

// measureRestart settles the NABs of backups into a mix (a third each
// Completed, left New, Failed), waits until every plan that can end has
// ended and the controller is quiet, then restarts nac and measures the
// restart into res.Restart (restart). cpu0 is the first process's CPU
// before the wave, for res.ControllerCPUSeconds.
func measureRestart(st *stage, m *meter, res *Result, backups []velerov1.Backup, cpu0 float64, observe time.Duration) error {
	ctx, c := st.ctx, st.c
	r := &Restart{}
	res.Restart = r
	plans := trackPlans(ctx, c)
	var completed, waiting, failed []velerov1.Backup
	for i, b := range backups {
		switch i % 3 {
		case 0:
			completed = append(completed, b)
		case 1:
			waiting = append(waiting, b)
		default:
			failed = append(failed, b)
		}
	}
	r.Completed, r.Waiting, r.Failed = len(completed), len(waiting), len(failed)
	start := time.Now()
	for _, p := range []struct {
		bs    []velerov1.Backup
		phase velerov1.BackupPhase
	}{{waiting, velerov1.BackupPhaseNew}, {completed, velerov1.BackupPhaseCompleted}, {failed, velerov1.BackupPhaseFailed}} {
		if err := patchPhase(ctx, c, p.bs, p.phase); err != nil {
			return fmt.Errorf("setting Velero Backups %s: %w", p.phase, err)
		}
	}
	debugf("mix set: %d Completed, %d New, %d Failed", r.Completed, r.Waiting, r.Failed)
	if err := plans.waitEnded(ctx, nabKeys(append(completed[:len(completed):len(completed)], failed...))); err != nil {
		return err
	}
	debugf("plans ended")
	if err := m.quiet(); err != nil {
		return err
	}
	r.SettleSeconds = time.Since(start).Seconds()
	cpu1, _ := procCPU(st.pid())
	res.ControllerCPUSeconds = cpu1 - cpu0
	res.ControllerPeakRSSMiB = procPeakRSS(st.pid())
	res.ControllerRSSAnonMiB = procStatusMiB(st.pid(), "RssAnon")
	res.ControllerRSSFileMiB = procStatusMiB(st.pid(), "RssFile")
	return restart(st, m, r, len(backups), observe)
}

// restart stops nac (SIGTERM) over settled NABs, starts it again with the
// same flags and measures into r: the seconds until its /readyz answered
// 200, until it had reconciled nabs NABs and until it was quiet again, its
// writes until then (and until observe after its start, if longer), the
// NABs it changed, its CPU, peak RSS and peak heap. The heap peak of the
// stopped process is taken (st.heap) before.
func restart(st *stage, m *meter, r *Restart, nabs int, observe time.Duration) error {
	ctx, c := st.ctx, st.c
	nabs0, err := readNABs(ctx, c)
	if err != nil {
		return err
	}
	debugf("settled; stopping nac")
	st.nac.stop()
	st.heap.take() // the stopped process's: the peak below is the new one's
	before, err := scrape(ctx, m.cs)
	if err != nil {
		return err
	}
	patches0 := m.downloads.Patches()
	if err := st.restartNac(); err != nil {
		return err
	}
	ready, err := st.nac.waitReady(ctx, st.probeAddr)
	if err != nil {
		return err
	}
	r.ReadySeconds = ready.Seconds()
	debugf("ready after %s", ready)
	reconciled, err := waitQueuesEmpty(ctx, m.nacMetrics, nabs)
	if err != nil {
		return err
	}
	if !reconciled.IsZero() {
		r.ReconciledSeconds = reconciled.Sub(st.nac.started).Seconds()
	}
	if err := m.quiet(); err != nil {
		return err
	}
	r.QuietSeconds = time.Since(st.nac.started).Seconds()
	after, err := scrape(ctx, m.cs)
	if err != nil {
		return err
	}
	r.Writes = controllerWriteDelta(before, after, m.downloads.Patches()-patches0)
	r.WritesTotal, r.EventWrites, r.AuthWrites = sumWrites(r.Writes)
	r.LeaseWrites = leaseWrites(before, after)
	nm, err := m.nacMetrics()
	if err != nil {
		return err
	}
	r.NABReconciles = nabReconciles(nm)
	if err := observeRestart(st, m, r, before, patches0, observe); err != nil {
		return err
	}
	nabs1, err := readNABs(ctx, c)
	if err != nil {
		return err
	}
	r.NABsChanged, r.FieldsChanged = changedFields(nabs0, nabs1)
	r.ControllerCPUSeconds, _ = procCPU(st.pid())
	r.ControllerPeakRSSMiB = procPeakRSS(st.pid())
	r.ControllerHeapInuseMiB, _ = st.heap.take()
	return nil
}

// observeRestart counts the writes from the restart until observe after
// it (then quiet again), when that is later than now.
func observeRestart(st *stage, m *meter, r *Restart, before map[string]float64, patches0 float64, observe time.Duration) error {
	rest := time.Until(st.nac.started.Add(observe))
	if rest <= 0 {
		return nil
	}
	debugf("observing for %s more", rest.Round(time.Second))
	select {
	case <-st.ctx.Done():
		return st.ctx.Err()
	case <-time.After(rest):
	}
	if err := m.quiet(); err != nil {
		return err
	}
	r.ObservedSeconds = time.Since(st.nac.started).Seconds()
	end, err := scrape(st.ctx, m.cs)
	if err != nil {
		return err
	}
	r.ObservedWrites = controllerWriteDelta(before, end, m.downloads.Patches()-patches0)
	r.ObservedTotal, _, _ = sumWrites(r.ObservedWrites)
	return nil
}

// sumWrites returns the sum of writes ("VERB resource" → count), the
// events among them, and the metrics endpoint's TokenReviews and
// SubjectAccessReviews among them.
func sumWrites(writes map[string]float64) (total, events, auth float64) {
	for k, v := range writes {
		total += v
		switch {
		case strings.HasSuffix(k, " events"):
			events += v
		case k == "POST tokenreviews" || k == "POST subjectaccessreviews":
			auth += v
		}
	}
	return total, events, auth
}

// leaseWrites returns the lease writes from a to b.
func leaseWrites(a, b map[string]float64) float64 {
	n := 0.0
	for k, v := range diff(a, b) {
		if strings.HasSuffix(k, " leases") {
			n += v
		}
	}
	return n
}

// waitQueuesEmpty waits until the new process has reconciled at least once
// and every controller's work queue is empty (workqueue_depth 0: the
// initial list of every kind handled; a delayed recheck is not counted
// until due), scraping every 500 ms. It returns when the process had
// reconciled nabs NABs, zero if it had not by then.
func waitQueuesEmpty(ctx context.Context, nacMetrics func() (map[string]float64, error), nabs int) (time.Time, error) {
	var reconciled time.Time
	for {
		nm, err := nacMetrics()
		if err == nil && reconciled.IsZero() && nabReconciles(nm) >= float64(nabs) {
			reconciled = time.Now()
		}
		if err == nil && nabReconciles(nm) > 0 {
			depth := 0.0
			for k, v := range nm {
				if strings.HasPrefix(k, "workqueue_depth") {
					depth += v
				}
			}
			if depth == 0 {
				return reconciled, nil
			}
		}
		select {
		case <-ctx.Done():
			return reconciled, fmt.Errorf("waiting for the controller's work queues to empty: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
