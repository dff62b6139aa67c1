// Package metrics defines nacflow's Prometheus metrics (docs/metrics.md):
// operation and phase counters and durations (Observer, fed by the
// engine), gauges read from the cache at each scrape (StateCollector), and
// the failure counters reconcilers bump.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// nacflow's Prometheus metrics, served with controller-runtime's own
// (workqueue depth, reconcile counts and errors, client requests) on
// --metrics-bind-address. docs/metrics.md lists them with example queries.
var (
	operationsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nacflow_operations_started_total",
		Help: "Operations (blueprint actions) started, by NAC kind and action.",
	}, []string{"kind", "action"})
	operationsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nacflow_operations_finished_total",
		Help: "Operations (blueprint actions) finished, by NAC kind, action and result (complete, failed).",
	}, []string{"kind", "action", "result"})
	operationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "nacflow_operation_duration_seconds",
		Help: "Time from an operation's start to its end (seconds; whole seconds, from status times), by NAC kind, action and result.",
		// 1 s to about 1.5 days: a backup waits for Velero.
		Buckets: prometheus.ExponentialBuckets(1, 4, 9),
	}, []string{"kind", "action", "result"})
	phaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "nacflow_phase_duration_seconds",
		Help:    "Time from a phase's start to its end (seconds; whole seconds, from status times), by NAC kind, phase function and result (complete, failed).",
		Buckets: prometheus.ExponentialBuckets(1, 4, 9),
	}, []string{"kind", "func", "result"})
	BlueprintValidationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nacflow_blueprint_validation_failures_total",
		Help: "Blueprint generations found invalid (and so not used), by blueprint name.",
	}, []string{"blueprint"})
	BackupSyncFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nacflow_backup_sync_failures_total",
		Help: "Velero Backups the backup sync could not turn into a NonAdminBackup (each skipped pass counts once; the error is in the log).",
	})
)

func init() {
	metrics.Registry.MustRegister(operationsStarted, operationsFinished, operationDuration, phaseDuration, BlueprintValidationFailures, BackupSyncFailures)
}

// Observer records a kind's operations and phases in nacflow's
// Prometheus metrics; it implements engine.Observer.
type Observer struct {
	// Kind is the NAC kind label (NonAdminBackup, ...).
	Kind string
}

var _ engine.Observer = Observer{}

func result(failed bool) string {
	if failed {
		return "failed"
	}
	return "complete"
}

// ActionStarted implements engine.Observer.
func (m Observer) ActionStarted(_ engine.Object, action string) {
	operationsStarted.WithLabelValues(m.Kind, action).Inc()
}

// ActionEnded implements engine.Observer.
func (m Observer) ActionEnded(_ engine.Object, action string, failed bool, d time.Duration) {
	operationsFinished.WithLabelValues(m.Kind, action, result(failed)).Inc()
	operationDuration.WithLabelValues(m.Kind, action, result(failed)).Observe(d.Seconds())
}

// PhaseEnded implements engine.Observer.
func (m Observer) PhaseEnded(_ engine.Object, fn string, failed bool, d time.Duration) {
	phaseDuration.WithLabelValues(m.Kind, fn, result(failed)).Observe(d.Seconds())
}

// StateCollector reports, at each scrape, gauges read from the manager's
// cache and the queue index — so they are right after a restart, unlike
// counters kept in memory:
//
//	nacflow_active_operations{kind}       NAC objects whose plan is running
//	nacflow_velero_backup_queue_depth     unfinished Velero Backups of the OADP namespace
//	nacflow_backups_unverified{namespace} NonAdminBackups whose contents check found items that are not the tenant's (Verified=False)
//	nacflow_schedule_last_success_timestamp_seconds{namespace,name} the newest successful run of a NonAdminSchedule
//	nacflow_schedule_rpo_seconds{namespace,name} its recovery-point objective
//	nacflow_tenant_backups{namespace,location} NonAdminBackups that hold a backup, by storage location
//	nacflow_tenant_backup_bytes{namespace,location} the bytes they take (status.usage.totalBytes)
//	nacflow_restore_test_rto_seconds{namespace} the RTO of the namespace's newest restore test that finished its restore
//	nacflow_restore_test_last_success_timestamp_seconds{namespace} when its newest successful restore test ended
//	nacflow_restore_test_failing{namespace} 1 when its newest restore test did not succeed, else 0
//	nacflow_tenant_failed_in_a_row{namespace,kind} the namespace's backups (restores) that failed since its last successful one
//	nacflow_tenant_last_success_timestamp_seconds{namespace,kind} when its newest successful backup (restore) ended
//	nacflow_tenant_locations{namespace,state} its NonAdminBackupStorageLocations: available, unavailable, withdrawn, pending
//	nacflow_velero_queue_waiting{namespace,kind} its operations waiting for their turn in Velero's queue (WaitForTurn)
//	nacflow_velero_queue_oldest_wait_seconds{namespace,kind} how long the longest of them has waited
//
// Every label is per namespace at most, never per object (except a
// schedule's name: schedules are few).
//
// A scrape reads the cached NAC objects in place: O(objects), no API call,
// no copies (a list of copies would allocate a slice of every NAC object per
// scrape).
type StateCollector struct {
	// Informers is the manager's cache, read in place (eachCached).
	Informers cache.Informers
	// Reader is the manager's (cached) client, listed when Informers is nil
	// or gives no store for a kind.
	Reader client.Reader
	// Queue is the index of unfinished Velero Backups (nil: no depth).
	Queue *veleroqueue.BackupQueue
	// Now is the clock of the queue's waits (nil: time.Now).
	Now func() time.Time
}

