package blueprints

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Resolution is the blueprint action an operation will run.
type Resolution struct {
	// Blueprint is the name of the blueprint the action came from.
	Blueprint string
	// Generation is the override's metadata.generation, or
	// v1alpha1.BuiltInGeneration.
	Generation string
	// Action is the resolved action.
	Action *v1alpha1.BlueprintAction
}

// Resolver finds the blueprint action for an operation: a Blueprint named
// like the built-in in the OADP namespace overrides the built-in (DESIGN.md
// §5), action by action; actions it lacks fall back to the built-in's.
type Resolver struct {
	// Reader reads Blueprints (the manager's cache).
	Reader client.Reader
	// Namespace is the OADP namespace, the only place overrides are read.
	Namespace string
}

// Resolve returns the action called action for kind's built-in blueprint
// name, from the admin's override when it has one for kind. It returns an
// error when neither the override nor the built-in has the action, or when
// reading the override fails.
func (r *Resolver) Resolve(ctx context.Context, name, kind, action string) (Resolution, error) {
	override := &v1alpha1.Blueprint{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, override)
	switch {
	case err == nil && override.Spec.Kind == kind:
		if a, ok := override.Spec.Actions[action]; ok {
			return Resolution{Blueprint: override.Name, Generation: strconv.FormatInt(override.Generation, 10), Action: &a}, nil
		}
	case err != nil && !apierrors.IsNotFound(err):
		return Resolution{}, fmt.Errorf("reading blueprint %s/%s: %w", r.Namespace, name, err)
	}
	return BuiltInAction(name, action)
}

// BuiltInAction returns the action called action of the built-in blueprint
// name, or an error when there is no such built-in or action.
func BuiltInAction(name, action string) (Resolution, error) {
	bp, err := BuiltIn(name)
	if err != nil {
		return Resolution{}, err
	}
	a, err := Action(bp, action)
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Blueprint: bp.Name, Generation: v1alpha1.BuiltInGeneration, Action: a}, nil
}
