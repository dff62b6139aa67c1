// Package planstore keeps the plans of NAC objects whose CRD has no
// status.plan — OADP NAC's CRDs as the OADP operator installs them, which
// prune the plan from every status write — in Secrets of the OADP
// namespace, so that the engine resumes an operation from its plan instead
// of starting it again at each reconcile. OADP NAC keeps no plans: this is
// nacflow's, and exists only to run over OADP's CRDs (docs/oadp.md).
//
// Each object's current plan is one Secret, v1alpha1.PlanSecretPrefix and
// the object's UID, labelled as OADP's and as managed by the non-admin
// controller, annotated PlanOfAnnotation ("<kind>/<namespace>/<name>/<uid>"),
// data key plan.json (the v1alpha1.PlanStatus status.plan would hold).
// PlanStore loads, writes and forgets them for the controllers' loop;
// Collect deletes those whose object is gone, for garbage collection.
// Errors are the API server's, wrapped with the object or Secret named, and
// a stored plan that does not decode.
package planstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/patch"
)

// PlanStore keeps the plans of NAC objects whose CRD has no status.plan
// (OADP NAC's CRDs, as the OADP operator installs them): the API server
// prunes the plan from every status write, and the engine, which resumes an
// operation from its plan, would start it again at each reconcile — and
// make its Velero object again once Velero has deleted it. Each object's
// current plan is a Secret in the OADP namespace, named for the object's
// UID: tenants cannot write there, and OADP's RBAC for its non-admin
// controller grants Secrets (it has no ConfigMaps). Secrets are read
// straight from the API server, never cached cluster-wide.
type PlanStore struct {
	// Client writes the Secrets.
	Client client.Client
	// Reader reads them (the API reader: Secrets are not in the cache).
	Reader client.Reader
	// Namespace is the OADP namespace.
	Namespace string
}

// Plan Secrets' names, data key and annotation.
const (
	planSecretKey = "plan.json"
	// PlanOfAnnotation on a plan Secret holds "<kind>/<namespace>/<name>/<uid>"
	// of the object whose plan it is.
	PlanOfAnnotation = "nacflow.oadp.openshift.io/plan-of"
)

func (p *PlanStore) key(obj v1alpha1.Object) client.ObjectKey {
	return client.ObjectKey{Namespace: p.Namespace, Name: v1alpha1.PlanSecretPrefix + string(obj.GetUID())}
}

func planOf(obj v1alpha1.Object) string {
	kind, _ := v1alpha1.KindOf(obj)
	return fmt.Sprintf("%s/%s/%s/%s", kind.Kind, obj.GetNamespace(), obj.GetName(), obj.GetUID())
}

// Load sets obj's plan to the one stored for it, if any, and returns the
// stored bytes (nil: none), which Save compares with. A Secret of that name
// made for another object is ignored. It returns an error when the API
// server cannot be read or the stored plan does not decode.
func (p *PlanStore) Load(ctx context.Context, obj v1alpha1.Object) ([]byte, error) {
	s := &corev1.Secret{}
	if err := p.Reader.Get(ctx, p.key(obj), s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the plan of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if s.Annotations[PlanOfAnnotation] != planOf(obj) {
		return nil, nil
	}
	raw := s.Data[planSecretKey]
	plan := &v1alpha1.PlanStatus{}
	if err := json.Unmarshal(raw, plan); err != nil {
		return nil, fmt.Errorf("decoding the plan of %s/%s (Secret %s): %w", obj.GetNamespace(), obj.GetName(), s.Name, err)
	}
	obj.SetPlan(plan)
	return raw, nil
}

// Save stores obj's plan unless it encodes to stored (what Load returned):
// a write only when the plan changed. It returns the API server's error.
func (p *PlanStore) Save(ctx context.Context, obj v1alpha1.Object, stored []byte) error {
	plan := obj.GetPlan()
	if plan == nil {
		return nil
	}
	raw, err := json.Marshal(plan)
	if err != nil {
		return fmt.Errorf("encoding the plan of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if bytes.Equal(raw, stored) {
		return nil
	}
	key := p.key(obj)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels:      map[string]string{v1alpha1.OADPLabel: v1alpha1.OADPLabelValue, v1alpha1.ManagedByLabel: v1alpha1.ManagedByLabelValue},
			Annotations: map[string]string{PlanOfAnnotation: planOf(obj)}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{planSecretKey: raw},
	}
	if stored == nil {
		err := p.Client.Create(ctx, s)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("storing the plan of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
			return nil
		}
	}
	// A full replace of nacflow's own Secret: it holds nothing else.
	if err := p.Client.Update(ctx, s); err != nil {
		return fmt.Errorf("storing the plan of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// Write patches obj's status (with c) from before's, the plan left out —
// the API server would prune it (and warn), and a run that changed only the
// plan costs no status request — and then stores the plan (Save): a plan a
// step behind what the status says only re-enters idempotent phases.
// Errors: the API server's.
func (p *PlanStore) Write(ctx context.Context, c client.Client, obj v1alpha1.Object, before client.Object, stored []byte) error {
	plan, old := obj.GetPlan(), before.(v1alpha1.Object)
	oldPlan := old.GetPlan()
	obj.SetPlan(nil)
	old.SetPlan(nil)
	err := patch.Status(ctx, c, obj, before)
	obj.SetPlan(plan)
	old.SetPlan(oldPlan)
	if err != nil {
		return err
	}
	return p.Save(ctx, obj, stored)
}

// Forget deletes the plan stored for obj (its finalizer is about to go). It
// returns the API server's error; none when there is nothing to delete.
func (p *PlanStore) Forget(ctx context.Context, obj v1alpha1.Object) error {
	key := p.key(obj)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := p.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the plan of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// Collect deletes the plan Secrets (PlanStore) of the OADP namespace
// whose object is gone — an object whose finalizer someone else removed,
// so that PlanStore.Forget never ran — and returns how many it deleted. The
// object is read from the API server (r): a plan is younger than its
// object, and the cache may lag. A Secret whose annotation names no NAC
// kind is left alone. It returns the first API error.
func Collect(ctx context.Context, c client.Client, r client.Reader, namespace string) (int, error) {
	list := &corev1.SecretList{}
	if err := r.List(ctx, list, client.InNamespace(namespace),
		client.MatchingLabels{v1alpha1.ManagedByLabel: v1alpha1.ManagedByLabelValue}); err != nil {
		return 0, fmt.Errorf("listing plan Secrets: %w", err)
	}
	deleted := 0
	for i := range list.Items {
		s := &list.Items[i]
		of, ok := s.Annotations[PlanOfAnnotation]
		if !ok || !strings.HasPrefix(s.Name, v1alpha1.PlanSecretPrefix) {
			continue
		}
		parts := strings.Split(of, "/")
		if len(parts) != 4 {
			continue
		}
		kind, ok := v1alpha1.KindNamed(parts[0])
		if !ok {
			continue
		}
		obj := kind.New()
		err := r.Get(ctx, client.ObjectKey{Namespace: parts[1], Name: parts[2]}, obj)
		if err == nil && string(obj.GetUID()) == parts[3] {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("reading %s %s/%s for its plan: %w", kind.Kind, parts[1], parts[2], err)
		}
		if err := c.Delete(ctx, s, client.Preconditions{UID: &s.UID}); client.IgnoreNotFound(err) != nil {
			return deleted, fmt.Errorf("deleting plan Secret %s: %w", s.Name, err)
		}
		deleted++
	}
	return deleted, nil
}
