// Package blueprints holds the built-in blueprints (embedded YAML, one per
// NAC kind) and resolves which blueprint an operation uses (docs/architecture.md,
// "Layers").
package blueprints

import (
	"embed"
	"fmt"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltIn returns a fresh copy of the embedded blueprint called name (a
// kind's v1alpha1.Kind.Blueprint, BuiltInFor). It
// returns an error when there is no such built-in or its YAML does not decode
// strictly (a build defect, caught by the package tests).
func BuiltIn(name string) (*v1alpha1.Blueprint, error) {
	bp, err := parsedBuiltIn(name)
	if err != nil {
		return nil, err
	}
	return bp.DeepCopy(), nil
}

// builtinCache holds each built-in decoded once: decoding the YAML on every
// reconcile is a measurable share of the controller's CPU (docs/performance.md).
var builtinCache sync.Map // name → func() (*v1alpha1.Blueprint, error)

// parsedBuiltIn returns the shared decoded built-in called name; callers must
// not modify it (BuiltIn hands out copies).
func parsedBuiltIn(name string) (*v1alpha1.Blueprint, error) {
	f, ok := builtinCache.Load(name)
	if !ok {
		f, _ = builtinCache.LoadOrStore(name, sync.OnceValues(func() (*v1alpha1.Blueprint, error) { return decodeBuiltIn(name) }))
	}
	return f.(func() (*v1alpha1.Blueprint, error))()
}

func decodeBuiltIn(name string) (*v1alpha1.Blueprint, error) {
	data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in blueprint %q", name)
	}
	bp := &v1alpha1.Blueprint{}
	if err := yaml.UnmarshalStrict(data, bp); err != nil {
		return nil, fmt.Errorf("decoding built-in blueprint %q: %w", name, err)
	}
	return bp, nil
}

// BuiltInYAML returns the embedded YAML of the built-in blueprint called
// name, as shipped (comments included), or an error when there is none.
func BuiltInYAML(name string) ([]byte, error) {
	data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in blueprint %q", name)
	}
	return data, nil
}

// Action returns the action called action of bp, or an error naming both when
// bp has none.
func Action(bp *v1alpha1.Blueprint, action string) (*v1alpha1.BlueprintAction, error) {
	a, ok := bp.Spec.Actions[action]
	if !ok {
		return nil, fmt.Errorf("blueprint %q has no action %q", bp.Name, action)
	}
	return &a, nil
}
