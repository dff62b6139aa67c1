package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

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
	for _, fn := range []string{`env "HOME"`, `expandenv "$HOME"`, "now", "randAlphaNum 5", "uuidv4", `getHostByName "localhost"`, "genPrivateKey \"rsa\"",
		// the clock, and time zones from the controller's tz database
		"ago 0", `dateInZone "2006" 0 "Europe/Paris"`, `htmlDateInZone 0 "Asia/Tokyo"`, `mustToDate "2006" "2024"`} {
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

// paramsAt is params with the plan started at start.
func paramsAt(c *C, start time.Time) engine.Params {
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nab", Namespace: "tenant"}}
	st := metav1.NewTime(start)
	p, err := engine.NewParams(&engine.Operation{Object: nab, OADPNamespace: "openshift-adp", UUID: "u-1"},
		&v1alpha1.PlanStatus{StartTime: &st, Phases: []v1alpha1.PhaseStatus{}})
	c.Assert(err, IsNil)
	return p
}

// render renders one template as arg v.
func render(c *C, src string, p engine.Params) (string, error) {
	out, err := engine.RenderArgs(args(c, map[string]any{"v": src}), p)
	if err != nil {
		return "", err
	}
	return out["v"].(string), nil
}

// Templates render the same whatever the clock and the controller's time
// zone: the date functions work in UTC from the time they are given (.Time,
// fixed at plan start), never the clock; keys and values come in key order.
func (s *RenderSuite) TestDeterministicFunctions(c *C) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.FixedZone("UTC+5", 5*3600) // sprig's date, htmlDate and toDate would use this
	p := paramsAt(c, time.Date(2024, 3, 1, 22, 30, 0, 0, time.UTC))
	for src, want := range map[string]string{
		`{{ .Time }}`: "2024-03-01T22:30:00Z",
		`{{ date "2006-01-02 15:04 MST" .Time }}`:                                       "2024-03-01 22:30 UTC",
		`{{ date "2006-01-02" 0 }}`:                                                     "1970-01-01",
		`{{ date "15:04" (toDate "2006-01-02 15:04 -0700" "2024-03-01 20:00 -0700") }}`: "03:00",
		`{{ htmlDate .Time }}`:                                                          "2024-03-01",
		`{{ htmlDate 1709332200 }}`:                                                     "2024-03-01",
		`{{ toDate "2006-01-02" "2024-03-01" | unixEpoch }}`:                            "1709251200",
		`{{ toDate "2006-01-02T15:04:05Z07:00" .Time | unixEpoch }}`:                    "1709332200",
		`{{ toDate "2006-01-02" "2024-03-01" }}`:                                        "2024-03-01 00:00:00 +0000 UTC",
		`{{ duration "90" }}`:                                                           "1m30s",
		`{{ durationRound "49h" }}`:                                                     "2d",
		`{{ keys (dict "h" 1 "b" 2 "f" 3 "d" 4 "a" 5 "g" 6 "c" 7 "e" 8) }}`:             "[a b c d e f g h]",
		`{{ keys (dict "b" 1) (dict "a" 2 "b" 3) }}`:                                    "[a b b]",
		`{{ values (dict "h" 1 "b" 2 "f" 3 "d" 4 "a" 5 "g" 6 "c" 7 "e" 8) }}`:           "[5 2 7 4 8 3 6 1]",
		`{{ uniq (list 1 2 1 "a" (list 1) (list 1) (dict "k" 1) (dict "k" 1) 2 "a") }}`: "[1 2 a [1] map[k:1]]",
		`{{ uniq (until 10000) | len }}`:                                                "10000",
	} {
		for range 5 { // keys and values would come out in another order
			got, err := render(c, src, p)
			c.Check(err, IsNil, Commentf(src))
			c.Check(got, Equals, want, Commentf(src))
		}
	}
	for src, want := range map[string]string{
		`{{ date "2006" "yesterday" }}`:              `error calling date: parsing time "yesterday" as .*`,
		`{{ date "2006" .Phases }}`:                  `error calling date: map\[string\]engine.PhaseParams is not a time \(a time, Unix seconds or an RFC 3339 string such as \.Time\)`,
		`{{ htmlDate 1.5 }}`:                         `error calling htmlDate: float64 is not a time .*`,
		`{{ toDate "2006-01-02" "March" }}`:          `error calling toDate: parsing time "March" as "2006-01-02": .*`,
		`{{ durationRound (toDate "2006" "2020") }}`: `error calling durationRound: a time would be measured from the clock; .*`,
	} {
		_, err := render(c, src, p)
		c.Check(err, ErrorMatches, `args\.v: template: arg:1:\d+: executing "arg" at <.*>: `+want, Commentf(src))
	}
}

