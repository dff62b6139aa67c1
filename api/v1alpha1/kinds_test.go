package v1alpha1

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// The registry's per-kind facts the rest of nacflow derives its lists
// from: OADP NAC's excluded kinds in its order, the kinds that take a turn
// in Velero's queues, and one CLI group per kind at most.
func TestKindRegistryFacts(t *testing.T) {
	want := []string{"nonadminbackups.oadp.openshift.io", "nonadminrestores.oadp.openshift.io", "nonadminbackupstoragelocations.oadp.openshift.io"}
	if got := ExcludedResources(); !slices.Equal(got, want) {
		t.Errorf("ExcludedResources() = %v, want %v (OADP NAC's list, in its order)", got, want)
	}
	if got := QueuedKindNames(); !slices.Equal(got, []string{"NonAdminBackup", "NonAdminRestore"}) {
		t.Errorf("QueuedKindNames() = %v", got)
	}
	orders, commands := map[int]string{}, map[string]string{}
	for _, k := range Kinds() {
		if k.ExclusionOrder != 0 {
			if other, ok := orders[k.ExclusionOrder]; ok {
				t.Errorf("%s and %s share ExclusionOrder %d", k.Kind, other, k.ExclusionOrder)
			}
			orders[k.ExclusionOrder] = k.Kind
		}
		if k.Command != "" {
			if other, ok := commands[k.Command]; ok {
				t.Errorf("%s and %s share Command %q", k.Kind, other, k.Command)
			}
			commands[k.Command] = k.Kind
		}
		switch k.VeleroQueue {
		case "", VeleroBackups, VeleroRestores:
		default:
			t.Errorf("%s: VeleroQueue %q is not one of Velero's queues", k.Kind, k.VeleroQueue)
		}
		for _, r := range k.Requires {
			if _, ok := apiScheme().AllKnownTypes()[GroupVersion.WithKind(r)]; !ok || r == k.Kind {
				t.Errorf("%s requires %q, not another kind of %s", k.Kind, r, GroupVersion)
			}
		}
		if got, ok := APIKindOf(k.New()); !ok || got != k.Kind {
			t.Errorf("APIKindOf(New() of %s) = %q, %v", k.Kind, got, ok)
		}
	}
	for obj, want := range map[runtime.Object]string{&Blueprint{}: "Blueprint", &NonAdminBackupStorageLocationRequest{}: "NonAdminBackupStorageLocationRequest",
		&TenantLocations{}: "TenantLocations", &BlueprintList{}: "BlueprintList"} {
		if got, ok := APIKindOf(obj); !ok || got != want {
			t.Errorf("APIKindOf(%T) = %q, %v; want %s", obj, got, ok, want)
		}
	}
	if got, ok := APIKindOf(&corev1.Secret{}); ok {
		t.Errorf("APIKindOf(Secret) = %q: not a kind of this package", got)
	}
}
