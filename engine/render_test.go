package engine_test

import (
	"encoding/json"
	"regexp"

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

// A missing key is an error naming the key (missingkey=error), never an
// empty string or "<no value>".
func (s *RenderSuite) TestMissingKeys(c *C) {
	for src, want := range map[string]string{
		"{{ .Phases.later.Output.name }}":  `<.Phases.later.Output.name>: map has no entry for key "later"`,          // a phase that has not completed
		"{{ .Phases.create.Output.nope }}": `<.Phases.create.Output.nope>: map has no entry for key "nope"`,          // an output that does not exist
		"{{ .Phases.nope.Output.name }}":   `<.Phases.nope.Output.name>: map has no entry for key "nope"`,            // a phase that does not exist
		"{{ .Object.spec.nope }}":          `<.Object.spec.nope>: map has no entry for key "nope"`,                   // a missing object field
		"{{ .NoSuchParam }}":               `<.NoSuchParam>: can't evaluate field NoSuchParam in type engine.Params`, // a parameter that does not exist
	} {
		_, err := engine.RenderArgs(args(c, map[string]any{"v": src}), params(c))
		c.Check(err, ErrorMatches, `args\.v: template: arg:1:\d+: executing "arg" at `+regexp.QuoteMeta(want), Commentf(src))
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

// Templates cannot make the controller allocate without bound: the
// count-driven functions refuse before they allocate, and a rendered arg
// longer than MaxRenderedBytes fails with an error naming the arg.
func (s *RenderSuite) TestOutputIsBounded(c *C) {
	p := params(c)
	for tpl, want := range map[string]string{
		`{{ repeat 1000000000 "x" }}`:                                `.*repeat: 1000000000 × 1 bytes is more than a template may produce \(65536 bytes\).*`,
		`{{ range until 100000000 }}{{ end }}`:                       `.*until: 100000000 elements is more than a template may build \(10000\).*`,
		`{{ untilStep -9000000000000000000 9000000000000000000 1 }}`: `.*untilStep: more elements than a template may build.*`,
		`{{ seq 1 2 100000000 }}`:                                    `.*seq: more elements than a template may build.*`,
		`{{ range until 9000 }}{{ repeat 10 "x" }}{{ end }}`:         `.*the rendered template is longer than 65536 bytes.*`,
		`{{ repeat -1 "x" }}`:                                        `.*negative Repeat count.*`,
	} {
		_, err := engine.RenderArgs(args(c, map[string]any{"name": tpl}), p)
		c.Check(err, ErrorMatches, `args\.name: `+want, Commentf(tpl))
	}
	// Within the bounds, the functions work as sprig's do.
	out, err := engine.RenderArgs(args(c, map[string]any{"a": `{{ repeat 3 "ab" }}`, "b": `{{ seq 3 }}`, "c": `{{ len (until 10000) }}`, "d": `{{ untilStep 0 10 5 }}`}), p)
	c.Assert(err, IsNil)
	c.Check(out, DeepEquals, map[string]any{"a": "ababab", "b": "1 2 3", "c": "10000", "d": "[0 5]"})
}
