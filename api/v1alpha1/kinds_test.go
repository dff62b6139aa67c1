package v1alpha1

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestKindRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		obj := k.New()
		got, ok := KindOf(obj)
		if !ok || got.Kind != k.Kind {
			t.Errorf("KindOf(New() of %s) = %q, %v", k.Kind, got.Kind, ok)
		}
		if got, ok := KindOf(k.NewList()); !ok || got.Kind != k.Kind {
			t.Errorf("KindOf(NewList() of %s) = %q, %v", k.Kind, got.Kind, ok)
		}
		for _, name := range []string{k.Kind, k.Resource, k.Short} {
			if got, ok := LookupKind(name); !ok || got.Kind != k.Kind {
				t.Errorf("LookupKind(%q) = %q, %v; want %s", name, got.Kind, ok, k.Kind)
			}
			if seen[name] {
				t.Errorf("name %q is used by two kinds", name)
			}
			seen[name] = true
		}
		if got, ok := KindNamed(k.Kind); !ok || got.Kind != k.Kind {
			t.Errorf("KindNamed(%q) = %q, %v", k.Kind, got.Kind, ok)
		}
		if !slices.IsSorted(k.Actions) || !slices.Contains(k.Actions, "finalize") {
			t.Errorf("%s: actions %v are not sorted or lack finalize", k.Kind, k.Actions)
		}
		if obj.GetPhase() != "" {
			t.Errorf("%s: a new object has phase %q", k.Kind, obj.GetPhase())
		}
		obj.SetPhase(NonAdminPhaseNew)
		if obj.GetPhase() != NonAdminPhaseNew {
			t.Errorf("%s: SetPhase did not take", k.Kind)
		}
		if o := obj.OriginKeys(); o.Label != "openshift.io/oadp-"+k.Short+"-origin-nacuuid" {
			t.Errorf("%s: origin label %q does not carry its short name %q", k.Kind, o.Label, k.Short)
		}
	}
	if _, ok := KindNamed("nab"); ok {
		t.Error("KindNamed(nab) found a NAC kind: it takes the API kind only")
	}
	if _, ok := LookupKind("Backup"); ok {
		t.Error("LookupKind(Backup) found a NAC kind")
	}
	if _, ok := KindOf(&Blueprint{}); ok {
		t.Error("KindOf(Blueprint) found a NAC kind")
	}
}

// The Blueprint CRD's spec.kind enum (a kubebuilder marker, so a literal)
// lists exactly the registry's kinds.
func TestBlueprintKindEnumIsTheRegistry(t *testing.T) {
	src, err := os.ReadFile("blueprint_types.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*// \+kubebuilder:validation:Enum=(NonAdmin\S*)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no spec.kind enum marker in blueprint_types.go")
	}
	if want := strings.ReplaceAll(KindNames(), ", ", ";"); string(m[1]) != want {
		t.Errorf("Blueprint spec.kind enum is %s, the registry %s", m[1], want)
	}
}
