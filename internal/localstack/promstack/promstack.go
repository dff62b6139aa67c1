// Package promstack runs a Prometheus server (bin/prometheus, which the
// Makefile builds from hack/prometheus) that scrapes nac's metrics endpoint
// and evaluates nacflow's alert rules, and reads its HTTP API. It is the one
// place the server's configuration is written: `make run MONITORING=1`
// (hack/localcp --monitoring) starts the server through it, and the
// monitoring end-to-end test (test/e2emonitoring) reads alerts and runs the
// dashboards' queries through it. The server is built without service
// discovery and without its web UI: static targets, and the HTTP API.
package promstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
)

// Job is the scrape job's name: the first of those the shipped rules' job
// matchers accept (nacflow, nacflow-metrics, <namespace>/nacflow-controller;
// docs/metrics.md#alerts), so that the rules on up and controller-runtime's
// metrics see this server's scrapes.
const Job = "nacflow"

// Binary is the server's file name in the assets directory (bin/).
const Binary = "prometheus"

// Config is what the server's configuration says.
type Config struct {
	// Target is nac's metrics endpoint, host:port (its
	// --metrics-bind-address, a wildcard host made 127.0.0.1).
	Target string
	// Secure: nac serves HTTPS behind its authentication and authorization
	// filter (--metrics-secure, its default), so each scrape carries the
	// bearer token read from TokenFile (Prometheus reads the file again at
	// every scrape: a token rewritten there is used from the next one), and
	// its self-signed certificate is not checked. Otherwise plain HTTP, no
	// token.
	Secure    bool
	TokenFile string
	// RuleFiles are the rule files to load, absolute paths (the repository's
	// config/monitoring/rules/nacflow.rules.yaml).
	RuleFiles []string
	// Interval is both the scrape and the rule evaluation interval; the
	// scrape timeout equals it (Prometheus refuses a longer one). 0: 1s.
	Interval time.Duration
}

