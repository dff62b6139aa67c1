// Package tenantmodifiers reads and applies a restore's resource modifiers
// (Velero's format, applied by Velero's own code: internal/velero/
// resourcemodifiers) for nacflow's checks, so that every item of a restore
// is judged as Velero will create it, after the modifiers. Velero applies
// them after restore item actions (Velero 1.18 pkg/restore restoreItem),
// so velero-plugin-nacflow applies them itself to a copy of each item
// before deciding on it.
//
// A tenant's modifiers are tenant input: on top of Velero's validation,
// Parse refuses any patch that could move an item to another namespace.
package tenantmodifiers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/internal/velero/resourcemodifiers"
)

// Modifiers are a restore's parsed resource modifiers.
type Modifiers = resourcemodifiers.ResourceModifiers

// Parse reads the modifiers of ConfigMap cm as Velero does
// (GetResourceModifiersFromConfig: exactly one data key, strict YAML;
// Validate: version v1, rules with a groupResource and one kind of patch)
// and refuses patches that touch metadata.namespace or replace the whole
// object or its metadata (JSON patches' path or from; merge and strategic
// patches' metadata.namespace or a null metadata): Velero sets a
// namespaced item's namespace after the modifiers, but a tenant's
// modifiers that try to move an item are refused outright. Errors say
// which rule, and why.
func Parse(cm *corev1.ConfigMap) (*Modifiers, error) {
	m, err := ParseAsVelero(cm)
	if err != nil {
		return nil, err
	}
	for i, r := range m.ResourceModifierRules {
		for _, p := range r.Patches {
			for j, path := range []string{p.Path, p.From} {
				if j == 1 && path == "" {
					continue // no from
				}
				if movesNamespace(path) {
					return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: patch %s %q would change an item's namespace: a restore's items stay in its namespace", cm.Name, i, p.Operation, path)
				}
				if path == "/metadata/annotations" || strings.Contains(path, statusAnnotationPath) {
					return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: patch %s %q sets Velero's %s: whether a status is restored is nacflow's to decide", cm.Name, i, p.Operation, path, statusAnnotation)
				}
			}
		}
		var data []string
		for _, p := range r.MergePatches {
			data = append(data, p.PatchData)
		}
		for _, p := range r.StrategicPatches {
			data = append(data, p.PatchData)
		}
		for _, d := range data {
			var patch map[string]any
			if err := yaml.Unmarshal([]byte(d), &patch); err != nil {
				return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: patchData is not a YAML or JSON object: %v", cm.Name, i, err)
			}
			md, has := patch["metadata"]
			if !has {
				continue
			}
			mdm, ok := md.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: patchData replaces metadata: a restore's items keep their namespace", cm.Name, i)
			}
			if _, ns := mdm["namespace"]; ns {
				return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: patchData sets metadata.namespace: a restore's items stay in its namespace", cm.Name, i)
			}
			an, isMap := mdm["annotations"].(map[string]any)
			if _, has := mdm["annotations"]; has && !isMap {
				return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: patchData replaces metadata.annotations, %s among them: whether a status is restored is nacflow's to decide", cm.Name, i, statusAnnotation)
			}
			if _, set := an[statusAnnotation]; set {
				return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: patchData sets Velero's %s: whether a status is restored is nacflow's to decide", cm.Name, i, statusAnnotation)
			}
		}
	}
	return m, nil
}

// ParseAsVelero reads the modifiers of cm as Velero does, without
// nacflow's rules for a tenant's modifiers (the admin's own, or a copy
// already checked): for velero-plugin-nacflow, which must apply exactly
// what Velero applies. Errors: Velero's.
func ParseAsVelero(cm *corev1.ConfigMap) (*Modifiers, error) {
	m, err := resourcemodifiers.GetResourceModifiersFromConfig(cm)
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s as Velero's resource modifiers (one data key, YAML, version v1): %v", cm.Name, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: Velero refuses these resource modifiers: %v", cm.Name, err)
	}
	return m, nil
}

