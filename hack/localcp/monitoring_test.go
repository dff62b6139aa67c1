package main

import (
	"net"
	"os"
	"path/filepath"

	. "gopkg.in/check.v1"
)

// TestPlanMonitoring: --monitoring is refused before anything starts, with
// the fix named, when there is nothing to scrape, no role to scrape HTTPS
// with, no Prometheus server in the assets or its fixed port is taken;
// otherwise it scrapes the controller's metrics address, over HTTPS with
// the token file unless the controller serves plain HTTP.
func (s *LocalCPUnitSuite) TestPlanMonitoring(c *C) {
	assets, dir := c.MkDir(), c.MkDir()
	rules := filepath.Join(dir, "rules.yaml")
	c.Assert(os.WriteFile(rules, []byte("groups: []\n"), 0o644), IsNil)
	o := options{dir: dir, metricsRole: "config/rbac/metrics_reader_role.yaml", monitoringRules: rules, monitoringAddr: "127.0.0.1:0",
		command: []string{"nac", "--metrics-bind-address", ":8443"}}
	plan := func(o options) (*monitoring, error) {
		return planMonitoring(o, o.command[min(1, len(o.command)):], assets)
	}

	_, err := plan(o)
	c.Check(err, ErrorMatches, `--monitoring needs the Prometheus server .*/prometheus: build it with make bin/prometheus.*`)
	c.Assert(os.WriteFile(filepath.Join(assets, "prometheus"), nil, 0o755), IsNil)

	m, err := plan(o)
	c.Assert(err, IsNil)
	c.Check(m.config.Target, Equals, "127.0.0.1:8443")
	c.Check(m.config.Secure, Equals, true)
	c.Check(m.config.TokenFile, Equals, filepath.Join(dir, "prometheus", "token"))
	c.Check(m.config.RuleFiles, DeepEquals, []string{rules})

	plain := o
	plain.command = []string{"nac", "--metrics-bind-address", "127.0.0.1:9", "--metrics-secure=false"}
	plain.metricsRole = ""
	m, err = plan(plain)
	c.Assert(err, IsNil)
	c.Check(m.config.Secure, Equals, false)
	c.Check(m.config.TokenFile, Equals, "")

	for _, t := range []struct {
		edit func(*options)
		want string
	}{
		{func(o *options) { o.command = nil }, `--monitoring scrapes the controller localcp runs: give its command after --`},
		{func(o *options) { o.command = []string{"nac", "--metrics-bind-address", "0"} }, `--monitoring: the controller serves no metrics.*`},
		{func(o *options) { o.metricsRole = "" }, `--monitoring scrapes over HTTPS .*--metrics-reader-role must not be empty.*`},
		{func(o *options) { o.monitoringRules = filepath.Join(dir, "none.yaml") }, `--monitoring-rules: .*no such file.*`},
	} {
		bad := o
		t.edit(&bad)
		_, err := plan(bad)
		c.Check(err, ErrorMatches, t.want)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	defer l.Close()
	taken := o
	taken.monitoringAddr = l.Addr().String()
	_, err = plan(taken)
	c.Check(err, ErrorMatches, `port \d+ \(Prometheus' --monitoring-address\) is in use.*`)
}