// The configuration file's shape: only the fields Config sets, with
// Prometheus' own names.
type (
	promConfig struct {
		Global        promGlobal     `json:"global"`
		RuleFiles     []string       `json:"rule_files,omitempty"`
		ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	}
	promGlobal struct {
		ScrapeInterval     string `json:"scrape_interval"`
		ScrapeTimeout      string `json:"scrape_timeout"`
		EvaluationInterval string `json:"evaluation_interval"`
	}
	scrapeConfig struct {
		JobName       string         `json:"job_name"`
		Scheme        string         `json:"scheme"`
		HonorLabels   bool           `json:"honor_labels"`
		TLSConfig     *tlsConfig     `json:"tls_config,omitempty"`
		Authorization *authorization `json:"authorization,omitempty"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	tlsConfig struct {
		InsecureSkipVerify bool `json:"insecure_skip_verify"`
	}
	authorization struct {
		CredentialsFile string `json:"credentials_file"`
	}
	staticConfig struct {
		Targets []string `json:"targets"`
	}
)

// YAML returns c as a Prometheus configuration file: global scrape and
// evaluation intervals, c's rule files, and one scrape job named Job of
// c.Target — honor_labels on, as docs/metrics.md asks of every job that
// scrapes nacflow (its series carry the tenant in their own namespace
// label). Errors: an empty Target, or Secure without a TokenFile.
func (c Config) YAML() ([]byte, error) {
	if c.Target == "" {
		return nil, errors.New("promstack: no scrape target")
	}
	interval := c.Interval
	if interval <= 0 {
		interval = time.Second
	}
	job := scrapeConfig{JobName: Job, Scheme: "http", HonorLabels: true, StaticConfigs: []staticConfig{{Targets: []string{c.Target}}}}
	if c.Secure {
		if c.TokenFile == "" {
			return nil, errors.New("promstack: a secure target needs a token file")
		}
		job.Scheme = "https"
		// nac's certificate is self-signed unless --metrics-cert-dir gives
		// one (docs/metrics.md).
		job.TLSConfig = &tlsConfig{InsecureSkipVerify: true}
		job.Authorization = &authorization{CredentialsFile: c.TokenFile}
	}
	d := promDuration(interval)
	return yaml.Marshal(promConfig{
		Global:        promGlobal{ScrapeInterval: d, ScrapeTimeout: d, EvaluationInterval: d},
		RuleFiles:     c.RuleFiles,
		ScrapeConfigs: []scrapeConfig{job},
	})
}

// promDuration writes d in Prometheus' duration syntax, whole milliseconds
// ("1500ms", "5s"): Go's "1m0s" is not one.
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// Server is a running Prometheus server.
type Server struct {
	// URL is the server's base URL, http://HOST:PORT (no trailing slash).
	URL string
	// Dir holds prometheus.yml and the TSDB (data/).
	Dir  string
	proc *childproc.Process
	http *http.Client
}

// Start writes cfg to dir/prometheus.yml (dir is created) and runs binary
// on it, its TSDB in dir/data (kept across runs on the same dir), listening
// on addr (host:port; port 0 picks a free one), its output appended to
// logPath, in a process group of its own that dies with the caller
// (childproc). It returns once /-/ready answers 200: the configuration
// and the rules are loaded. Errors: cfg's, files that cannot be written,
// the server failing to start, exiting first (with the last lines of its
// log), not ready within timeout (then it is stopped), or ctx ending
// (stopped too; ctx's cause).
func Start(ctx context.Context, binary, dir, addr, logPath string, cfg Config, timeout time.Duration) (*Server, error) {
	conf, err := cfg.YAML()
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("promstack: listen address %q: %w", addr, err)
	}
	if port == "0" {
		// Prometheus does not tell which port the kernel picked: take one
		// that is free now.
		p, err := childproc.FreePort()
		if err != nil {
			return nil, err
		}
		port = strconv.Itoa(p)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	addr = net.JoinHostPort(host, port)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		return nil, err
	}
	p, err := childproc.Start("prometheus", logPath, nil, binary,
		"--config.file="+confPath, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	if err != nil {
		return nil, fmt.Errorf("starting prometheus (%s): %w", binary, err)
	}
	s := &Server{URL: "http://" + addr, Dir: dir, proc: p, http: &http.Client{Timeout: 10 * time.Second}}
	if err := s.waitReady(ctx, timeout); err != nil {
		s.Stop(time.Second)
		return nil, err
	}
	return s, nil
}

// waitReady polls /-/ready every 200 ms until it answers 200. Errors: the
// server exited (with its log's tail), timeout, ctx's cause.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err, done := s.proc.Exited(); done {
			return fmt.Errorf("prometheus exited before it was ready: %v; the end of %s:\n%s", err, s.proc.LogPath(), tail(s.proc.LogPath(), 10))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		if resp, err := s.http.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus was not ready at %s/-/ready within %s (log: %s)", s.URL, timeout, s.proc.LogPath())
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of the file at path ("" when unreadable).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Client returns a Server that only reads the HTTP API of the server at
// url (http://HOST:PORT, as Start's URL; one another process started):
// Stop does nothing, Exited says it runs, LogPath is "".
func Client(url string) *Server {
	return &Server{URL: strings.TrimSuffix(url, "/"), http: &http.Client{Timeout: 10 * time.Second}}
}

// Stop sends the server SIGTERM and, after grace, SIGKILL; killed reports
// the latter. A nil s, or a Client, is a no-op.
func (s *Server) Stop(grace time.Duration) (killed bool) {
	if s == nil || s.proc == nil {
		return false
	}
	return s.proc.Stop(grace)
}

// Exited returns the server's exit error and true once it has exited
// (a Client's: nil, false).
func (s *Server) Exited() (error, bool) {
	if s.proc == nil {
		return nil, false
	}
	return s.proc.Exited()
}

// LogPath returns the file the server's output is appended to ("" for a
// Client).
func (s *Server) LogPath() string {
	if s.proc == nil {
		return ""
	}
	return s.proc.LogPath()
}

// Get calls the HTTP API: GET s.URL+path with params, and returns the
// answer's data field and the whole answer as it came. Errors: the HTTP
// client's, and an answer whose status is not "success" (its errorType and
// error, with the HTTP status).
func (s *Server) Get(ctx context.Context, path string, params url.Values) (data json.RawMessage, body []byte, err error) {
	u := s.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var answer struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, body, fmt.Errorf("GET %s: %s, not the API's JSON: %w", path, resp.Status, err)
	}
	if answer.Status != "success" {
		return nil, body, fmt.Errorf("GET %s: %s: %s: %s", path, resp.Status, answer.ErrorType, answer.Error)
	}
	return answer.Data, body, nil
}

// Target is a scrape target of /api/v1/targets.
type Target struct {
	Labels     map[string]string `json:"labels"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"` // up, down or unknown (not scraped yet)
	LastError  string            `json:"lastError"`
	LastScrape time.Time         `json:"lastScrape"`
}

// Targets returns the active scrape targets, and the API's answer.
// Errors: Get's.
func (s *Server) Targets(ctx context.Context) ([]Target, []byte, error) {
	data, body, err := s.Get(ctx, "/api/v1/targets", url.Values{"state": {"active"}})
	if err != nil {
		return nil, body, err
	}
	var t struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, body, fmt.Errorf("/api/v1/targets: %w", err)
	}
	return t.ActiveTargets, body, nil
}