var (
	activeDesc = prometheus.NewDesc("nacflow_active_operations",
		"NAC objects whose operation (plan) is running, by kind.", []string{"kind"}, nil)
	queueDepthDesc = prometheus.NewDesc("nacflow_velero_backup_queue_depth",
		"Unfinished Velero Backups in the OADP namespace: Velero's queue, tenants' and the admin's.", nil, nil)
	lastSuccessDesc = prometheus.NewDesc("nacflow_schedule_last_success_timestamp_seconds",
		"Completion time (Unix seconds) of the newest successful run of a NonAdminSchedule; absent before the first.", []string{"namespace", "name"}, nil)
	rpoDesc = prometheus.NewDesc("nacflow_schedule_rpo_seconds",
		"The recovery-point objective in force of a NonAdminSchedule (status.rpo), in seconds; absent without one.", []string{"namespace", "name"}, nil)
	tenantBackupsDesc = prometheus.NewDesc("nacflow_tenant_backups",
		"NonAdminBackups that hold, or will hold, a backup in object storage, by namespace and storage location (a NonAdminBackupStorageLocation's name, or default).", []string{"namespace", "location"}, nil)
	tenantBytesDesc = prometheus.NewDesc("nacflow_tenant_backup_bytes",
		"Bytes the namespace's backups take in object storage (the sum of status.usage.totalBytes: contents and volume data), by storage location.", []string{"namespace", "location"}, nil)
	rtoDesc = prometheus.NewDesc("nacflow_restore_test_rto_seconds",
		"The recovery time measured by the newest restore test of a namespace that finished its restore (Velero Restore created to completed), in seconds.", []string{"namespace"}, nil)
	testSuccessDesc = prometheus.NewDesc("nacflow_restore_test_last_success_timestamp_seconds",
		"When the newest successful restore test of a namespace ended (Unix seconds); absent before the first.", []string{"namespace"}, nil)
	testFailingDesc = prometheus.NewDesc("nacflow_restore_test_failing",
		"1 when the newest restore test of a namespace failed or could not finish (RestoreTested False or Unknown), 0 when it succeeded.", []string{"namespace"}, nil)
	failedInARowDesc = prometheus.NewDesc("nacflow_tenant_failed_in_a_row",
		"The namespace's backups (kind NonAdminBackup) or restores (NonAdminRestore) that failed since its newest successful one (Velero Failed, PartiallyFailed or FailedValidation, or the plan failed); 0 once one succeeds. Present for each namespace with an ended one.", []string{"namespace", "kind"}, nil)
	tenantLastSuccessDesc = prometheus.NewDesc("nacflow_tenant_last_success_timestamp_seconds",
		"When the namespace's newest successful backup or restore ended (Unix seconds); absent before the first.", []string{"namespace", "kind"}, nil)
	tenantLocationsDesc = prometheus.NewDesc("nacflow_tenant_locations",
		"The namespace's NonAdminBackupStorageLocations by state: available and unavailable (Velero's phase of its BSL), withdrawn (BackingOff: refused, rejected or overlapping; no Velero BSL), pending (not yet approved or checked by Velero). Every state is reported for a namespace with one.", []string{"namespace", "state"}, nil)
	queueWaitingDesc = prometheus.NewDesc("nacflow_velero_queue_waiting",
		"The namespace's operations waiting for their turn in Velero's queue (a WaitForTurn phase waiting: the fair share), by NAC kind.", []string{"namespace", "kind"}, nil)
	queueOldestDesc = prometheus.NewDesc("nacflow_velero_queue_oldest_wait_seconds",
		"How long the namespace's operation that has waited longest for its turn in Velero's queue has waited so far (seconds), by NAC kind.", []string{"namespace", "kind"}, nil)
	unverifiedDesc = prometheus.NewDesc("nacflow_backups_unverified",
		"NonAdminBackups whose backup holds items that are not the tenant's (condition Verified=False), by namespace.", []string{"namespace"}, nil)
)