// Instrumenting templates for the step budget changes nothing they render:
// ranges (with else, break and continue), with, if, define, template and
// block render as text/template's do.
func (s *RenderSuite) TestInstrumentedTemplatesRenderAsBefore(c *C) {
	p := params(c)
	for src, want := range map[string]string{
		`{{ range $i, $e := list "a" "b" "c" }}{{ $i }}{{ $e }}{{ end }}`:                                         "0a1b2c",
		`{{ range list }}x{{ else }}empty{{ end }}`:                                                               "empty",
		`{{ range $i := until 10 }}{{ if eq $i 3 }}{{ break }}{{ end }}{{ $i }}{{ end }}`:                         "012",
		`{{ range $i := until 5 }}{{ if eq $i 1 }}{{ continue }}{{ end }}{{ $i }}{{ end }}`:                       "0234",
		`{{ range 3 }}{{ . }}{{ end }}`:                                                                           "012",
		`{{ with .Namespace }}{{ . }}{{ else }}none{{ end }}`:                                                     "tenant",
		`{{ define "t" }}<{{ . }}>{{ end }}{{ template "t" .UUID }}{{ template "t" .Name }}`:                      "<u-1><nab-{{ .OADPNamespace }}>",
		`{{ block "b" .Namespace }}[{{ . }}]{{ end }}`:                                                            "[tenant]",
		`{{ range $k, $v := dict "b" 2 "a" 1 }}{{ $k }}={{ $v }};{{ end }}`:                                       "a=1;b=2;",
		`{{ range until 2 }}{{ range until 2 }}{{ range until 2 }}.{{ end }}{{ end }}{{ end }}`:                   "........",
		`{{ define "r" }}{{ if lt . 3 }}{{ . }}{{ template "r" (add1 .) }}{{ end }}{{ end }}{{ template "r" 0 }}`: "012",
	} {
		got, err := render(c, src, p)
		c.Check(err, IsNil, Commentf(src))
		c.Check(got, Equals, want, Commentf(src))
	}
}

// A template cannot hold a reconcile worker: every range iteration,
// template call and write is a step, and the templates of one RenderArgs
// call have MaxRenderSteps of them, whether or not the loops write
// anything. The error names the budget.
func (s *RenderSuite) TestStepBudget(c *C) {
	// Only the step budget may stop these: on a loaded machine the time
	// budget would otherwise trip first.
	defer engine.SetRenderTimeout(time.Hour)()
	p := params(c)
	budget := `args\.v: render budget exceeded: more than 100000 steps \(range iterations, template calls and writes, engine\.MaxRenderSteps\)`
	for _, src := range []string{
		// nested ranges over lists each within MaxListLength: 10¹² iterations
		`{{ range until 10000 }}{{ range until 10000 }}{{ range until 10000 }}{{ end }}{{ end }}{{ end }}`,
		// the same through one variable
		`{{ $l := until 10000 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}`,
		// range over a number, which no function builds
		`{{ range 1000000000000 }}{{ end }}`,
		// a loop that writes (under MaxRenderedBytes: one byte per 20 iterations)
		`{{ range $i := until 10000 }}{{ range until 20 }}{{ end }}{{ if eq (mod $i 20) 0 }}x{{ end }}{{ end }}`,
		// recursion that branches: 2⁴⁰ template calls, within text/template's depth limit
		`{{ define "r" }}{{ if lt . 40 }}{{ template "r" (add1 .) }}{{ template "r" (add1 .) }}{{ end }}{{ end }}{{ template "r" 0 }}`,
	} {
		_, err := render(c, src, p)
		c.Check(err, ErrorMatches, budget, Commentf(src))
		c.Check(errors.Is(err, engine.ErrRenderBudget), Equals, true, Commentf(src))
	}

	// The boundary: one step for the template, one per iteration.
	_, err := render(c, fmt.Sprintf("{{ range %d }}{{ end }}", engine.MaxRenderSteps-1), p)
	c.Check(err, IsNil)
	_, err = render(c, fmt.Sprintf("{{ range %d }}{{ end }}", engine.MaxRenderSteps), p)
	c.Check(err, ErrorMatches, budget)

	// The budget is per RenderArgs call, not per arg: two args within it
	// each are over it together.
	loop := fmt.Sprintf("{{ range %d }}{{ end }}", engine.MaxRenderSteps/2)
	_, err = engine.RenderArgs(args(c, map[string]any{"a": loop}), p)
	c.Check(err, IsNil)
	_, err = engine.RenderArgs(args(c, map[string]any{"a": loop, "b": loop}), p)
	c.Check(err, ErrorMatches, `args\.b: render budget exceeded: more than 100000 steps .*`)
}

