// Package metrics defines nacflow's Prometheus metrics (docs/metrics.md):
// operation and phase counters and durations (Observer, fed by the
// engine), gauges read from the cache at each scrape (StateCollector), and
// the failure counters reconcilers bump.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/veleroqueue"
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
}

// Collect implements prometheus.Collector. A kind whose objects cannot be
// read (the cache not started yet) reports nothing and logs why.
func (s *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range v1alpha1.Kinds() {
		active := 0
		unverified := map[string]int{}
		var schedules []prometheus.Metric
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
			if n, ok := o.(*v1alpha1.NonAdminBackup); ok && meta.IsStatusConditionFalse(n.Status.Conditions, v1alpha1.ConditionVerified) {
				unverified[n.Namespace]++
			}
			if h, ok := o.(v1alpha1.Object); ok {
				if p := h.GetPlan(); p != nil && p.State == v1alpha1.PlanRunning {
					active++
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
	}
	if s.Queue != nil {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.Queue.Len()))
	}
}
