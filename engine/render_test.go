package engine_test

import (
	"encoding/json"

	. "gopkg.in/check.v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

type RenderSuite struct{}

var _ = Suite(&RenderSuite{})

// args encodes a map as blueprint phase args.
func args(c *C, m map[string]any) map[string]apiextensionsv1.JSON {
	out := map[string]apiextensionsv1.JSON{}
	for k, v := range m {
		raw, err := json.Marshal(v)
		c.Assert(err, IsNil)
		out[k] = apiextensionsv1.JSON{Raw: raw}
	}
	return out
}

func params(c *C) engine.Params {
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nab-{{ .OADPNamespace }}", Namespace: "tenant"}}
	start := metav1.Now()
	plan := &v1alpha1.PlanStatus{StartTime: &start, Phases: []v1alpha1.PhaseStatus{
		{Name: "create", State: v1alpha1.PhaseComplete, Output: map[string]string{"name": "velero-obj"}},
		{Name: "later", State: v1alpha1.PhasePending},
	}}
	p, err := engine.NewParams(&engine.Operation{Object: nab, OADPNamespace: "openshift-adp", UUID: "u-1"}, plan)
	c.Assert(err, IsNil)
	return p
}

func (s *RenderSuite) TestRenderValues(c *C) {
	got, err := engine.RenderArgs(args(c, map[string]any{
		"name":   "{{ .Phases.create.Output.name }}",
		"where":  "{{ .OADPNamespace }}/{{ .Namespace }}",
		"nested": map[string]any{"list": []any{"{{ .UUID | upper }}", 3}},
		"plain":  "no template",
		"count":  2,
		"object": `{{ dig "metadata" "namespace" "" .Object }}`,
	}), params(c))
	c.Assert(err, IsNil)
	c.Check(got, DeepEquals, map[string]any{
		"name":   "velero-obj",
		"where":  "openshift-adp/tenant",
		"nested": map[string]any{"list": []any{"U-1", float64(3)}},
		"plain":  "no template",
		"count":  float64(2),
		"object": "tenant",
	})
}

func (s *RenderSuite) TestUserStringsAreData(c *C) {
	// The NAB's name contains template syntax: it is inserted verbatim, never
	// executed.
	got, err := engine.RenderArgs(args(c, map[string]any{"n": "{{ .Name }}"}), params(c))
	c.Assert(err, IsNil)
	c.Check(got["n"], Equals, "nab-{{ .OADPNamespace }}")
}

func (s *RenderSuite) TestAllowList(c *C) {
	for _, fn := range []string{`env "HOME"`, `expandenv "$HOME"`, "now", "randAlphaNum 5", "uuidv4", `getHostByName "localhost"`, "genPrivateKey \"rsa\""} {
		_, err := engine.RenderArgs(args(c, map[string]any{"v": "{{ " + fn + " }}"}), params(c))
		c.Check(err, ErrorMatches, `args.v: template: .*function ".*" not defined`, Commentf(fn))
	}
}

func (s *RenderSuite) TestMissingKeys(c *C) {
	for _, src := range []string{
		"{{ .Phases.later.Output.name }}",  // a phase that has not completed
		"{{ .Phases.create.Output.nope }}", // an output that does not exist
		"{{ .Phases.nope.Output.name }}",   // a phase that does not exist
		"{{ .Object.spec.nope }}",          // a missing object field
		"{{ .NoSuchParam }}",               // a parameter that does not exist
	} {
		_, err := engine.RenderArgs(args(c, map[string]any{"v": src}), params(c))
		c.Check(err, NotNil, Commentf(src))
	}
}

func (s *RenderSuite) TestDecodeArgsIsStrict(c *C) {
	type target struct {
		Kind string `json:"kind"`
	}
	var t target
	c.Check(engine.DecodeArgs(map[string]any{"kind": "Backup"}, &t), IsNil)
	c.Check(t.Kind, Equals, "Backup")
	c.Check(engine.DecodeArgs(map[string]any{"knd": "Backup"}, &t), ErrorMatches, `args: json: unknown field "knd"`)
	c.Check(engine.DecodeArgs(map[string]any{"kind": 3}, &t), ErrorMatches, `args: json: cannot unmarshal number .*`)
}
