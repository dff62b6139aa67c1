package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// FuzzRenderArgs: any template source and any object name render or fail
// cleanly — never a panic — and a user-supplied string is never executed as
// a template.
func FuzzRenderArgs(f *testing.F) {
	for _, s := range []string{"{{ .Name }}", "{{ .Phases.a.Output.x }}", "{{ env \"HOME\" }}", "{{", "{{ range .Object }}{{ . }}{{ end }}", "plain", "{{ .Object.spec }}",
		"{{ repeat 1000000000 .Name }}", "{{ range until 100000 }}{{ . }}{{ end }}", "{{ seq 0 -1 -100000000 }}", "{{ repeat -5 \"x\" }}",
		"{{ date \"2006\" .Time }}", "{{ range 1000000000 }}{{ end }}",
		"{{ $s := .Name }}{{ range until 64 }}{{ $s = cat $s $s }}{{ end }}", "{{ $d := dict }}{{ $_ := set $d \"a\" $d }}{{ $d }}",
		"{{ printf \"%999999d\" 1 }}"} {
		f.Add(s, "nab-{{ .OADPNamespace }}")
	}
	f.Fuzz(func(t *testing.T, src, name string) {
		if !utf8.ValidString(src) {
			return // blueprint args come from JSON: always valid UTF-8
		}
		raw, err := json.Marshal(src)
		if err != nil {
			return
		}
		nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"}}
		start := metav1.Now()
		plan := &v1alpha1.PlanStatus{StartTime: &start, Phases: []v1alpha1.PhaseStatus{{Name: "a", State: v1alpha1.PhaseComplete, Output: map[string]string{"x": "y"}}}}
		p, err := engine.NewParams(&engine.Operation{Object: nab, OADPNamespace: "oadp"}, plan)
		if err != nil {
			t.Fatal(err)
		}
		out, err := engine.RenderArgs(map[string]apiextensionsv1.JSON{"v": {Raw: raw}}, p)
		if err != nil {
			return
		}
		if n := len(out["v"].(string)); strings.Contains(src, "{{") && n > engine.MaxRenderedBytes {
			t.Fatalf("rendered %d bytes, more than MaxRenderedBytes", n)
		}
		if src == "{{ .Name }}" && out["v"] != name {
			t.Fatalf("{{ .Name }} rendered %q for name %q: user data must come out verbatim", out["v"], name)
		}
		if strings.Contains(src, "{{") {
			return
		}
		if out["v"] != src {
			t.Fatalf("a string without a template changed: %q → %q", src, out["v"])
		}
	})
}
