package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type dashboardsSuite struct {
	files map[string][]byte
}

var _ = Suite(&dashboardsSuite{})

func (s *dashboardsSuite) SetUpSuite(c *C) {
	var err error
	s.files, err = Files()
	c.Assert(err, IsNil)
}

// root is the repository's root, from this package's directory.
var root = filepath.Join("..", "..")

// boardJSON is a generated dashboard as Grafana reads it.
type boardJSON struct {
	Title      string
	Templating struct {
		List []struct {
			Type, Name string
			Query      any
		}
	}
	Panels []struct {
		ID          int `json:"id"`
		Type        string
		Title       string
		Description string
		Datasource  struct{ UID string }
		Targets     []struct {
			Expr       string
			RefID      string `json:"refId"`
			Datasource struct{ UID string }
		}
	}
}

func (s *dashboardsSuite) board(c *C, name string) boardJSON {
	var b boardJSON
	c.Assert(json.Unmarshal(s.files[configDir+"/nacflow-"+name+".json"], &b), IsNil)
	c.Assert(b.Panels, Not(HasLen), 0)
	return b
}

// Every panel shows something: a query with an expression, on the
// datasource variable.
func (s *dashboardsSuite) TestEveryPanelHasAQuery(c *C) {
	for _, n := range dashboards {
		b := s.board(c, n.name)
		ids := map[int]bool{}
		for _, p := range b.Panels {
			c.Check(ids[p.ID], Equals, false, Commentf("%s: panel id %d twice", n.name, p.ID))
			ids[p.ID] = true
			if p.Type == "row" {
				continue
			}
			c.Check(p.Targets, Not(HasLen), 0, Commentf("%s: panel %q", n.name, p.Title))
			c.Check(p.Datasource.UID, Equals, "${datasource}", Commentf("%s: panel %q", n.name, p.Title))
			for _, t := range p.Targets {
				c.Check(strings.TrimSpace(t.Expr), Not(Equals), "", Commentf("%s: panel %q, query %s", n.name, p.Title, t.RefID))
				c.Check(t.Datasource.UID, Equals, "${datasource}", Commentf("%s: panel %q, query %s", n.name, p.Title, t.RefID))
			}
		}
	}
}

// The tenant dashboard shows one namespace: every query is filtered by the
// variable.
func (s *dashboardsSuite) TestTenantQueriesFilterTheNamespace(c *C) {
	b := s.board(c, "tenant")
	for _, p := range b.Panels {
		for _, t := range p.Targets {
			c.Check(strings.Contains(t.Expr, `namespace="$namespace"`), Equals, true, Commentf("panel %q, query %s: %s", p.Title, t.RefID, t.Expr))
		}
	}
	vars := map[string]string{}
	for _, v := range b.Templating.List {
		vars[v.Name] = v.Type
	}
	c.Check(vars, DeepEquals, map[string]string{"datasource": "datasource", "namespace": "query"})
}

// controllerRuntime lists the controller-runtime (and client-go) metrics the
// dashboards may read, as controller-runtime v0.21 (go.mod) registers them.
var controllerRuntime = map[string]bool{
	"controller_runtime_reconcile_total":           true,
	"controller_runtime_reconcile_errors_total":    true,
	"controller_runtime_max_concurrent_reconciles": true,
	"controller_runtime_webhook_requests_total":    true,
	"workqueue_depth":                              true,
	"leader_election_master_status":                true,
}

var metricName = regexp.MustCompile(`\b(nacflow|controller_runtime|workqueue|leader_election)_[a-z_]+\b`)

// Every metric a query reads is one nacflow documents in docs/metrics.md
// (and internal/metrics serves), or a controller-runtime one.
func (s *dashboardsSuite) TestQueriesReadKnownMetrics(c *C) {
	docs, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	c.Assert(err, IsNil)
	for _, n := range dashboards {
		for _, p := range s.board(c, n.name).Panels {
			for _, t := range p.Targets {
				names := metricName.FindAllString(t.Expr, -1)
				c.Check(names, Not(HasLen), 0, Commentf("%s: panel %q reads no metric: %s", n.name, p.Title, t.Expr))
				for _, m := range names {
					if strings.HasPrefix(m, "nacflow_") {
						base := strings.TrimSuffix(m, "_bucket")
						c.Check(bytes.Contains(docs, []byte("`"+base+"`")), Equals, true, Commentf("%s: panel %q reads %s, which docs/metrics.md does not list", n.name, p.Title, m))
						continue
					}
					c.Check(controllerRuntime[m], Equals, true, Commentf("%s: panel %q reads %s", n.name, p.Title, m))
				}
			}
		}
	}
}

// The chart embeds the JSON with .Files.Get, so Helm never renders the
// legends' {{label}}: the template holds no dashboard JSON itself, and one
// ConfigMap per dashboard.
func (s *dashboardsSuite) TestConfigMapTemplate(c *C) {
	tmpl := string(s.files[chartDir+"/"+ConfigMapTemplate])
	c.Check(strings.HasPrefix(tmpl, Header), Equals, true)
	c.Check(strings.Count(tmpl, "kind: ConfigMap"), Equals, len(dashboards))
	for _, n := range dashboards {
		c.Check(strings.Contains(tmpl, `.Files.Get "dashboards/nacflow-`+n.name+`.json"`), Equals, true, Commentf(n.name))
		c.Check(string(s.files[chartDir+"/dashboards/nacflow-"+n.name+".json"]), Equals, string(s.files[configDir+"/nacflow-"+n.name+".json"]))
	}
	c.Check(strings.Contains(tmpl, `"expr"`), Equals, false)
}

// The same dashboards give the same bytes, and the committed files are the
// generated ones.
func (s *dashboardsSuite) TestGeneratedFilesAreCurrent(c *C) {
	again, err := Files()
	c.Assert(err, IsNil)
	c.Assert(again, HasLen, len(s.files))
	for name, want := range s.files {
		c.Check(string(again[name]), Equals, string(want), Commentf("%s differs between two runs", name))
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if !c.Check(err, IsNil, Commentf("run make generate")) {
			continue
		}
		c.Check(string(got), Equals, string(want), Commentf("%s is stale: run make generate", name))
	}
}
