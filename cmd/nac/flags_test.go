package main

import (
	"crypto/tls"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"
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
