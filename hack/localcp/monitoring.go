package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nacflow/nacflow/internal/localstack/promstack"
)

// prometheusGrace is how long --monitoring's Prometheus may take to exit
// after SIGTERM (it closes its TSDB; a local one holds little): a stop
// takes up to this much longer with --monitoring.
const prometheusGrace = 2 * time.Second

// tokenLifetime is how long each token localcp mints for the scraper lives.
// A new one is written every third of it: Prometheus reads the token file at
// every scrape, so a make run of days keeps scraping.
const tokenLifetime = time.Hour

// monitoring is what --monitoring starts, its inputs checked before
// anything else starts.
type monitoring struct {
	binary   string // the Prometheus server, absolute
	addr     string // --monitoring-address
	dir      string // DIR/prometheus: prometheus.yml, token, data/
	logPath  string // DIR/prometheus.log
	config   promstack.Config
	interval time.Duration
}

// planMonitoring checks --monitoring's inputs: a controller command whose
// metrics are served (--metrics-bind-address not "0"), the scraper's role
// installed when they are served over HTTPS (the default), the Prometheus
// server in assets, the rules file, and a fixed --monitoring-address free
// now. It returns what startMonitoring starts. Errors name the flag or the
// make target that fixes them.
func planMonitoring(o options, controllerArgs []string, assets string) (*monitoring, error) {
	if len(o.command) == 0 {
		return nil, errors.New("--monitoring scrapes the controller localcp runs: give its command after --")
	}
	target, ok := metricsTarget(controllerArgs)
	if !ok {
		return nil, errors.New("--monitoring: the controller serves no metrics (--metrics-bind-address 0)")
	}
	secure := metricsSecure(controllerArgs)
	if secure && o.metricsRole == "" {
		return nil, errors.New("--monitoring scrapes over HTTPS with a token of the metrics reader: --metrics-reader-role must not be empty (or give the controller --metrics-secure=false)")
	}
	binary := filepath.Join(assets, promstack.Binary)
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("--monitoring needs the Prometheus server %s: build it with make bin/prometheus (make run MONITORING=1 does)", binary)
	}
	rules, err := filepath.Abs(o.monitoringRules)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(rules); err != nil {
		return nil, fmt.Errorf("--monitoring-rules: %w", err)
	}
	if _, fixed := fixedPort(o.monitoringAddr); fixed {
		if err := checkFree(boundAddr{addr: o.monitoringAddr, what: "Prometheus' --monitoring-address"}); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(filepath.Join(o.dir, "prometheus"))
	if err != nil {
		return nil, err
	}
	m := &monitoring{binary: binary, addr: o.monitoringAddr, dir: dir, logPath: filepath.Join(o.dir, "prometheus.log"), interval: o.monitoringInterval,
		config: promstack.Config{Target: target, Secure: secure, RuleFiles: []string{rules}, Interval: o.monitoringInterval}}
	if secure {
		m.config.TokenFile = filepath.Join(dir, "token")
	}
	return m, nil
}

// startMonitoring writes a token of ServiceAccount scraperSA of ns (bound
// to the metrics reader role by then) to the token file and renews it every
// tokenLifetime/3 until ctx ends, then starts the Prometheus server of m
// and waits until it is ready (a minute at most). It returns the server
// and the ready message's lines about it. Errors: the TokenRequest's and
// promstack.Start's.
func startMonitoring(ctx context.Context, cfg *rest.Config, m *monitoring, ns string) (*promstack.Server, string, error) {
	if m.config.Secure {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, "", err
		}
		if err := writeScraperToken(ctx, cs, ns, m.config.TokenFile); err != nil {
			return nil, "", err
		}
		go func() {
			t := time.NewTicker(tokenLifetime / 3)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if err := writeScraperToken(ctx, cs, ns, m.config.TokenFile); err != nil && ctx.Err() == nil {
					fmt.Printf("   prometheus: renewing the scraper's token (retried in %s): %v\n", tokenLifetime/3, err)
				}
			}
		}()
	}
	srv, err := promstack.Start(ctx, m.binary, m.dir, m.addr, m.logPath, m.config, time.Minute)
	if err != nil {
		return nil, "", err
	}
	how := "plain HTTP"
	if m.config.Secure {
		how = "HTTPS with a token of " + ns + "/" + scraperSA
	}
	lines := fmt.Sprintf(`   Prometheus:        %s — scrapes the controller at %s every %s (job %s, %s) and evaluates %s;
                      HTTP API only (no web UI): curl -s %s/api/v1/alerts, %s/api/v1/query?query=up; log %s
`, srv.URL, m.config.Target, m.interval, promstack.Job, how, displayPath(m.config.RuleFiles[0]), srv.URL, srv.URL, displayPath(m.logPath))
	return srv, lines, nil
}

// writeScraperToken writes a new token of ServiceAccount scraperSA of ns,
// valid for tokenLifetime (a TokenRequest), to path (mode 0600), replacing
// the file at once so that a scrape never reads half of one. Errors: the
// API server's and the file system's.
func writeScraperToken(ctx context.Context, cs kubernetes.Interface, ns, path string) error {
	seconds := int64(tokenLifetime / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, scraperSA,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", ns, scraperSA, err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
