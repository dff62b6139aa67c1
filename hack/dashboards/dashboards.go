package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The dashboards' queries read nacflow's own metrics (docs/metrics.md,
// internal/metrics) and controller-runtime's, nothing else. Two rules hold
// for all of them:
//
//   - Gauges read from the cache at each scrape (nacflow_tenant_*,
//     nacflow_active_operations, nacflow_schedule_*, nacflow_restore_test_*,
//     nacflow_backups_unverified, nacflow_velero_backup_queue_depth,
//     nacflow_velero_queue_*, nacflow_capability) are served by every replica, leader or not: they
//     are taken with max (min for capabilities) by their own labels before
//     anything is summed, so two replicas do not count twice.
//   - Counters count what their own replica did (operations, phases and
//     reconciles on the leader only, webhook requests on each) and are
//     summed.
//
// A gauge that is there only while something happens (an operation
// waiting for its turn) is joined with "or 0 *" a gauge every tenant with
// backups has, so its panel shows 0 rather than nothing.
//
// Operations and phases are rare events (a backup an hour), so the
// panels that summarise them use increase over the whole range
// ($__range) rather than a rate over a few scrapes, which would be
// empty most of the time.

// datasourceVar names the dashboards' datasource variable; every panel and
// query reads its Prometheus through it.
const datasourceVar = "datasource"

// namespaceVar names the tenant dashboard's variable: the tenant namespace
// every one of its queries is filtered by.
const namespaceVar = "namespace"

// maybeEmpty opens the description of every panel that has no data until
// something beyond one backup and one restore happened (a NonAdminSchedule
// ran, a restore test ran): tests that run the dashboards' queries against
// a real Prometheus can tell those panels by it.
const maybeEmpty = "Empty until "

// ds returns the reference to the datasource variable.
func ds() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + datasourceVar + "}")}
}

// query returns a Prometheus query of the datasource variable: expr, its
// series named by legend (Grafana's {{label}} syntax), refID as Grafana
// names it (A, B, ...).
func query(refID, expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(ds()).RefId(refID).Expr(expr).LegendFormat(legend)
}

// instant returns query's instant form, one value per series at the end of
// the range, as a table (stat and table panels).
func instant(refID, expr, legend string) *prometheus.DataqueryBuilder {
	return query(refID, expr, legend).Instant().Format(prometheus.PromQueryFormatTable)
}

// legendTable puts a time series' legend beside it as a table with the
// last and largest values: the series names are long (kind, action,
// result).
func legendTable() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementRight).Calcs([]string{"lastNotNull", "max"})
}

// graph returns a time-series panel of width w and height 8 (Grafana grid
// units: 24 across).
func graph(title, description, unit string, w uint32, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(description).Datasource(ds()).Unit(unit).
		Span(w).Height(8).Min(0).Legend(legendTable()).FillOpacity(10).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

// lastValue reduces a stat panel's series to their last value.
func lastValue() *common.ReduceDataOptionsBuilder {
	return common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)
}

// thresholds returns absolute thresholds: base color below the first step,
// then each step's color from its value on.
func thresholds(base string, steps ...dashboard.Threshold) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).
		Steps(append([]dashboard.Threshold{{Color: base}}, steps...))
}

// step is a threshold step from value v on.
func step(v float64, color string) dashboard.Threshold {
	return dashboard.Threshold{Value: cog.ToPtr(v), Color: color}
}

// single returns a stat panel of width w and height 8 (as every panel
// here: rows stay even) that shows each series' last value with its name.
func single(title, description, unit string, w uint32, targets ...*prometheus.DataqueryBuilder) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().Title(title).Description(description).Datasource(ds()).Unit(unit).
		Span(w).Height(8).ReduceOptions(lastValue()).TextMode(common.BigValueTextModeValueAndName).
		Orientation(common.VizOrientationAuto).
		ColorMode(common.BigValueColorModeValue).GraphMode(common.BigValueGraphModeNone)
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

// column is one column of a table panel: an instant query's value per
// label set, in unit (empty: the panel's).
type column struct {
	name, expr, unit string
}

