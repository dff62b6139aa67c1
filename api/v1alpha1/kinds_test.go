package v1alpha1

import "testing"

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
		if o := obj.OriginKeys(); o.Label != "openshift.io/oadp-"+k.Short+"-origin-nacuuid" {
			t.Errorf("%s: origin label %q does not carry its short name %q", k.Kind, o.Label, k.Short)
		}
	}
	if _, ok := LookupKind("Backup"); ok {
		t.Error("LookupKind(Backup) found a NAC kind")
	}
	if _, ok := KindOf(&Blueprint{}); ok {
		t.Error("KindOf(Blueprint) found a NAC kind")
	}
}
