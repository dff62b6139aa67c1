package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

type FlagsSuite struct{}

var _ = Suite(&FlagsSuite{})

// Every flag nac registers (and --kubeconfig, which controller-runtime
// registers) has a row in docs/configuration.md, and the doc names no flag
// that does not exist.
func (s *FlagsSuite) TestEveryFlagIsDocumented(c *C) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	c.Assert(err, IsNil)
	fs := flag.NewFlagSet("nac", flag.ContinueOnError)
	registerFlags(fs, &options{})
	names := map[string]bool{"kubeconfig": true}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	for name := range names {
		c.Check(strings.Contains(string(doc), "| `--"+name+"`"), Equals, true, Commentf("--%s is not in docs/configuration.md", name))
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `--"); ok {
			name, _, _ := strings.Cut(rest, "`")
			c.Check(names[name], Equals, true, Commentf("docs/configuration.md documents --%s, which nac does not have", name))
		}
	}
}

// docDefaults returns docs/configuration.md's Default column by flag name,
// backticks removed.
func docDefaults(c *C) map[string]string {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	c.Assert(err, IsNil)
	out := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		rest, ok := strings.CutPrefix(line, "| `--")
		if !ok {
			continue
		}
		cells := strings.Split(rest, " | ")
		c.Assert(len(cells) >= 3, Equals, true, Commentf("row %q", line))
		name, _, _ := strings.Cut(cells[0], "`")
		out[name] = strings.ReplaceAll(strings.TrimSpace(cells[1]), "`", "")
	}
	return out
}

// Every default docs/configuration.md gives is the binary's: the flag's
// DefValue, read as a duration when it is one ("10m" is "10m0s"); "none"
// and "empty" stand for "". The exceptions are defaults nac or
// controller-runtime apply when the flag is left empty; each is checked
// where it is applied (zap's in TestDocumentedLogDefaults).
func (s *FlagsSuite) TestDocumentedDefaultsAreTheBinarys(c *C) {
	exceptions := map[string]string{
		"oadp-namespace":       "$WATCH_NAMESPACE",             // main reads the env when the flag is empty
		"kubeconfig":           "$KUBECONFIG, then in-cluster", // controller-runtime's, not in registerFlags
		"zap-encoder":          "json",
		"zap-log-level":        "info",
		"zap-stacktrace-level": "error",
		"zap-time-encoding":    "rfc3339",
	}
	docs := docDefaults(c)
	fs := flag.NewFlagSet("nac", flag.ContinueOnError)
	registerFlags(fs, &options{})
	checked := 0
	fs.VisitAll(func(f *flag.Flag) {
		doc, ok := docs[f.Name]
		if !ok {
			return // TestEveryFlagIsDocumented says so
		}
		if want, ok := exceptions[f.Name]; ok {
			c.Check(f.DefValue, Equals, "", Commentf("--%s now has a default of its own: drop its exception", f.Name))
			c.Check(doc, Equals, want, Commentf("--%s", f.Name))
			return
		}
		checked++
		switch {
		case doc == "none" || strings.HasPrefix(doc, "empty"):
			c.Check(f.DefValue, Equals, "", Commentf("--%s is documented %q", f.Name, doc))
		default:
			if d, err := time.ParseDuration(f.DefValue); err == nil && f.DefValue != "0" {
				dd, err := time.ParseDuration(doc)
				c.Check(err, IsNil, Commentf("--%s is documented %q, not a duration", f.Name, doc))
				c.Check(dd, Equals, d, Commentf("--%s is documented %q, the binary's default is %s", f.Name, doc, f.DefValue))
				return
			}
			c.Check(doc, Equals, f.DefValue, Commentf("--%s", f.Name))
		}
	})
	c.Check(docs["oadp-namespace"], Equals, exceptions["oadp-namespace"])
	c.Check(docs["kubeconfig"], Equals, exceptions["kubeconfig"])
	c.Check(checked > 25, Equals, true, Commentf("%d defaults compared", checked))
}

// The log defaults configuration.md gives are what nac's logger does with
// no zap flag: JSON lines, RFC 3339 times, info level.
func (s *FlagsSuite) TestDocumentedLogDefaults(c *C) {
	fs := flag.NewFlagSet("nac", flag.ContinueOnError)
	zapOpts := registerFlags(fs, &options{})
	c.Assert(fs.Parse(nil), IsNil)
	var buf bytes.Buffer
	zapOpts.DestWriter = &buf
	log := zap.New(zap.UseFlagOptions(zapOpts))
	log.V(1).Info("debug line")
	log.Info("info line")
	var line map[string]any
	c.Assert(json.Unmarshal(buf.Bytes(), &line), IsNil, Commentf("one JSON line: %q", buf.String()))
	c.Check(line["msg"], Equals, "info line")
	ts, _ := line["ts"].(string)
	_, err := time.Parse(time.RFC3339, ts)
	c.Check(err, IsNil, Commentf("ts %v", line["ts"]))
}

