// Package e2emonitoring runs nacflow's monitoring end to end with a real
// Prometheus server: the make-run stack (e2estack: control plane, object
// store, real Velero, nac with its HTTPS metrics endpoint and requester
// webhook) started by localcp with --monitoring, as `make run MONITORING=1`
// starts it, so that bin/prometheus scrapes nac every second as job nacflow
// with a token of ServiceAccount openshift-adp/metrics-scraper (bound to
// ClusterRole nacflow-metrics-reader) and evaluates the shipped alert rules,
// config/monitoring/rules/nacflow.rules.yaml as they are. A tenant's backup
// that Velero fails fires NacflowTenantBackupFailed for its namespace, a
// good one resolves it, and once a restore, a restore test and a
// NonAdminSchedule's run happened, every query of every panel of both
// Grafana dashboards (config/monitoring/dashboards) returns data. It is its
// own package, on a stack of its own, beside the other end-to-end packages
// (make test), or alone (make test-monitoring).
package e2emonitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/localstack/promstack"
	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

// MonitoringSuite runs one make-run stack with its Prometheus server.
type MonitoringSuite struct {
	st      *e2estack.Stack
	bin     string            // nac, kubectl-nac, localcp and the plugin, built for the suite
	prom    *promstack.Server // a client of the server localcp started
	started time.Time         // when the suite began: the dashboards' $__range reaches back to it
}

var _ = Suite(&MonitoringSuite{})

// The tenant whose backups fail and succeed, and the alert its failure
// fires (no for: it fires at the first evaluation that sees the failure).
const (
	tenant      = "mon-a"
	failedAlert = "NacflowTenantBackupFailed"
)

func (s *MonitoringSuite) SetUpSuite(c *C) {
	s.started = time.Now()
	root := e2estack.RepoRoot(c)
	server := filepath.Join(e2estack.Assets(root), promstack.Binary)
	if _, err := os.Stat(server); err != nil {
		c.Fatalf("no Prometheus server at %s: build it with make bin/prometheus (make test-monitoring and make test-build do)", server)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for nac's metrics endpoint
	c.Assert(err, IsNil)
	addr := l.Addr().String()
	c.Assert(l.Close(), IsNil)
	s.bin = e2estack.BuildBinaries(c, root)
	dir := c.MkDir()
	// The requester webhook is served, so that the admin dashboard's
	// webhook panel has requests to show (each NonAdminRestore's).
	webhookLocalcp, webhookNac := e2estack.RequesterWebhook(c, dir)
	s.st = e2estack.Start(c, root, s.bin, dir,
		append(webhookLocalcp, "--monitoring", "--monitoring-address", "127.0.0.1:0", "--monitoring-interval", "1s"),
		append([]string{"--metrics-bind-address", addr, "--health-probe-bind-address", "0"}, webhookNac...))
	m := regexp.MustCompile(`Prometheus:\s+(http://\S+)`).FindStringSubmatch(s.st.Drain())
	c.Assert(m, NotNil, Commentf("localcp --monitoring printed no Prometheus URL:\n%s", s.st.Drain()))
	s.prom = promstack.Client(m[1])
	conf, err := os.ReadFile(filepath.Join(dir, "prometheus", "prometheus.yml"))
	c.Assert(err, IsNil)
	c.Logf("Prometheus at %s, configuration:\n%s", s.prom.URL, conf)
}

func (s *MonitoringSuite) TearDownSuite(c *C) {
	if s.st != nil {
		s.st.Interrupt(c)
	}
}

// api bounds each call of Prometheus' API.
func api() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 15*time.Second)
}

// waitTargetUp waits until Prometheus scraped nac successfully: its one
// target of job nacflow is up (the scrape carried the token, nac's
// TokenReview and SubjectAccessReview passed).
func (s *MonitoringSuite) waitTargetUp(c *C) {
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		ctx, cancel := api()
		defer cancel()
		targets, body, err := s.prom.Targets(ctx)
		if err != nil {
			return false, fmt.Sprintf("Prometheus' targets: %v %s", err, body)
		}
		for _, t := range targets {
			if t.Labels["job"] == promstack.Job && t.Health == "up" {
				c.Logf("target %s of job %s is up (last scrape %s)", t.ScrapeURL, promstack.Job, t.LastScrape.Format(time.RFC3339))
				return true, ""
			}
		}
		return false, "no target of job " + promstack.Job + " is up: " + promstack.Compact(body)
	})
}