// Describe implements prometheus.Collector.
func (s *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- activeDesc
	ch <- queueDepthDesc
	ch <- unverifiedDesc
	ch <- lastSuccessDesc
	ch <- rpoDesc
	ch <- rtoDesc
	ch <- tenantBackupsDesc
	ch <- tenantBytesDesc
	ch <- testSuccessDesc
	ch <- testFailingDesc
	ch <- failedInARowDesc
	ch <- tenantLastSuccessDesc
	ch <- tenantLocationsDesc
	ch <- queueWaitingDesc
	ch <- queueOldestDesc
}

// outcomes sums up a namespace's ended backups or restores of one kind:
// the newest success, and the failures (their end times) after it.
type outcomes struct {
	lastSuccess *metav1.Time
	failures    []metav1.Time
}

// add counts o, an ended outcome.
func (r *outcomes) add(o v1alpha1.Outcome) {
	if o.Failed {
		r.failures = append(r.failures, o.At)
		return
	}
	if r.lastSuccess == nil || r.lastSuccess.Before(&o.At) {
		at := o.At
		r.lastSuccess = &at
	}
}

// failedInARow is how many failures ended after the newest success.
func (r *outcomes) failedInARow() int {
	n := 0
	for i := range r.failures {
		if r.lastSuccess == nil || r.lastSuccess.Before(&r.failures[i]) {
			n++
		}
	}
	return n
}

// Location states of nacflow_tenant_locations.
var locationStates = []string{"available", "unavailable", "withdrawn", "pending"}

// locationState is the state n is counted under in nacflow_tenant_locations.
func locationState(n *v1alpha1.NonAdminBackupStorageLocation) string {
	if n.Status.Phase == v1alpha1.NonAdminPhaseBackingOff {
		return "withdrawn"
	}
	if v := n.Status.VeleroBackupStorageLocation; v != nil && v.Status != nil {
		switch v.Status.Phase {
		case velerov1.BackupStorageLocationPhaseAvailable:
			return "available"
		case velerov1.BackupStorageLocationPhaseUnavailable:
			return "unavailable"
		}
	}
	return "pending"
}

// restoreTests sums up a namespace's restore tests (NonAdminBackups'
// status.restoreTest) for the restore-test gauges.
type restoreTests struct {
	newest, newestTimed, newestSuccess *v1alpha1.RestoreTest
}

// add counts rt.
func (r *restoreTests) add(rt *v1alpha1.RestoreTest) {
	newer := func(cur *v1alpha1.RestoreTest) bool { return cur == nil || cur.Time.Before(&rt.Time) }
	if newer(r.newest) {
		r.newest = rt
	}
	if rt.RTO != nil && newer(r.newestTimed) {
		r.newestTimed = rt
	}
	if rt.Result == v1alpha1.RestoreTestSucceeded && newer(r.newestSuccess) {
		r.newestSuccess = rt
	}
}

// metrics returns the gauges of namespace ns.
func (r *restoreTests) metrics(ns string) []prometheus.Metric {
	var out []prometheus.Metric
	if r.newestTimed != nil {
		out = append(out, prometheus.MustNewConstMetric(rtoDesc, prometheus.GaugeValue, r.newestTimed.RTO.Seconds(), ns))
	}
	if r.newestSuccess != nil {
		out = append(out, prometheus.MustNewConstMetric(testSuccessDesc, prometheus.GaugeValue, float64(r.newestSuccess.Time.Unix()), ns))
	}
	failing := 0.0
	if r.newest.Result != v1alpha1.RestoreTestSucceeded {
		failing = 1
	}
	return append(out, prometheus.MustNewConstMetric(testFailingDesc, prometheus.GaugeValue, failing, ns))
}