// grid returns a table panel of width w and height 8: one row per label
// set, one column per instant query (Grafana's merge), named as cols say.
func grid(title, description, unit string, w uint32, cols ...column) *table.PanelBuilder {
	// Grafana names a lone query's value column Value, and each of several
	// Value #<refId>.
	rename := map[string]any{}
	p := table.NewPanelBuilder().Title(title).Description(description).Datasource(ds()).Unit(unit).Span(w).Height(8).
		// Grafana's own default; the SDK's leaves the reducer null.
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}))
	for i, c := range cols {
		ref := string(rune('A' + i))
		p.WithTarget(instant(ref, c.expr, c.name))
		if c.unit != "" {
			p.OverrideByName(c.name, []dashboard.DynamicConfigValue{{Id: "unit", Value: c.unit}})
		}
		if len(cols) == 1 {
			rename["Value"] = c.name
		} else {
			rename["Value #"+ref] = c.name
		}
	}
	return p.WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		// Time is the instant of the query, the same in every row.
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true},
			"renameByName":  rename,
		}})
}

// sortedDesc sorts a table panel by the column named name, largest first.
func sortedDesc(name string) []cog.Builder[common.TableSortByFieldState] {
	return []cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName(name).Desc(true)}
}

// redFromOne is a field override's thresholds: green below 1, red from 1
// on (a location state nothing should be in).
func redFromOne() []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{{Id: "thresholds", Value: map[string]any{
		"mode":  "absolute",
		"steps": []map[string]any{{"color": "green", "value": nil}, {"color": "red", "value": 1}},
	}}}
}

// words shows a 0/1 gauge as words in colors: zero for 0, one for 1.
func words(zero, zeroColor, one, oneColor string) []dashboard.ValueMapping {
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"0": {Text: cog.ToPtr(zero), Color: cog.ToPtr(zeroColor), Index: cog.ToPtr[int32](0)},
			"1": {Text: cog.ToPtr(one), Color: cog.ToPtr(oneColor), Index: cog.ToPtr[int32](1)},
		},
	}}}
}

// board is a dashboard under construction: it numbers the panels in the
// order they are added, so that the JSON is the same at every run.
type board struct {
	b      *dashboard.DashboardBuilder
	nextID uint32
}

// newBoard starts a dashboard called title with uid (the dashboard's
// address in Grafana: /d/<uid>), its datasource variable first.
func newBoard(title, uid, description string) *board {
	b := dashboard.NewDashboardBuilder(title).Uid(uid).Description(description).
		Tags([]string{"nacflow", "velero", "backup"}).
		Refresh("1m").Time("now-24h", "now").Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder(datasourceVar).Label("Prometheus").Type("prometheus"))
	return &board{b: b, nextID: 1}
}

// panelBuilder is what the SDK's panel builders of every type share here.
type panelBuilder[T any] interface {
	cog.Builder[dashboard.Panel]
	Id(uint32) T
}

// add adds a panel; its id is the next number.
func add[T panelBuilder[T]](d *board, p T) {
	p.Id(d.nextID)
	d.nextID++
	d.b.WithPanel(p)
}

// row starts a row called title: the panels added after it sit below it.
func (d *board) row(title string) {
	d.b.WithRow(dashboard.NewRowBuilder(title).Id(d.nextID))
	d.nextID++
}

// build returns the dashboard, or the SDK's validation errors.
func (d *board) build() (dashboard.Dashboard, error) {
	out, err := d.b.Build()
	if err != nil {
		return dashboard.Dashboard{}, fmt.Errorf("building dashboard: %w", err)
	}
	return out, nil
}

