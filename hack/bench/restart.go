package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
}

// measureRestart settles the NABs of backups into a mix (a third each
// Completed, left New, Failed), waits until every plan that can end has
// ended and the controller is quiet, stops nac (SIGTERM), starts it again
// with restartNac and measures the restart into res.Restart. cpu0 is the
// first process's CPU before the wave, for res.ControllerCPUSeconds.
func measureRestart(ctx context.Context, c client.WithWatch, m *meter, res *Result, backups []velerov1.Backup,
	cpu0 float64, nac *nacProc, restartNac func() (*nacProc, error), probeAddr string, observe time.Duration) error {
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
	cpu1, _ := procCPU(nac.pid())
	res.ControllerCPUSeconds = cpu1 - cpu0
	res.ControllerPeakRSSMiB = procPeakRSS(nac.pid())
	res.ControllerRSSAnonMiB = procStatusMiB(nac.pid(), "RssAnon")
	res.ControllerRSSFileMiB = procStatusMiB(nac.pid(), "RssFile")

	nabs0, err := readNABs(ctx, c)
	if err != nil {
		return err
	}
	debugf("settled; stopping nac")
	nac.stop()
	before, err := scrape(ctx, m.cs)
	if err != nil {
		return err
	}
	patches0 := m.downloads.Patches()
	if nac, err = restartNac(); err != nil {
		return err
	}
	ready, err := nac.waitReady(ctx, probeAddr)
	if err != nil {
		return err
	}
	r.ReadySeconds = ready.Seconds()
	debugf("ready after %s", ready)
	reconciled, err := waitQueuesEmpty(ctx, m.nacMetrics, len(backups))
	if err != nil {
		return err
	}
	if !reconciled.IsZero() {
		r.ReconciledSeconds = reconciled.Sub(nac.started).Seconds()
	}
	if err := m.quiet(); err != nil {
		return err
	}
	r.QuietSeconds = time.Since(nac.started).Seconds()
	after, err := scrape(ctx, m.cs)
	if err != nil {
		return err
	}
	r.Writes = controllerWriteDelta(before, after, m.downloads.Patches()-patches0)
	for k, v := range r.Writes {
		r.WritesTotal += v
		if strings.HasSuffix(k, " events") {
			r.EventWrites += v
		}
	}
	nm, err := m.nacMetrics()
	if err != nil {
		return err
	}
	r.NABReconciles = nabReconciles(nm)
	if rest := time.Until(nac.started.Add(observe)); rest > 0 {
		debugf("observing for %s more", rest.Round(time.Second))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rest):
		}
		if err := m.quiet(); err != nil {
			return err
		}
		r.ObservedSeconds = time.Since(nac.started).Seconds()
		end, err := scrape(ctx, m.cs)
		if err != nil {
			return err
		}
		r.ObservedWrites = controllerWriteDelta(before, end, m.downloads.Patches()-patches0)
		for _, v := range r.ObservedWrites {
			r.ObservedTotal += v
		}
	}
	nabs1, err := readNABs(ctx, c)
	if err != nil {
		return err
	}
	r.NABsChanged, r.FieldsChanged = changedFields(nabs0, nabs1)
	r.ControllerCPUSeconds, _ = procCPU(nac.pid())
	r.ControllerPeakRSSMiB = procPeakRSS(nac.pid())
	return nil
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
