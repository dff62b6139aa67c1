package engine_test

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// benchAction is shaped like the built-in backup action: four phases and a
// deferPhase, later phases reading an earlier one's output.
func benchAction() *v1alpha1.BlueprintAction {
	ref := map[string]apiextensionsv1.JSON{"value": {Raw: []byte(`"{{ .Phases.a.Output.value }}"`)}}
	return &v1alpha1.BlueprintAction{
		Phases: []v1alpha1.BlueprintPhase{
			{Name: "a", Func: "Step", Args: map[string]apiextensionsv1.JSON{"value": {Raw: []byte(`"{{ .Namespace }}-{{ .Name }}"`)}}},
			{Name: "b", Func: "Step", Args: ref},
			{Name: "c", Func: "Step", Args: ref},
			{Name: "d", Func: "Step", Args: ref},
		},
		DeferPhase: &v1alpha1.BlueprintPhase{Name: "e", Func: "Step", Args: map[string]apiextensionsv1.JSON{
			"value": {Raw: []byte(`"{{ dig \"status\" \"veleroBackup\" \"name\" \"\" .Object }}"`)}}},
	}
}

func benchRegistry(b *testing.B) *engine.Registry {
	reg, err := engine.NewRegistry(&stepFunc{script: map[string]behaviour{}, calls: map[string]int{}})
	if err != nil {
		b.Fatal(err)
	}
	return reg
}

// BenchmarkCompile: checking and compiling a five-phase action.
func BenchmarkCompile(b *testing.B) {
	reg := benchRegistry(b)
	p := engine.ResolvedAction{Name: "backup", Blueprint: "bp", Spec: benchAction()}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.Compile(p, reg, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender: rendering one phase's templated args.
func BenchmarkRender(b *testing.B) {
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nab", Namespace: "tenant"}}
	start := metav1.Now()
	plan := &v1alpha1.PlanStatus{StartTime: &start, Phases: []v1alpha1.PhaseStatus{
		{Name: "a", State: v1alpha1.PhaseComplete, Output: map[string]string{"value": "x"}}}}
	args := benchAction().Phases[1].Args
	b.ReportAllocs()
	for b.Loop() {
		p, err := engine.NewParams(&engine.Operation{Object: nab, OADPNamespace: "oadp"}, plan)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := engine.RenderArgs(args, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun: a whole plan from compile to its deferPhase, in one Run.
func BenchmarkRun(b *testing.B) {
	reg := benchRegistry(b)
	runner := &engine.Runner{Registry: reg}
	spec := benchAction()
	b.ReportAllocs()
	for b.Loop() {
		nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nab", Namespace: "tenant"}}
		out, err := runner.Run(context.Background(), engine.Request{Object: nab, Action: engine.ResolvedAction{Name: "backup", Blueprint: "bp", Spec: spec}, UUID: "u"})
		if err != nil || !out.Finished {
			b.Fatalf("%v %+v", err, out)
		}
	}
}

// BenchmarkResumeWaiting: the common reconcile, re-entering a waiting phase.
func BenchmarkResumeWaiting(b *testing.B) {
	fn := &stepFunc{script: map[string]behaviour{"b": func(int, *stepArgs) (engine.Result, error) { return engine.Wait("busy", time.Minute), nil }}, calls: map[string]int{}}
	reg, _ := engine.NewRegistry(fn)
	runner := &engine.Runner{Registry: reg}
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nab", Namespace: "tenant"}}
	req := engine.Request{Object: nab, Action: engine.ResolvedAction{Name: "backup", Blueprint: "bp", Spec: benchAction()}, UUID: "u"}
	if _, err := runner.Run(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := runner.Run(context.Background(), req)
		if err != nil || out.RequeueAfter == 0 {
			b.Fatalf("%v %+v", err, out)
		}
	}
}