// tenantAlert returns the state of alert failedAlert for the tenant's
// namespace in /api/v1/alerts ("" when it is not there: inactive or
// resolved), and the API's answer.
func (s *MonitoringSuite) tenantAlert() (state string, answer []byte, err error) {
	ctx, cancel := api()
	defer cancel()
	alerts, body, err := s.prom.Alerts(ctx)
	if err != nil {
		return "", body, err
	}
	for _, a := range alerts {
		if a.Labels["alertname"] == failedAlert && a.Labels["namespace"] == tenant {
			return a.State, body, nil
		}
	}
	return "", body, nil
}

// jsonpath returns kubectl's jsonpath output of object (TYPE/NAME or TYPE
// NAME fields) of the tenant's namespace, or the error's output.
func (s *MonitoringSuite) jsonpath(object []string, path string) string {
	out, _ := s.st.Run("", append(append([]string{"get", "-n", tenant}, object...), "-o", "jsonpath="+path)...)
	return out
}

// TestAlertAndDashboards: the Prometheus server of localcp --monitoring
// scrapes nac (target up); a NonAdminBackup that Velero refuses
// (FailedValidation: a labelSelector and orLabelSelectors together, which
// nacflow passes on and Velero forbids) fires NacflowTenantBackupFailed
// for its namespace, and a good backup of the same namespace resolves it;
// then a NonAdminRestore of the good backup, the good backup's restore test
// (the namespace opted in as docs/admin-guide.md#restore-tests says) and a
// NonAdminSchedule with an RPO whose first run succeeds give every panel
// of both dashboards something to show: every query of every panel, the
// dashboards' variables and Grafana's macros filled in, returns data.
func (s *MonitoringSuite) TestAlertAndDashboards(c *C) {
	start := time.Now()
	step := func(format string, args ...any) {
		c.Logf("[%5.1fs] %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	s.waitTargetUp(c)
	ctx, cancel := api()
	groups, err := s.prom.AlertRules(ctx)
	cancel()
	c.Assert(err, IsNil)
	loaded, found := 0, false
	for _, names := range groups {
		loaded += len(names)
		found = found || slices.Contains(names, failedAlert)
	}
	c.Assert(found, Equals, true, Commentf("Prometheus loaded no alerting rule %s from config/monitoring/rules/nacflow.rules.yaml: %v", failedAlert, groups))
	step("target up; %d alerting rules loaded", loaded)

	// The tenant: opted in to restore tests (the shipped example Blueprint
	// and its label), a ConfigMap to back up, and a location of its own in
	// the store's tenants bucket (the location panels count locations by
	// state).
	s.st.Kubectl(c, "apply", "-f", "examples/blueprints/nonadminbackup-restore-tests.yaml")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out, _ := s.st.Run("", "get", "blueprint", "-n", "openshift-adp", "restore-tests", "-o", `jsonpath={.status.conditions[?(@.type=="Valid")].status}`)
		return out == "True", "Blueprint restore-tests Valid: " + out
	})
	s.st.Kubectl(c, "create", "namespace", tenant)
	s.st.Kubectl(c, "label", "namespace", tenant, "nacflow.io/restore-tests=on")
	s.st.Kubectl(c, "create", "configmap", "-n", tenant, "app-config", "--from-literal=greeting=hello")
	s.st.Kubectl(c, "create", "secret", "generic", "-n", tenant, "creds",
		"--from-literal=cloud=[default]\naws_access_key_id="+tenant+"\naws_secret_access_key="+tenant+"-secret\n")
	s3 := s.st.Kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", "default", "-o", "jsonpath={.spec.config.s3Url}")
	s.st.KubectlIn(c, fmt.Sprintf(`apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackupStorageLocation
metadata: {name: own, namespace: %s}
spec:
  backupStorageLocationSpec:
    provider: aws
    objectStorage: {bucket: tenants, prefix: %s}
    config: {region: us-east-1, s3ForcePathStyle: "true", s3Url: %q}
    credential: {name: creds, key: cloud}
`, tenant, tenant, s3), "apply", "-f", "-")

	// 1. A backup Velero fails: the alert fires for the namespace.
	s.st.KubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackup
metadata: {name: broken, namespace: `+tenant+`}
spec:
  backupSpec:
    labelSelector: {matchLabels: {app: a}}
    orLabelSelectors: [{matchLabels: {app: b}}]
`, "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.jsonpath([]string{"nab", "broken"}, "{.status.veleroBackup.status.phase}|{.status.plan.state}")
		return out == "FailedValidation|failed" || out == "FailedValidation|complete", "NAB broken: Velero phase|plan state: " + out
	})
	step("NAB %s/broken: Velero FailedValidation", tenant)
	var answer []byte
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		state, body, err := s.tenantAlert()
		answer = body
		return err == nil && state == "firing", fmt.Sprintf("alert %s{namespace=%q} is %q, not firing (%v): %s", failedAlert, tenant, state, err, promstack.Compact(body))
	})
	step("%s firing for %s; GET /api/v1/alerts answered:\n%s", failedAlert, tenant, promstack.Compact(answer))

	// 2. A schedule with an RPO (its first run comes at the next minute
	// boundary and Velero's next check of its schedules, up to two minutes:
	// made now so that it runs while the rest does), and a good backup of
	// the same namespace: the alert resolves.
	s.st.KubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminSchedule
metadata: {name: every-minute, namespace: `+tenant+`}
spec:
  schedule: "*/1 * * * *"
  rpo: 1h
  template:
    backupSpec: {ttl: 1h0m0s}
`, "apply", "-f", "-")
	s.st.KubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: good, namespace: "+tenant+"}\nspec:\n  backupSpec: {}\n",
		"apply", "-f", "-")
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.jsonpath([]string{"nab", "good"}, "{.status.veleroBackup.status.phase}|{.status.plan.state}|{.status.restoreTest.result}")
		return out == "Completed|complete|Succeeded", "NAB good: Velero phase|plan state|restore test: " + out
	})
	step("NAB %s/good: Completed, its restore test Succeeded", tenant)
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		state, body, err := s.tenantAlert()
		answer = body
		return err == nil && state == "", fmt.Sprintf("alert %s{namespace=%q} is still %q (%v): %s", failedAlert, tenant, state, err, promstack.Compact(body))
	})
	step("%s resolved for %s; GET /api/v1/alerts answered:\n%s", failedAlert, tenant, promstack.Compact(answer))

	// 3. A restore of the good backup, the ConfigMap deleted first.
	s.st.Kubectl(c, "delete", "configmap", "-n", tenant, "app-config")
	s.st.KubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: back, namespace: "+tenant+"}\nspec:\n  restoreSpec: {backupName: good}\n",
		"apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.jsonpath([]string{"nar", "back"}, "{.status.veleroRestore.status.phase}|{.status.plan.state}")
		return out == "Completed|complete", "NAR back: Velero phase|plan state: " + out
	})
	c.Check(s.jsonpath([]string{"configmap", "app-config"}, "{.data.greeting}"), Equals, "hello")
	step("NAR %s/back: Completed", tenant)

	// 4. The schedule's first run succeeded.
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.jsonpath([]string{"nas", "every-minute"}, "{.status.rpo}|{.status.lastSuccessfulBackup}")
		rpo, last, _ := strings.Cut(out, "|")
		return rpo != "" && last != "", "NAS every-minute: rpo|lastSuccessfulBackup: " + out
	})
	step("NAS %s/every-minute: a run succeeded", tenant)

	// 5. Every panel's queries have data.
	dashboards := []string{"config/monitoring/dashboards/nacflow-admin.json", "config/monitoring/dashboards/nacflow-tenant.json"}
	var report []string
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		var empty []string
		report = nil
		for _, path := range dashboards {
			d := readDashboard(c, filepath.Join(s.st.Root, path))
			for _, v := range d.variables() {
				if v.name != "namespace" {
					continue
				}
				// The variable offers the tenant: its label_values, as
				// the PromQL Grafana runs for it.
				q, ok := labelValuesQuery(v.query)
				c.Assert(ok, Equals, true, Commentf("%s: variable namespace: %q is not label_values(SELECTOR, LABEL)", path, v.query))
				samples, body, err := s.query(q)
				if err != nil || !hasLabel(samples, "namespace", tenant) {
					empty = append(empty, fmt.Sprintf("%s: variable namespace does not offer %s: %s → %v %s", d.Title, tenant, q, err, promstack.Compact(body)))
				}
			}
			for _, p := range d.panelTargets() {
				expr := s.expand(p.expr)
				samples, body, err := s.query(expr)
				name := fmt.Sprintf("%s / %q (%s)", d.Title, p.title, p.refID)
				switch {
				case err != nil:
					empty = append(empty, fmt.Sprintf("%s: %s → %v %s", name, expr, err, promstack.Compact(body)))
				case len(samples) == 0:
					empty = append(empty, fmt.Sprintf("%s: no data: %s", name, expr))
				default:
					report = append(report, fmt.Sprintf("%s: %d series, e.g. %v = %s", name, len(samples), samples[0].Metric, samples[0].Value))
				}
			}
		}
		return len(empty) == 0, fmt.Sprintf("%d panel queries without data:\n  %s", len(empty), strings.Join(empty, "\n  "))
	})
	step("every panel query of both dashboards has data:\n  %s", strings.Join(report, "\n  "))
}

