package promstack

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type PromstackSuite struct{}

var _ = Suite(&PromstackSuite{})

// TestYAML: the configuration of a secure target scrapes it over HTTPS
// with the token file, its certificate unchecked, as job nacflow with
// honor_labels; a plain one over HTTP without a token; intervals in
// Prometheus' syntax.
func (s *PromstackSuite) TestYAML(c *C) {
	b, err := Config{Target: "127.0.0.1:8090", Secure: true, TokenFile: "/t/token", RuleFiles: []string{"/r/nacflow.rules.yaml"}}.YAML()
	c.Assert(err, IsNil)
	c.Check(string(b), Equals, `global:
  evaluation_interval: 1s
  scrape_interval: 1s
  scrape_timeout: 1s
rule_files:
- /r/nacflow.rules.yaml
scrape_configs:
- authorization:
    credentials_file: /t/token
  honor_labels: true
  job_name: nacflow
  scheme: https
  static_configs:
  - targets:
    - 127.0.0.1:8090
  tls_config:
    insecure_skip_verify: true
`)
	b, err = Config{Target: "127.0.0.1:9", Interval: 1500 * time.Millisecond}.YAML()
	c.Assert(err, IsNil)
	c.Check(string(b), Equals, `global:
  evaluation_interval: 1500ms
  scrape_interval: 1500ms
  scrape_timeout: 1500ms
scrape_configs:
- honor_labels: true
  job_name: nacflow
  scheme: http
  static_configs:
  - targets:
    - 127.0.0.1:9
`)
	_, err = Config{Target: "127.0.0.1:8090", Secure: true}.YAML()
	c.Check(err, ErrorMatches, ".*needs a token file")
	_, err = Config{}.YAML()
	c.Check(err, ErrorMatches, ".*no scrape target")
}

// TestPromtoolAcceptsIt: promtool (built by make bin/promtool; the test
// says so and passes where it is not built) checks the configuration with
// the repository's rules file.
func (s *PromstackSuite) TestPromtoolAcceptsIt(c *C) {
	assets := os.Getenv("NACFLOW_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "..", "bin")
	}
	promtool := filepath.Join(assets, "promtool")
	if _, err := os.Stat(promtool); err != nil {
		c.Skip("no " + promtool + " (make bin/promtool)")
	}
	rules, err := filepath.Abs(filepath.Join("..", "..", "..", "config", "monitoring", "rules", "nacflow.rules.yaml"))
	c.Assert(err, IsNil)
	dir := c.MkDir()
	token := filepath.Join(dir, "token")
	c.Assert(os.WriteFile(token, []byte("t"), 0o600), IsNil)
	b, err := Config{Target: "127.0.0.1:8090", Secure: true, TokenFile: token, RuleFiles: []string{rules}}.YAML()
	c.Assert(err, IsNil)
	conf := filepath.Join(dir, "prometheus.yml")
	c.Assert(os.WriteFile(conf, b, 0o644), IsNil)
	out, err := exec.Command(promtool, "check", "config", conf).CombinedOutput()
	c.Check(err, IsNil, Commentf("promtool check config:\n%s", out))
}