// Only the non-admin flags given on the command line yield nothing to a
// DataProtectionApplication; their defaults do.
func (s *FlagsSuite) TestGivenFlagsWinOverTheDPA(c *C) {
	parse := func(args ...string) options {
		fs := flag.NewFlagSet("nac", flag.ContinueOnError)
		var o options
		registerFlags(fs, &o)
		c.Assert(fs.Parse(args), IsNil)
		o.given = givenFlags(fs)
		return o
	}
	none := parse().nonAdminFlags()
	c.Check(none.RequireApprovalForBSL, IsNil)
	c.Check(none.BackupSyncPeriod, IsNil)
	c.Check(none.GarbageCollectionPeriod, IsNil)

	given := parse("--require-approval-for-bsl=false", "--backup-sync-period=0", "--wait-timeout=1m").nonAdminFlags()
	c.Assert(given.RequireApprovalForBSL, NotNil)
	c.Check(*given.RequireApprovalForBSL, Equals, false)
	c.Assert(given.BackupSyncPeriod, NotNil)
	c.Check(*given.BackupSyncPeriod, Equals, time.Duration(0))
	c.Check(given.GarbageCollectionPeriod, IsNil)
}

func Test(t *testing.T) { TestingT(t) }

// nac's offline tools run kubectl-nac; without one next to nac or on $PATH
// the error names the command and where kubectl-nac was looked for, and the
// process is not replaced. (The e2e suite runs `nac blueprint validate`
// through a real kubectl-nac next to nac.)
func (s *FlagsSuite) TestOfflineToolsNeedKubectlNAC(c *C) {
	path := os.Getenv("PATH")
	defer os.Setenv("PATH", path)
	c.Assert(os.Setenv("PATH", c.MkDir()), IsNil)
	err := runKubectlNAC([]string{"funcs"})
	c.Check(err, ErrorMatches, `nac funcs is kubectl nac's command, and kubectl-nac is neither next to nac nor on \$PATH .*`)
	dir := c.MkDir()
	notExec := filepath.Join(dir, "plain")
	c.Assert(os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644), IsNil)
	c.Check(isExecutable(notExec), Equals, false)
	c.Assert(os.Chmod(notExec, 0o755), IsNil)
	c.Check(isExecutable(notExec), Equals, true)
	c.Check(isExecutable(dir), Equals, false)
}

// Metrics are served over HTTPS behind controller-runtime's authentication
// and authorization filter unless --metrics-secure=false; HTTP/2 is off.
// (The e2e suite scrapes the real binary: 401 without a token, 403 without
// the metrics-reader role, 200 with it.)
func (s *FlagsSuite) TestMetricsSecureByDefault(c *C) {
	parse := func(args ...string) options {
		fs := flag.NewFlagSet("nac", flag.ContinueOnError)
		var o options
		registerFlags(fs, &o)
		c.Assert(fs.Parse(args), IsNil)
		return o
	}
	secure := metricsOptions(parse())
	c.Check(secure.BindAddress, Equals, ":8090")
	c.Check(secure.SecureServing, Equals, true)
	c.Check(secure.FilterProvider, NotNil)
	c.Check(secure.CertDir, Equals, "")
	c.Assert(secure.TLSOpts, HasLen, 1)
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	secure.TLSOpts[0](cfg)
	c.Check(cfg.NextProtos, DeepEquals, []string{"http/1.1"})
	c.Check(metricsOptions(parse("--metrics-cert-dir", "/certs")).CertDir, Equals, "/certs")

	plain := metricsOptions(parse("--metrics-secure=false", "--metrics-bind-address", "127.0.0.1:9"))
	c.Check(plain.BindAddress, Equals, "127.0.0.1:9")
	c.Check(plain.SecureServing, Equals, false)
	c.Check(plain.FilterProvider, IsNil)
}

// The leader election's timings are controller-runtime's by default and
// checked as client-go's leader elector checks them (it would panic at
// start): positive, the renew deadline between 1.2 retry periods and the
// lease duration. (test/failover runs two replicas with short ones.)
func (s *FlagsSuite) TestLeaderElectionTimings(c *C) {
	parse := func(args ...string) options {
		fs := flag.NewFlagSet("nac", flag.ContinueOnError)
		var o options
		registerFlags(fs, &o)
		c.Assert(fs.Parse(args), IsNil)
		return o
	}
	o := parse()
	c.Check([]time.Duration{o.leaseDuration, o.renewDeadline, o.retryPeriod}, DeepEquals,
		[]time.Duration{15 * time.Second, 10 * time.Second, 2 * time.Second})
	c.Check(checkLeaderElection(o), IsNil)
	c.Check(checkLeaderElection(parse("--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s")), IsNil)
	for _, bad := range [][]string{
		{"--leader-elect-lease-duration=10s"},                                      // not longer than the renew deadline
		{"--leader-elect-renew-deadline=2400ms"},                                   // not longer than 1.2 retry periods
		{"--leader-elect-retry-period=0s"},                                         // not positive
		{"--leader-elect-lease-duration=-1s", "--leader-elect-renew-deadline=-2s"}, // not positive
	} {
		c.Check(checkLeaderElection(parse(bad...)), NotNil, Commentf("%v", bad))
	}
}