// query runs expr as an instant query.
func (s *MonitoringSuite) query(expr string) ([]promstack.Sample, []byte, error) {
	ctx, cancel := api()
	defer cancel()
	return s.prom.Query(ctx, expr)
}

// expand fills in what Grafana fills in before it sends a panel's query:
// the dashboard variable $namespace (the tenant) and Grafana's macros —
// $__range as the time since the suite began, in whole minutes rounded up
// (every operation of the test falls in it), $__rate_interval as 1m (four
// scrape intervals is Grafana's floor; the server scrapes every second),
// $__interval as 15s.
func (s *MonitoringSuite) expand(expr string) string {
	minutes := int(math.Ceil(time.Since(s.started).Minutes()))
	return strings.NewReplacer(
		"${namespace}", tenant, "[[namespace]]", tenant, "$namespace", tenant,
		"$__rate_interval", "1m",
		"$__range_s", fmt.Sprint(minutes*60), "$__range_ms", fmt.Sprint(minutes*60000), "$__range", fmt.Sprintf("%dm", minutes),
		"$__interval_ms", "15000", "$__interval", "15s",
	).Replace(expr)
}

// hasLabel reports whether a sample has label name = value.
func hasLabel(samples []promstack.Sample, name, value string) bool {
	for _, s := range samples {
		if s.Metric[name] == value {
			return true
		}
	}
	return false
}