// Alert is an alert of /api/v1/alerts: pending or firing (resolved alerts
// are not listed).
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
	ActiveAt    *time.Time        `json:"activeAt"`
	Value       string            `json:"value"`
}

// Alerts returns the active alerts, and the API's answer. Errors: Get's.
func (s *Server) Alerts(ctx context.Context) ([]Alert, []byte, error) {
	data, body, err := s.Get(ctx, "/api/v1/alerts", nil)
	if err != nil {
		return nil, body, err
	}
	var a struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, body, fmt.Errorf("/api/v1/alerts: %w", err)
	}
	return a.Alerts, body, nil
}

// AlertRules returns the names of the alerting rules the server loaded
// (/api/v1/rules?type=alert), by group. Errors: Get's.
func (s *Server) AlertRules(ctx context.Context) (map[string][]string, error) {
	data, _, err := s.Get(ctx, "/api/v1/rules", url.Values{"type": {"alert"}})
	if err != nil {
		return nil, err
	}
	var r struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name string `json:"name"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("/api/v1/rules: %w", err)
	}
	out := map[string][]string{}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			out[g.Name] = append(out[g.Name], rule.Name)
		}
	}
	return out, nil
}

// Sample is one element of an instant query's result: a series' labels and
// its value as Prometheus writes it ("1", "NaN", "+Inf").
type Sample struct {
	Metric map[string]string
	Value  string
}

// Query evaluates expr now (/api/v1/query) and returns its result — a
// vector's samples, or a scalar's one sample without labels — and the
// API's answer. Errors: Get's (a query Prometheus refuses among them), and
// a result of another type (a matrix, a string).
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, []byte, error) {
	data, body, err := s.Get(ctx, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, body, err
	}
	var q struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &q); err != nil {
		return nil, body, fmt.Errorf("/api/v1/query: %w", err)
	}
	// A value is [unix time, "value"].
	value := func(raw json.RawMessage) (string, error) {
		var v [2]json.RawMessage
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", err
		}
		var s string
		err := json.Unmarshal(v[1], &s)
		return s, err
	}
	switch q.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  json.RawMessage   `json:"value"`
		}
		if err := json.Unmarshal(q.Result, &vec); err != nil {
			return nil, body, fmt.Errorf("/api/v1/query: %w", err)
		}
		out := make([]Sample, 0, len(vec))
		for _, e := range vec {
			v, err := value(e.Value)
			if err != nil {
				return nil, body, fmt.Errorf("/api/v1/query: %w", err)
			}
			out = append(out, Sample{Metric: e.Metric, Value: v})
		}
		return out, body, nil
	case "scalar":
		v, err := value(q.Result)
		if err != nil {
			return nil, body, fmt.Errorf("/api/v1/query: %w", err)
		}
		return []Sample{{Value: v}}, body, nil
	}
	return nil, body, fmt.Errorf("/api/v1/query %q: a %s result, not a vector or scalar", expr, q.ResultType)
}

// Compact returns the JSON answer b on one line (b as it is when it is not
// JSON), for logs.
func Compact(b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return string(b)
	}
	return out.String()
}