// Admin returns the dashboard "nacflow / Admin": every tenant's operations,
// phase durations, Velero's queue, schedules' recovery points, storage per
// tenant and location, and the controller's own state (capabilities,
// requester webhook, leader, reconcile errors).
func Admin() (dashboard.Dashboard, error) {
	d := newBoard("nacflow / Admin", "nacflow-admin",
		"nacflow across all tenants: operations, phases, Velero's queue, schedules' RPO, storage per tenant, and the controller (docs/metrics.md).")

	d.row("Operations")
	add(d, graph("Operations finished, by kind, action and result",
		"nacflow_operations_finished_total: operations (blueprint actions) that ended, per interval. result is complete or failed; kubectl describe on the object tells a failure's story.",
		"short", 12,
		query("A", `sum by (kind, action, result) (increase(nacflow_operations_finished_total[$__rate_interval]))`, "{{kind}} {{action}} {{result}}")))
	add(d, grid("Operations finished in the range, by kind, action and result",
		"nacflow_operations_finished_total over the dashboard's time range. 0: none in the range (counters start with the controller; only the leader counts).",
		"short", 12,
		column{"finished", `sum by (kind, action, result) (increase(nacflow_operations_finished_total[$__range]))`, ""}))
	add(d, graph("Operations in flight, by kind",
		"nacflow_active_operations: NAC objects whose plan is running, read from the cache at each scrape.",
		"short", 8,
		query("A", `max by (kind) (nacflow_active_operations)`, "{{kind}}")))
	add(d, grid("Operation duration over the range, p50 and p95",
		"nacflow_operation_duration_seconds: start to end of an operation, Velero included. NaN: no operation of that kind ended in the range.",
		"s", 16,
		column{"p50", `histogram_quantile(0.5, sum by (le, kind, action) (increase(nacflow_operation_duration_seconds_bucket[$__range])))`, ""},
		column{"p95", `histogram_quantile(0.95, sum by (le, kind, action) (increase(nacflow_operation_duration_seconds_bucket[$__range])))`, ""}))
	add(d, grid("Phase duration over the range, p50 and p95, by function",
		"nacflow_phase_duration_seconds: start to end of each phase, by phase function (docs/functions.md). WaitFor is Velero's work, WaitForTurn the wait for a place in Velero's queue. NaN: no such phase ended in the range.",
		"s", 24,
		column{"p50", `histogram_quantile(0.5, sum by (le, kind, func) (increase(nacflow_phase_duration_seconds_bucket[$__range])))`, ""},
		column{"p95", `histogram_quantile(0.95, sum by (le, kind, func) (increase(nacflow_phase_duration_seconds_bucket[$__range])))`, ""}))

	d.row("Tenants")
	add(d, grid("Tenants failing: backups and restores failed in a row (top 10)",
		"nacflow_tenant_failed_in_a_row: each namespace's backups (restores) that failed since its newest successful one, 0 once one succeeds (alerts NacflowTenantBackupFailed, NacflowTenantBackupsFailing, NacflowTenantRestoreFailed); and the time since that success (none: never succeeded among the objects kept). kubectl describe nab (nar) -n <namespace> names the failing phase.",
		"short", 16,
		column{"failed in a row", `topk(10, max by (namespace, kind) (nacflow_tenant_failed_in_a_row))`, ""},
		column{"since last success", `(time() - max by (namespace, kind) (nacflow_tenant_last_success_timestamp_seconds)) and on (namespace, kind) topk(10, max by (namespace, kind) (nacflow_tenant_failed_in_a_row))`, "s"}).
		SortBy(sortedDesc("failed in a row")))
	add(d, single("Tenants' storage locations, by state",
		"nacflow_tenant_locations: NonAdminBackupStorageLocations of every namespace by state. unavailable: Velero cannot reach the bucket; withdrawn: refused or withdrawn by nacflow (BackingOff); pending: not approved or checked yet. kubectl get nabsl -A.",
		"short", 8,
		query("A", `sum by (state) (max by (namespace, state) (nacflow_tenant_locations))`, "{{state}}")).
		OverrideByName("unavailable", redFromOne()).OverrideByName("withdrawn", redFromOne()))

	d.row("Velero's queue (fair share)")
	add(d, graph("Velero backup queue depth",
		"nacflow_velero_backup_queue_depth: unfinished Velero Backups in the OADP namespace, tenants' and the admin's.",
		"short", 8,
		query("A", `max(nacflow_velero_backup_queue_depth)`, "unfinished Velero Backups")))
	add(d, graph("Wait for a turn in Velero's queue, p50 and p95",
		"nacflow_phase_duration_seconds of WaitForTurn, the fair-share phase: how long operations waited for their namespace's turn (args.max unfinished Velero objects per namespace, namespaces round-robin). Over 6h windows: turns are rare events. Per namespace: the panels below.",
		"s", 16,
		query("A", `histogram_quantile(0.5, sum by (le, kind) (increase(nacflow_phase_duration_seconds_bucket{func="WaitForTurn"}[6h])))`, "{{kind}} p50"),
		query("B", `histogram_quantile(0.95, sum by (le, kind) (increase(nacflow_phase_duration_seconds_bucket{func="WaitForTurn"}[6h])))`, "{{kind}} p95")))
	add(d, graph("Longest wait for a turn, by namespace (top 10)",
		"nacflow_velero_queue_oldest_wait_seconds: how long each namespace's operation that has waited longest for its turn has waited so far; 0 when nothing of it waits (alert NacflowVeleroQueueWaitHigh: over an hour).",
		"s", 16,
		query("A", `topk(10, max by (namespace) (nacflow_velero_queue_oldest_wait_seconds) or 0 * max by (namespace) (nacflow_tenant_backups))`, "{{namespace}}")))
	add(d, grid("Waiting for a turn, by namespace",
		"nacflow_velero_queue_waiting and nacflow_velero_queue_oldest_wait_seconds: each namespace's operations (backups and restores) waiting for their turn in Velero's queue, and the longest wait; 0 for every other namespace that holds backups.",
		"short", 8,
		column{"waiting", `sum by (namespace) (max by (namespace, kind) (nacflow_velero_queue_waiting)) or 0 * max by (namespace) (nacflow_tenant_backups)`, ""},
		column{"longest wait", `max by (namespace) (nacflow_velero_queue_oldest_wait_seconds) or 0 * max by (namespace) (nacflow_tenant_backups)`, "s"}).
		SortBy(sortedDesc("longest wait")))

	d.row("Schedules and restore tests")
	add(d, grid("Schedules: time since the last successful run, and RPO",
		maybeEmpty+"a NonAdminSchedule has an RPO or a successful run. nacflow_schedule_last_success_timestamp_seconds and nacflow_schedule_rpo_seconds, per schedule. Past RPO 1: protection stopped, read the schedule's RPOMet condition.",
		"s", 16,
		column{"since last success", `time() - max by (namespace, name) (nacflow_schedule_last_success_timestamp_seconds)`, ""},
		column{"RPO", `max by (namespace, name) (nacflow_schedule_rpo_seconds)`, ""},
		column{"past RPO", `(time() - max by (namespace, name) (nacflow_schedule_last_success_timestamp_seconds)) > bool on (namespace, name) max by (namespace, name) (nacflow_schedule_rpo_seconds)`, "none"}))
	add(d, grid("Restore tests, by namespace",
		maybeEmpty+"a restore test ran (a Blueprint sets TestRestore's every). nacflow_restore_test_*: the newest test's RTO, whether it failed (1), and the time since the newest success.",
		"s", 8,
		column{"RTO", `max by (namespace) (nacflow_restore_test_rto_seconds)`, ""},
		column{"failing", `max by (namespace) (nacflow_restore_test_failing)`, "none"},
		column{"since last success", `time() - max by (namespace) (nacflow_restore_test_last_success_timestamp_seconds)`, ""}))

	d.row("Storage")
	add(d, graph("Backup bytes, by tenant and location",
		"nacflow_tenant_backup_bytes: what the backups a quota counts take in object storage (status.usage.totalBytes; 0 until measured). A namespace's quota covers all its locations.",
		"bytes", 8,
		query("A", `max by (namespace, location) (nacflow_tenant_backup_bytes)`, "{{namespace}} {{location}}")))
	add(d, graph("Backups held, by tenant and location",
		"nacflow_tenant_backups: NonAdminBackups that hold, or will hold, a backup in object storage (what maxBackups counts).",
		"short", 8,
		query("A", `max by (namespace, location) (nacflow_tenant_backups)`, "{{namespace}} {{location}}")))
	add(d, grid("Unverified backups, by tenant",
		"nacflow_backups_unverified: backups whose contents check found items that are not the tenant's (Verified=False), 0 for every other namespace that holds backups. Anything above 0 deserves a look.",
		"short", 8,
		column{"unverified", `max by (namespace) (nacflow_backups_unverified) or 0 * max by (namespace) (nacflow_tenant_backups)`, ""}))

	d.row("Controller")
	add(d, single("Capabilities",
		"nacflow_capability: 1 when the installed CRDs and RBAC give nacflow the capability (webhook: the requester webhook is served), 0 when it runs without it (docs/oadp.md). The lowest of the replicas.",
		"none", 12,
		query("A", `min by (capability) (nacflow_capability)`, "{{capability}}")).
		Mappings(words("no", "red", "yes", "green")).Thresholds(thresholds("red", step(1, "green"))))
	add(d, single("Reconciling replica",
		"1 for the replica that runs the controllers: leader_election_master_status with --leader-elect, else the replicas whose controllers started (controller_runtime_max_concurrent_reconciles).",
		"none", 6,
		query("A", `max by (instance) (leader_election_master_status) or max by (instance) (controller_runtime_max_concurrent_reconciles > bool 0)`, "{{instance}}")).
		Mappings(words("standby", "blue", "leader", "green")).Thresholds(thresholds("blue", step(1, "green"))))
	add(d, graph("Requester webhook requests, by code",
		"controller_runtime_webhook_requests_total of the requester webhook, which records who created each NonAdminRestore. Its failure policy is Fail: no answer, no NonAdminRestore.",
		"short", 6,
		query("A", `sum by (webhook, code) (increase(controller_runtime_webhook_requests_total[$__rate_interval]))`, "{{code}}")))
	add(d, graph("Reconcile errors, by controller",
		"controller_runtime_reconcile_errors_total: failed reconciles, retried with backoff. A steady rate means the API server or Velero is failing nacflow.",
		"short", 12,
		query("A", `sum by (controller) (increase(controller_runtime_reconcile_errors_total[$__rate_interval]))`, "{{controller}}")))
	add(d, graph("Reconciles, by controller and result",
		"controller_runtime_reconcile_total (success, error, requeue, requeue_after) and workqueue_depth: NAC objects waiting for a worker, all priority bands of a replica summed (the leader's: the followers' queues are empty).",
		"short", 12,
		query("A", `sum by (controller, result) (increase(controller_runtime_reconcile_total[$__rate_interval]))`, "{{controller}} {{result}}"),
		query("B", `max by (name) (sum by (name, instance) (workqueue_depth))`, "{{name}} waiting")))
	return d.build()
}

