package controllers

import (
	"context"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// Usage measurement defaults (nac --usage-measure-rate, --usage-measure-burst):
// a measurement is one DownloadRequest that Velero serves with its single
// download worker (about 100 ms) and one ranged GET of the store, so one a
// second leaves Velero's worker to verifications and tenants' downloads; a
// cluster of 10,000 unmeasured backups is filled in within three hours.
const (
	DefaultUsageMeasureRate  = 1.0
	DefaultUsageMeasureBurst = 10
)

// A backup that could not be measured (the store or Velero did not answer
// in time, a refusal) is tried again usageRetryFirst later, doubling with
// each failure in a row up to usageRetryAfter: a store or Velero slow for a
// while (a loaded cluster) costs minutes, one that never answers one
// attempt an hour.
const (
	usageRetryFirst = time.Minute
	usageRetryAfter = time.Hour
)

// UsageMeter fills in status.usage of finished NonAdminBackups — new ones as
// their plan ends, older ones (made before nacflow measured, scheduled runs,
// backups brought back by sync) as they are reconciled, which a manager's
// start does for all — at most Rate measurements a second (a token bucket of
// Burst): measuring is off the backup's own path, so a backup's plan takes
// no longer for it. Each measurement is the MeasureUsage phase function,
// guarded by the engine's safety rule for the NonAdminBackup's operation as
// in a plan. Memory: a few words per backup waiting for its turn or its
// retry. Safe for concurrent use.
type UsageMeter struct {
	// Registry holds MeasureUsage (the guarded registry of the runners).
	Registry *engine.Registry
	// OADPNamespace is where the measurement's DownloadRequest is made.
	OADPNamespace string

	limiter *rate.Limiter
	now     func() time.Time

	mu sync.Mutex
	// due is when a backup's reserved turn comes; started holds those
	// whose measurement began (their DownloadRequest may exist): they need
	// no further turn; failed is when a backup may be tried again.
	due     map[types.UID]time.Time
	started map[types.UID]bool
	failed  map[types.UID]time.Time
	// failures counts a backup's failed measurements in a row.
	failures map[types.UID]int
}

// NewUsageMeter returns a meter of perSecond measurements a second, burst at
// once, with registry's MeasureUsage, or nil when perSecond is not positive
// (measurement off).
func NewUsageMeter(registry *engine.Registry, oadpNamespace string, perSecond float64, burst int) *UsageMeter {
	if perSecond <= 0 {
		return nil
	}
	return &UsageMeter{Registry: registry, OADPNamespace: oadpNamespace, limiter: rate.NewLimiter(rate.Limit(perSecond), max(burst, 1)),
		now: time.Now, due: map[types.UID]time.Time{}, started: map[types.UID]bool{}, failed: map[types.UID]time.Time{},
		failures: map[types.UID]int{}}
}

// needsUsage reports whether nab's usage is worth measuring: unknown, its
// mirrored Velero Backup Completed or PartiallyFailed (a filter only:
// MeasureUsage checks the Backup itself), and nab not on its way out.
func needsUsage(nab *v1alpha1.NonAdminBackup) bool {
	vb := nab.Status.VeleroBackup
	if nab.Status.Usage != nil || !nab.DeletionTimestamp.IsZero() || nab.Spec.DeleteBackup || nab.Spec.ForceDeleteBackup ||
		vb == nil || vb.Name == "" || vb.Status == nil {
		return false
	}
	return vb.Status.Phase == velerov1.BackupPhaseCompleted || vb.Status.Phase == velerov1.BackupPhasePartiallyFailed
}

// Measure measures nab, whose plan has ended, when its usage is unknown:
// it sets nab.Status.Usage (written with the reconcile's status) once Velero
// has served the size. uuid is the operation's NACUUID. It returns how long
// until it should be called again (0: not needed; the DownloadRequest's
// watch also wakes it). Errors: the API server's, retryable; a measurement
// that failed otherwise is logged and retried a minute later, then 2, 4, …
// minutes, at most an hour (usageRetryFirst, usageRetryAfter).
func (m *UsageMeter) Measure(ctx context.Context, nab *v1alpha1.NonAdminBackup, uuid string) (time.Duration, error) {
	if m == nil {
		return 0, nil
	}
	uid := nab.UID
	if !needsUsage(nab) {
		m.forget(uid)
		return 0, nil
	}
	if wait := m.turn(uid); wait > 0 {
		return wait, nil
	}
	fn, ok := m.Registry.Get("MeasureUsage")
	if !ok {
		return 0, nil
	}
	op := &engine.Operation{Object: nab, OADPNamespace: m.OADPNamespace, UUID: uuid, Phase: "usage"}
	res, err := fn.Run(ctx, op, &phases.MeasureUsageArgs{Name: nab.Status.VeleroBackup.Name})
	switch {
	case err != nil && engine.IsTerminal(err):
		log.FromContext(ctx).Info("usage not measured", "reason", err.Error())
		return m.fail(uid), nil
	case err != nil:
		return 0, err
	case res.Wait:
		return res.RecheckAfter, nil
	case nab.Status.Usage == nil:
		log.FromContext(ctx).V(1).Info("usage not measured", "reason", res.Message)
		return m.fail(uid), nil
	}
	m.forget(uid)
	return 0, nil
}

// turn returns 0 when uid may be measured now — its measurement began
// earlier, or its reserved turn has come — else how long until its turn
// (reserving one when it has none).
func (m *UsageMeter) turn(uid types.UID) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.started[uid] {
		return 0
	}
	if t, ok := m.failed[uid]; ok {
		if now.Before(t) {
			return t.Sub(now)
		}
		delete(m.failed, uid)
	}
	due, ok := m.due[uid]
	if !ok {
		due = now.Add(m.limiter.ReserveN(now, 1).DelayFrom(now))
		m.due[uid] = due
	}
	if now.Before(due) {
		return due.Sub(now)
	}
	delete(m.due, uid)
	m.started[uid] = true
	return 0
}

// fail records that uid could not be measured; it returns when to try again.
func (m *UsageMeter) fail(uid types.UID) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.started, uid)
	n := m.failures[uid]
	m.failures[uid] = n + 1
	wait := min(usageRetryFirst<<min(n, 16), usageRetryAfter)
	m.failed[uid] = m.now().Add(wait)
	return wait
}

// forget drops what the meter holds of uid.
func (m *UsageMeter) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.due, uid)
	delete(m.started, uid)
	delete(m.failed, uid)
	delete(m.failures, uid)
}