// labelValuesQuery turns a Grafana variable query label_values(SELECTOR,
// LABEL) into the PromQL that lists those values, count by (LABEL)
// (SELECTOR); ok is false for another shape.
func labelValuesQuery(q string) (promql string, ok bool) {
	m := regexp.MustCompile(`^\s*label_values\((.+),\s*(\w+)\s*\)\s*$`).FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	return fmt.Sprintf("count by (%s) (%s)", m[2], m[1]), true
}

// dashboard is the part of a Grafana dashboard's JSON the test reads.
type dashboard struct {
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"` // a string, or {query: string} in newer Grafana
		} `json:"list"`
	} `json:"templating"`
}

// panel is a panel, or a row holding panels (a collapsed row keeps its
// panels in its own panels).
type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
		Hide  bool   `json:"hide"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// readDashboard reads the dashboard at path; the test fails when it is not
// one.
func readDashboard(c *C, path string) dashboard {
	b, err := os.ReadFile(path)
	c.Assert(err, IsNil)
	var d dashboard
	c.Assert(json.Unmarshal(b, &d), IsNil, Commentf("%s", path))
	c.Assert(d.Panels, Not(HasLen), 0, Commentf("%s has no panels", path))
	return d
}

// variable is a dashboard variable of type query.
type variable struct{ name, query string }

// variables returns d's query variables.
func (d dashboard) variables() []variable {
	var out []variable
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct {
				Query string `json:"query"`
			}
			_ = json.Unmarshal(v.Query, &obj)
			q = obj.Query
		}
		out = append(out, variable{v.Name, q})
	}
	return out
}

// panelTarget is one query of a panel.
type panelTarget struct{ title, refID, expr string }

// panelTargets returns every query of d's panels in the dashboard's order,
// rows' nested panels included, hidden ones left out.
func (d dashboard) panelTargets() []panelTarget {
	var out []panelTarget
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if !t.Hide && strings.TrimSpace(t.Expr) != "" {
					out = append(out, panelTarget{p.Title, t.RefID, t.Expr})
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}