// Collect implements prometheus.Collector. A kind whose objects cannot be
// read (the cache not started yet) reports nothing and logs why.
func (s *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := s.Now
	if now == nil {
		now = time.Now
	}
	for _, k := range v1alpha1.Kinds() {
		active := 0
		unverified := map[string]int{}
		tests := map[string]*restoreTests{}
		type place struct{ ns, location string }
		held := map[place]*v1alpha1.StorageUsage{}
		var schedules []prometheus.Metric
		ended := map[string]*outcomes{}
		addOutcome := func(ns string, o v1alpha1.Outcome) {
			if !o.Ended {
				return
			}
			if ended[ns] == nil {
				ended[ns] = &outcomes{}
			}
			ended[ns].add(o)
		}
		locations := map[string]map[string]int{}
		type wait struct {
			n      int
			oldest *metav1.Time
		}
		waiting := map[string]*wait{}
		err := eachCached(ctx, s.Informers, s.Reader, k.New(), k.NewList(), func(o client.Object) {
			if n, ok := o.(*v1alpha1.NonAdminSchedule); ok {
				// A schedule's plan keeps its Velero Schedule in step; it
				// is not an operation in flight.
				if n.Status.LastSuccessfulBackup != nil {
					schedules = append(schedules, prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, float64(n.Status.LastSuccessfulBackup.Unix()), n.Namespace, n.Name))
				}
				if n.Status.RPO != nil {
					schedules = append(schedules, prometheus.MustNewConstMetric(rpoDesc, prometheus.GaugeValue, n.Status.RPO.Duration.Seconds(), n.Namespace, n.Name))
				}
				return
			}
			if n, ok := o.(*v1alpha1.NonAdminBackup); ok {
				if meta.IsStatusConditionFalse(n.Status.Conditions, v1alpha1.ConditionVerified) {
					unverified[n.Namespace]++
				}
				if n.HoldsBackup() {
					p := place{n.Namespace, n.UsageLocation()}
					if held[p] == nil {
						held[p] = &v1alpha1.StorageUsage{}
					}
					held[p].Add(n)
				}
				if rt := n.Status.RestoreTest; rt != nil {
					if tests[n.Namespace] == nil {
						tests[n.Namespace] = &restoreTests{}
					}
					tests[n.Namespace].add(rt)
				}
				addOutcome(n.Namespace, n.BackupOutcome())
			}
			if n, ok := o.(*v1alpha1.NonAdminRestore); ok {
				addOutcome(n.Namespace, n.RestoreOutcome())
			}
			if n, ok := o.(*v1alpha1.NonAdminBackupStorageLocation); ok {
				if locations[n.Namespace] == nil {
					locations[n.Namespace] = map[string]int{}
				}
				locations[n.Namespace][locationState(n)]++
			}
			if h, ok := o.(v1alpha1.Object); ok {
				if p := h.GetPlan(); p != nil && p.State == v1alpha1.PlanRunning {
					active++
				}
				if ph := veleroqueue.WaitingTurn(h); ph != nil {
					since := ph.StartTime
					w := waiting[o.GetNamespace()]
					if w == nil {
						w = &wait{}
						waiting[o.GetNamespace()] = w
					}
					w.n++
					if since != nil && (w.oldest == nil || since.Before(w.oldest)) {
						w.oldest = since
					}
				}
			}
		})
		if err != nil {
			log.FromContext(ctx).Error(err, "reading the cache for nacflow_active_operations", "kind", k.Kind)
			continue
		}
		ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(active), k.Kind)
		for _, m := range schedules {
			ch <- m
		}
		for ns, n := range unverified {
			ch <- prometheus.MustNewConstMetric(unverifiedDesc, prometheus.GaugeValue, float64(n), ns)
		}
		for p, h := range held {
			ch <- prometheus.MustNewConstMetric(tenantBackupsDesc, prometheus.GaugeValue, float64(h.Backups), p.ns, p.location)
			ch <- prometheus.MustNewConstMetric(tenantBytesDesc, prometheus.GaugeValue, float64(h.TotalBytes), p.ns, p.location)
		}
		for ns, t := range tests {
			for _, m := range t.metrics(ns) {
				ch <- m
			}
		}
		for ns, r := range ended {
			ch <- prometheus.MustNewConstMetric(failedInARowDesc, prometheus.GaugeValue, float64(r.failedInARow()), ns, k.Kind)
			if r.lastSuccess != nil {
				ch <- prometheus.MustNewConstMetric(tenantLastSuccessDesc, prometheus.GaugeValue, float64(r.lastSuccess.Unix()), ns, k.Kind)
			}
		}
		for ns, byState := range locations {
			for _, st := range locationStates {
				ch <- prometheus.MustNewConstMetric(tenantLocationsDesc, prometheus.GaugeValue, float64(byState[st]), ns, st)
			}
		}
		for ns, w := range waiting {
			ch <- prometheus.MustNewConstMetric(queueWaitingDesc, prometheus.GaugeValue, float64(w.n), ns, k.Kind)
			if w.oldest != nil {
				ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, max(0, now().Sub(w.oldest.Time).Seconds()), ns, k.Kind)
			}
		}
	}
	if s.Queue != nil {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.Queue.Len()))
	}
}