// Steps that are each slow stop at RenderTimeout (shortened here to 20ms):
// 10,000 hashes of a 960 KB string take seconds, far fewer steps than
// MaxRenderSteps.
func (s *RenderSuite) TestTimeBudget(c *C) {
	c.Check(engine.RenderTimeout, Equals, time.Second)
	defer engine.SetRenderTimeout(20 * time.Millisecond)()
	src := `{{ $s := repeat 60000 "x" }}{{ $big := cat $s $s $s $s $s $s $s $s $s $s $s $s $s $s $s $s }}` +
		`{{ range until 10000 }}{{ $h := sha256sum $big }}{{ end }}`
	_, err := render(c, src, params(c))
	c.Check(err, ErrorMatches, `args\.v: render budget exceeded: rendering took longer than 20ms \(engine\.RenderTimeout\)`)
	c.Check(errors.Is(err, engine.ErrRenderBudget), Equals, true)
}

// The caller's context stops rendering too, with its own error: a cancelled
// reconcile is not the template's fault.
func (s *RenderSuite) TestRenderStopsWithItsContext(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := engine.RenderArgsContext(ctx, args(c, map[string]any{"v": "{{ range until 10 }}{{ end }}"}), params(c))
	c.Check(err, ErrorMatches, `args\.v: rendering stopped: context canceled`)
	c.Check(errors.Is(err, context.Canceled), Equals, true)
	c.Check(errors.Is(err, engine.ErrRenderBudget), Equals, false)
	// Plain strings are not templates: nothing to stop.
	out, err := engine.RenderArgsContext(ctx, args(c, map[string]any{"v": "plain"}), params(c))
	c.Check(err, IsNil)
	c.Check(out["v"], Equals, "plain")
}