// statusAnnotation is Velero's per-item switch for restoring a status
// (restorepolicy.StatusRestoreAnnotation), and its JSON pointer spelling.
const (
	statusAnnotation     = "velero.io/restore-status"
	statusAnnotationPath = "velero.io~1restore-status"
)

// movesNamespace reports whether a JSON patch path touches the namespace:
// the namespace itself, the metadata or the whole object.
func movesNamespace(path string) bool {
	return path == "" || path == "/" || path == "/metadata" || strings.HasPrefix(path, "/metadata/namespace")
}

// scheme is the Velero server's (pkg/cmd/server: velero v1 and v2alpha1,
// core, apps, batch; the snapshot kinds a tenant's restore never holds):
// strategic merge patches apply only to its kinds, as in Velero.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{velerov1.AddToScheme, velerov2alpha1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// Apply returns a copy of obj as Velero creates it after m: Velero's
// ApplyResourceModifierRules with the item's group-resource as it was
// backed up (gr; rules match on it and on the item's original namespace).
// changed reports whether anything changed; errs are the rules Velero
// would report and skip (the item is still created, without them).
func Apply(m *Modifiers, obj map[string]any, gr schema.GroupResource) (out map[string]any, changed bool, errs []error) {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	before := u.DeepCopy()
	log := logrus.New()
	log.Out = discard{}
	errs = m.ApplyResourceModifierRules(u, gr.String(), scheme, log)
	return u.Object, !equal(before, u), errs
}

func equal(a, b *unstructured.Unstructured) bool {
	x, err1 := a.MarshalJSON()
	y, err2 := b.MarshalJSON()
	return err1 == nil && err2 == nil && string(x) == string(y)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// AsCreated returns item obj of group-resource gr as Velero will create it
// under m (nil m: as it is), with the group-resource Velero creates it as
// (re-resolved with resourceFor when a modifier changed its apiVersion or
// kind, as Velero does), or why it must not be restored: a modifier moved
// it to another namespace, changed a PersistentVolume (Velero creates
// volumes with its own rights: only its volume restore may make one), made
// it a kind of no known resource or of another group under the same kind,
// or failed on it (deny by default: Velero would create it without that
// rule). Errors: none; every refusal is a reason.
func AsCreated(m *Modifiers, obj map[string]any, gr schema.GroupResource, resourceFor func(schema.GroupVersionKind) (schema.GroupResource, error)) (map[string]any, schema.GroupResource, string) {
	if m == nil {
		return obj, gr, ""
	}
	out, changed, errs := Apply(m, obj, gr)
	if len(errs) > 0 {
		return nil, gr, fmt.Sprintf("a resource modifier failed on it (%v): Velero would create it without that rule", errors.Join(errs...))
	}
	if !changed {
		return obj, gr, ""
	}
	if gr == (schema.GroupResource{Resource: "persistentvolumes"}) {
		return nil, gr, "a resource modifier changes this PersistentVolume: a restore made for a tenant creates volumes only through Velero's volume restore"
	}
	before, after := &unstructured.Unstructured{Object: obj}, &unstructured.Unstructured{Object: out}
	if after.GetNamespace() != before.GetNamespace() {
		return nil, gr, fmt.Sprintf("a resource modifier moves it to namespace %q", after.GetNamespace())
	}
	if old, now := before.GroupVersionKind(), after.GroupVersionKind(); old != now {
		if now.Kind == old.Kind && now.Group != old.Group {
			return nil, gr, fmt.Sprintf("a resource modifier changes its group from %q to %q but not its kind (Velero would create it under the old resource name)", old.Group, now.Group)
		}
		ngr, err := resourceFor(now)
		if err != nil {
			return nil, gr, fmt.Sprintf("a resource modifier makes it a %s, which the cluster does not serve: %v", now, err)
		}
		gr = ngr
	}
	return out, gr, ""
}
