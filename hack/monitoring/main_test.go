package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
	"sigs.k8s.io/yaml"
)

func Test(t *testing.T) { TestingT(t) }

// The generated PrometheusRule and chart template against the rules file:
// committed as generated, and holding exactly its rules once Helm rendered
// the template (the alerts' {{ $labels.namespace }} left to Prometheus).
type monitoringSuite struct {
	root  string
	rules []byte
}

var _ = Suite(&monitoringSuite{})

func (s *monitoringSuite) SetUpSuite(c *C) {
	s.root = filepath.Join("..", "..")
	var err error
	s.rules, err = os.ReadFile(filepath.Join(s.root, "config", "monitoring", "rules", "nacflow.rules.yaml"))
	c.Assert(err, IsNil)
}

func (s *monitoringSuite) TestGeneratedIsCommitted(c *C) {
	manifest, template, err := Generate(s.rules)
	c.Assert(err, IsNil)
	for path, want := range map[string][]byte{
		filepath.Join("config", "monitoring", "prometheusrule.yaml"):           manifest,
		filepath.Join("charts", "nacflow", "templates", "prometheusrule.yaml"): template,
	} {
		got, err := os.ReadFile(filepath.Join(s.root, path))
		c.Assert(err, IsNil, Commentf("run make chart"))
		c.Check(string(got), Equals, string(want), Commentf("%s is stale: run make chart", path))
	}
}

// unmarshal returns the YAML document b as a map.
func unmarshal(c *C, b []byte) map[string]any {
	var m map[string]any
	c.Assert(yaml.Unmarshal(b, &m), IsNil, Commentf("%s", b))
	return m
}

func (s *monitoringSuite) TestManifestHoldsTheRules(c *C) {
	manifest, _, err := Generate(s.rules)
	c.Assert(err, IsNil)
	m := unmarshal(c, manifest)
	c.Check(m["kind"], Equals, "PrometheusRule")
	c.Check(m["metadata"], DeepEquals, map[string]any{
		"name": "nacflow", "namespace": "openshift-adp",
		"labels": map[string]any{"app.kubernetes.io/name": "nacflow", "app.kubernetes.io/component": "controller"},
	})
	c.Check(m["spec"], DeepEquals, unmarshal(c, s.rules))
}

// helm runs helm template on the chart with args, showing the
// PrometheusRule's template alone; it returns helm's output, its error
// output and whether it failed.
func (s *monitoringSuite) helm(c *C, args ...string) (out []byte, stderr string, err error) {
	assets := os.Getenv("NACFLOW_ASSETS")
	if assets == "" {
		assets = filepath.Join(s.root, "bin")
	}
	helm := filepath.Join(assets, "helm")
	if _, err := os.Stat(helm); err != nil {
		c.Fatalf("helm not found in %s: run the tests with `make test`, which builds it", assets)
	}
	all := append([]string{"template", "nacflow", filepath.Join(s.root, "charts", "nacflow"), "-n", "openshift-adp",
		"--show-only", "templates/prometheusrule.yaml"}, args...)
	var errOut bytes.Buffer
	cmd := exec.Command(helm, all...)
	cmd.Stderr = &errOut
	out, err = cmd.Output()
	return out, errOut.String(), err
}

func (s *monitoringSuite) TestChartRendersTheRules(c *C) {
	// Off by default: helm finds nothing to show.
	_, stderr, err := s.helm(c)
	c.Assert(err, NotNil)
	c.Check(stderr, Matches, "(?s).*could not find template.*")

	out, stderr, err := s.helm(c, "--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.prometheusRule.labels.release=prom")
	c.Assert(err, IsNil, Commentf("%s", stderr))
	c.Check(strings.Contains(string(out), "{{ $labels.namespace }}"), Equals, true)
	m := unmarshal(c, out)
	c.Check(m["kind"], Equals, "PrometheusRule")
	meta := m["metadata"].(map[string]any)
	c.Check(meta["name"], Equals, "nacflow")
	c.Check(meta["namespace"], Equals, "openshift-adp")
	c.Check(meta["labels"].(map[string]any)["release"], Equals, "prom")
	c.Check(m["spec"], DeepEquals, unmarshal(c, s.rules))
}

func (s *monitoringSuite) TestRefuses(c *C) {
	for _, bad := range []string{
		"",
		"groups: []\n",
		"groups:\n- name: a\n  rules: []\nextra: 1\n",
		"groups:\n- name: a\n  rules: []\n---\ngroups:\n- name: b\n  rules: []\n",
		"groups: [\n",
	} {
		_, _, err := Generate([]byte(bad))
		c.Check(err, NotNil, Commentf("%q", bad))
	}
}

func (s *monitoringSuite) TestEscapesEveryTemplate(c *C) {
	_, template, err := Generate([]byte("# about the file\n\ngroups:\n- name: a\n  rules:\n  - alert: A\n    expr: up == 0\n    annotations:\n      summary: \"{{ $labels.job }} {{$value}}\"\n"))
	c.Assert(err, IsNil)
	c.Check(strings.Contains(string(template), `summary: "{{"{{"}} $labels.job }} {{"{{"}}$value}}"`), Equals, true, Commentf("%s", template))
	c.Check(strings.Contains(string(template), "about the file"), Equals, false)
}

// Every alert has a runbook: its runbook_url is its own section of
// docs/troubleshooting.md, whose heading is the alert's name.
func (s *monitoringSuite) TestEveryAlertHasARunbook(c *C) {
	docs, err := os.ReadFile(filepath.Join(s.root, "docs", "troubleshooting.md"))
	c.Assert(err, IsNil)
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert       string
				Annotations map[string]string
			}
		}
	}
	c.Assert(yaml.Unmarshal(s.rules, &file), IsNil)
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			c.Check(r.Annotations["runbook_url"], Equals, "https://github.com/nacflow/nacflow/blob/main/docs/troubleshooting.md#"+strings.ToLower(r.Alert), Commentf("alert %s", r.Alert))
			c.Check(bytes.Contains(docs, []byte("\n### "+r.Alert+"\n")), Equals, true, Commentf("docs/troubleshooting.md has no section ### %s", r.Alert))
		}
	}
	c.Check(n > 0, Equals, true)
}