// No function returns a value larger than MaxValueSize, and the functions
// whose result a count or a pattern multiplies refuse before allocating: a
// loop cannot double a string or a list, nest a list in itself, or make a
// dict contain itself until the controller runs out of memory or stack.
func (s *RenderSuite) TestValuesAreBounded(c *C) {
	// Only the size bounds may stop these: on a loaded machine the time
	// budget would otherwise trip first.
	defer engine.SetRenderTimeout(time.Hour)()
	p := params(c)
	const big = `{{ $s := repeat 60000 "x" }}`
	larger := `the result is larger than a template value may be \(1048576 bytes\)`
	wouldBe := `the result would be larger than a template value may be \(1048576 bytes\)`
	addUp := `the arguments add up to more than a template value may be \(1048576 bytes\)`
	for src, want := range map[string]string{
		`{{ $s := "xxxxxxxx" }}{{ range until 64 }}{{ $s = cat $s $s }}{{ end }}`:                `error calling cat: ` + addUp,
		`{{ $s := "xxxxxxxx" }}{{ range until 64 }}{{ $s = print $s $s }}{{ end }}`:              `error calling print: ` + addUp,
		`{{ $s := "xxxxxxxx" }}{{ range until 64 }}{{ $s = printf "%s%s" $s $s }}{{ end }}`:      `error calling printf: ` + addUp,
		`{{ $s := "\\\\" }}{{ range until 64 }}{{ $s = js $s }}{{ end }}`:                        `error calling js: ` + larger,
		`{{ $l := list 1 }}{{ range until 64 }}{{ $l = list $l $l }}{{ end }}`:                   `error calling list: ` + larger,
		`{{ $l := list 1 }}{{ range until 64 }}{{ $l = concat $l $l }}{{ end }}`:                 `error calling concat: ` + addUp,
		`{{ $d := dict }}{{ $_ := set $d "self" $d }}`:                                           `error calling set: ` + larger,
		`{{ $d := dict "a" 1 }}{{ range until 64 }}{{ $d = dict "l" $d "r" $d }}{{ end }}`:       `error calling dict: ` + larger,
		`{{ $l := list }}{{ range until 2000 }}{{ $l = list $l }}{{ end }}{{ toPrettyJson $l }}`: `error calling list: ` + larger,
		big + `{{ replace "" $s $s }}`:                                                           `error calling replace: ` + wouldBe,
		big + `{{ regexReplaceAll "" $s $s }}`:                                                   `error calling regexReplaceAll: ` + wouldBe,
		big + `{{ regexReplaceAll "x+" $s (repeat 20 "$0") }}`:                                   `error calling regexReplaceAll: ` + wouldBe,
		big + `{{ regexReplaceAllLiteral "" $s $s }}`:                                            `error calling regexReplaceAllLiteral: ` + wouldBe,
		big + `{{ join $s (until 100) }}`:                                                        `error calling join: ` + wouldBe,
		big + `{{ wrapWith 1 $s "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }}`:    `error calling wrapWith: ` + wouldBe,
		`{{ indent 1000000000 "a" }}`:                                                            `error calling indent: ` + wouldBe,
		big + `{{ nindent 100 (replace "x" "\n" $s) }}`:                                          `error calling nindent: ` + wouldBe,
		`{{ printf (repeat 2000 "%999d") }}`:                                                     `error calling printf: ` + wouldBe,
		`{{ printf "%*d%*d" 999999 1 999999 2 }}`:                                                `error calling printf: ` + wouldBe,
		big + `{{ split "" $s }}`:                                                                `error calling split: 60000 pieces is more than a template may build \(10000\)`,
		big + `{{ splitn "" 20000 $s }}`:                                                         `error calling splitn: 20000 pieces is more than a template may build \(10000\)`,
		big + `{{ splitList "x" $s }}`:                                                           `error calling splitList: 60001 pieces is more than a template may build \(10000\)`,
		`{{ $d := dict }}{{ range $i := until 1000 }}{{ $_ := set $d (print $i) $i }}{{ end }}{{ keys` + strings.Repeat(" $d", 150) + ` }}`: `error calling keys: ` + addUp,
	} {
		_, err := render(c, src, p)
		c.Check(err, ErrorMatches, `args\.v: template: arg:1:\d+: executing "arg" at <.*>: `+want, Commentf(src))
	}
	// Within the bounds, the functions work as sprig's and text/template's do.
	for src, want := range map[string]string{
		`{{ replace "-" "__" "a-b-c" }}`:                                                            "a__b__c",
		`{{ regexReplaceAll "(a)(x*)" "-ab-axxb-" "${2}${1}" }}`:                                    "-ab-xxab-",
		`{{ regexReplaceAllLiteral "a+" "baaab" "$1" }}`:                                            "b$1b",
		`{{ join ", " (list 1 "b" 3) }}`:                                                            "1, b, 3",
		`{{ wrapWith 5 "|" "aaa bbb ccc" }}`:                                                        "aaa|bbb|ccc",
		`{{ indent 2 "a\nb" }}`:                                                                     "  a\n  b",
		`{{ nindent 2 "a" }}`:                                                                       "\n  a",
		`{{ printf "%05d|%-4s|%.2f|%v" 42 "ab" 3.14159 (list 1 2) }}`:                               "00042|ab  |3.14|[1 2]",
		`{{ print "a" 1 }}{{ println "b" }}`:                                                        "a1b\n",
		`{{ html "<a&b>" }} {{ js "it's" }} {{ urlquery "a b" }}`:                                   `&lt;a&amp;b&gt; it\'s a+b`,
		`{{ split "," "a,b" }}`:                                                                     "map[_0:a _1:b]",
		`{{ splitn "," 2 "a,b,c" }}`:                                                                "map[_0:a _1:b,c]",
		`{{ splitList "," "a,b" }}`:                                                                 "[a b]",
		`{{ cat "a" "b" }} {{ concat (list 1) (list 2) }}`:                                          "a b [1 2]",
		`{{ len (until 10000) }} {{ len (toJson (until 10000)) }}`:                                  "10000 48891",
		`{{ $l := list 1 }}{{ range until 10 }}{{ $l = list $l $l }}{{ end }}{{ len (toJson $l) }}`: "6141",
	} {
		got, err := render(c, src, p)
		c.Check(err, IsNil, Commentf(src))
		c.Check(got, Equals, want, Commentf(src))
	}
}