// ns is the tenant dashboard's label matcher.
const ns = `namespace="$` + namespaceVar + `"`

// namespaces is the query of the tenant dashboard's variable.
const namespaces = `label_values({__name__=~"nacflow_tenant_backups|nacflow_tenant_failed_in_a_row"}, namespace)`

// Tenant returns the dashboard "nacflow / Tenant": one namespace's storage,
// unverified backups, failures in a row, locations, place in Velero's
// queue, schedules and restore tests, chosen with the variable namespace.
// nacflow's operation and phase metrics carry no namespace label (their
// series would grow with every tenant), so a tenant's operations one by
// one are not here: kubectl nac backup describe tells them.
func Tenant() (dashboard.Dashboard, error) {
	d := newBoard("nacflow / Tenant", "nacflow-tenant",
		"One tenant namespace: its backups and their storage, unverified backups, failures in a row, storage locations, Velero's queue, schedules' RPO and restore tests (docs/metrics.md).")
	d.b.WithVariable(dashboard.NewQueryVariableBuilder(namespaceVar).Label("Namespace").Datasource(ds()).
		// Namespaces that hold a backup, or whose backups or restores
		// ended (every one of them failed, say): the tenants the other
		// panels have figures for.
		Query(dashboard.StringOrMap{String: cog.ToPtr(namespaces)}).
		Definition(namespaces).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc))

	d.row("Backups and storage")
	add(d, single("Backups held",
		"nacflow_tenant_backups: the namespace's NonAdminBackups that hold, or will hold, a backup in object storage, by location (what maxBackups counts).",
		"short", 8,
		query("A", `max by (location) (nacflow_tenant_backups{`+ns+`})`, "{{location}}")))
	add(d, single("Unverified backups",
		"nacflow_backups_unverified: backups whose contents check found items that are not the namespace's (Verified=False); kubectl describe nab names them.",
		"short", 4,
		query("A", `max(nacflow_backups_unverified{`+ns+`}) or 0 * max(nacflow_tenant_backups{`+ns+`})`, "unverified")).
		Thresholds(thresholds("green", step(1, "red"))))
	add(d, graph("Backup bytes, by location",
		"nacflow_tenant_backup_bytes: what the namespace's backups take in object storage (0 until measured); its quota covers all locations.",
		"bytes", 12,
		query("A", `max by (location) (nacflow_tenant_backup_bytes{`+ns+`})`, "{{location}}"),
		query("B", `sum(max by (location) (nacflow_tenant_backup_bytes{`+ns+`}))`, "all locations")))

	d.row("Failures, locations and Velero's queue")
	add(d, single("Failed in a row",
		"nacflow_tenant_failed_in_a_row: the namespace's backups (NonAdminBackup) and restores (NonAdminRestore) that failed since its newest successful one; 0 once one succeeds. kubectl describe nab (nar) names the failing phase.",
		"short", 6,
		query("A", `max by (kind) (nacflow_tenant_failed_in_a_row{`+ns+`})`, "{{kind}}")).
		Thresholds(thresholds("green", step(1, "orange"), step(3, "red"))))
	add(d, single("Since the last success",
		"nacflow_tenant_last_success_timestamp_seconds: the time since the namespace's newest successful backup (restore) ended. No value for a kind none of whose kept objects succeeded.",
		"s", 6,
		query("A", `time() - max by (kind) (nacflow_tenant_last_success_timestamp_seconds{`+ns+`})`, "{{kind}}")))
	add(d, single("Storage locations, by state",
		"nacflow_tenant_locations: the namespace's NonAdminBackupStorageLocations by state. unavailable: Velero cannot reach the bucket; withdrawn: refused or withdrawn by nacflow (BackingOff); pending: not approved or checked yet. No data when the namespace has none (its backups go to the OADP default location).",
		"short", 12,
		query("A", `max by (state) (nacflow_tenant_locations{`+ns+`})`, "{{state}}")).
		OverrideByName("unavailable", redFromOne()).OverrideByName("withdrawn", redFromOne()))
	add(d, graph("Waiting for a turn in Velero's queue",
		"nacflow_velero_queue_waiting: the namespace's backups and restores waiting for their turn (WaitForTurn: its share of Velero's queue is full); 0 when none waits.",
		"short", 12,
		query("A", `max by (kind) (nacflow_velero_queue_waiting{`+ns+`}) or 0 * max by (kind) (nacflow_tenant_failed_in_a_row{`+ns+`})`, "{{kind}}")))
	add(d, graph("Longest wait for a turn",
		"nacflow_velero_queue_oldest_wait_seconds: how long the namespace's operation that has waited longest for its turn has waited so far; 0 when none waits.",
		"s", 12,
		query("A", `max by (kind) (nacflow_velero_queue_oldest_wait_seconds{`+ns+`}) or 0 * max by (kind) (nacflow_tenant_failed_in_a_row{`+ns+`})`, "{{kind}}")))

	d.row("Schedules and restore tests")
	add(d, grid("Schedules: time since the last successful run, and RPO",
		maybeEmpty+"a NonAdminSchedule of the namespace has an RPO or a successful run. Past RPO 1: protection stopped, read the schedule's RPOMet condition.",
		"s", 12,
		column{"since last success", `time() - max by (name) (nacflow_schedule_last_success_timestamp_seconds{` + ns + `})`, ""},
		column{"RPO", `max by (name) (nacflow_schedule_rpo_seconds{` + ns + `})`, ""},
		column{"past RPO", `(time() - max by (name) (nacflow_schedule_last_success_timestamp_seconds{` + ns + `})) > bool on (name) max by (name) (nacflow_schedule_rpo_seconds{` + ns + `})`, "none"}))
	add(d, graph("Schedules: time since the last successful run",
		maybeEmpty+"a NonAdminSchedule of the namespace succeeded once. The dashed lines are the schedules' RPOs.",
		"s", 12,
		query("A", `time() - max by (name) (nacflow_schedule_last_success_timestamp_seconds{`+ns+`})`, "{{name}}"),
		query("B", `max by (name) (nacflow_schedule_rpo_seconds{`+ns+`})`, "{{name}} RPO")).
		OverrideByRegexp(".* RPO$", []dashboard.DynamicConfigValue{{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}}}))
	add(d, single("Newest restore test",
		maybeEmpty+"a restore test of the namespace ran (a Blueprint sets TestRestore's every). Its RTO (the Velero Restore's creation to completion), and the time since the newest successful one.",
		"s", 16,
		query("A", `max(nacflow_restore_test_rto_seconds{`+ns+`})`, "RTO"),
		query("B", `time() - max(nacflow_restore_test_last_success_timestamp_seconds{`+ns+`})`, "since last success")))
	add(d, single("Newest restore test failing",
		maybeEmpty+"a restore test of the namespace ran. 1: it did not succeed, read condition RestoreTested of the newest tested NonAdminBackup.",
		"none", 8,
		query("A", `max(nacflow_restore_test_failing{`+ns+`})`, "failing")).
		Mappings(words("no", "green", "yes", "red")).Thresholds(thresholds("green", step(1, "red"))))
	return d.build()
}
