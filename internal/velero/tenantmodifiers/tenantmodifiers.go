// Package tenantmodifiers reads and applies a restore's resource modifiers
// (Velero's format, applied by Velero's own code: internal/velero/
// resourcemodifiers) for nacflow's checks, so that every item of a restore
// is judged as Velero will create it, after the modifiers.
//
// The order in Velero 1.18 (pkg/restore restoreItem): Velero strips the
// item's status and most of its metadata, then runs every restore item
// action in turn — Velero's own, then velero-plugin-nacflow's — each on
// the item as the one before returned it, stripping the annotation
// velero.io/must-include-additional-items after each; it then resets a
// claim's binding, applies the resource modifiers (their conditions
// evaluated then, on the item as it is by then), sets the namespace, adds
// its labels, creates the item and writes the backup's status back with
// its own rights if velero.io/restore-status (or the restore's
// restoreStatus) asks for it. velero-plugin-nacflow therefore applies the
// modifiers itself, to a copy of each item, before deciding on it; the
// pre-check applies them to the items of the tarball.
//
// Neither can reproduce exactly what Velero's conditions will see, so a
// tenant's modifiers are tenant input held to rules that make the verdict
// independent of it (Parse): on top of Velero's validation, they may not
// change an item's kind, version, name or namespace, nor touch its status
// or Velero's status switch; they may not apply to RBAC objects,
// ServiceAccounts, Secrets, PersistentVolumes, NAC or Velero kinds; and
// they may not select items by conditions.matches or by labels of Velero's
// domain. AsCreated refuses, item by item, any change of kind, version,
// name or namespace even of modifiers Parse did not read (the admin's).
package tenantmodifiers

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gobwas/glob"
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

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/resourcemodifiers"
)

// Modifiers are a restore's parsed resource modifiers.
type Modifiers = resourcemodifiers.ResourceModifiers

// Parse reads the modifiers of ConfigMap cm as Velero does
// (GetResourceModifiersFromConfig: exactly one data key, strict YAML;
// Validate: version v1, rules with a groupResource and one kind of patch),
// then applies nacflow's rules for a tenant's modifiers, deny by default
// and whatever the items look like (Velero evaluates a rule's conditions
// on the item after its own and other plugins' changes, which nacflow
// cannot reproduce exactly, so a verdict must not depend on whether a rule
// applies). A rule is refused when:
//
//   - a JSON patch's path or from is not a JSON pointer, or names the
//     whole item ("" or "/"), its metadata, kind, apiVersion,
//     metadata.name, metadata.generateName or metadata.namespace (keys
//     compared without case); a merge or strategic patch sets kind,
//     apiVersion, metadata.name, metadata.generateName or
//     metadata.namespace, replaces metadata, is not an object or holds a
//     directive ($patch, $retainKeys, …) at its top level or in metadata:
//     an item keeps its kind, group, version, name and namespace;
//   - a patch touches the status (a JSON patch's path or from under
//     /status; a top-level status key), Velero's velero.io/restore-status
//     annotation or the whole of metadata.annotations: whether a status is
//     restored is nacflow's to decide;
//   - its conditions.groupResource (a glob, compiled as Velero does)
//     matches an RBAC kind, serviceaccounts, secrets, persistentvolumes, a
//     NAC kind or a Velero kind (ProtectedResources);
//   - it has conditions.matches, or a conditions.labelSelector that names
//     a label key of Velero's domain (velero.io and its sub-domains).
//
// Errors name the ConfigMap, the rule (resourceModifierRules[i]) and why.
func Parse(cm *corev1.ConfigMap) (*Modifiers, error) {
	m, err := ParseAsVelero(cm)
	if err != nil {
		return nil, err
	}
	for i, r := range m.ResourceModifierRules {
		if why := checkRule(r); why != "" {
			return nil, fmt.Errorf("ConfigMap %s: resourceModifierRules[%d]: %s", cm.Name, i, why)
		}
	}
	return m, nil
}

// Reasons shared by several refusals.
const (
	keepIdentity = "tenant modifiers may not change an item's kind, group, version, name or namespace"
	nacflows     = "whether a status is restored is nacflow's to decide"
	reevaluated  = "Velero evaluates it on the item after its own and other plugins' changes, which nacflow cannot reproduce exactly"
)

// checkRule returns why r breaks a rule of Parse, or "".
func checkRule(r resourcemodifiers.ResourceModifierRule) string {
	if why := checkConditions(r.Conditions); why != "" {
		return why
	}
	for _, p := range r.Patches {
		for j, path := range []string{p.From, p.Path} {
			if j == 0 && path == "" {
				continue // no from
			}
			if why := checkPointer(path); why != "" {
				return fmt.Sprintf("patch %s %q %s", p.Operation, path, why)
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
		if why := checkPatchData(d); why != "" {
			return why
		}
	}
	return ""
}

// checkConditions returns why c breaks a rule of Parse, or "".
func checkConditions(c resourcemodifiers.Conditions) string {
	// As Velero compiles it (resource_modifiers.go, match).
	g, err := glob.Compile(c.GroupResource, '.')
	if err != nil {
		return fmt.Sprintf("conditions.groupResource %q is not a valid glob: %v", c.GroupResource, err)
	}
	for _, gr := range ProtectedResources() {
		if g.Match(gr) {
			return fmt.Sprintf("conditions.groupResource %q matches %s: tenant modifiers never apply to RBAC objects, ServiceAccounts, Secrets, PersistentVolumes, NAC or Velero objects; name the resources the rule is for", c.GroupResource, gr)
		}
	}
	if len(c.Matches) > 0 {
		return fmt.Sprintf("conditions.matches: %s (annotations stripped, claims unbound, other plugins' edits): select items by groupResource, namespaces, resourceNameRegex and labelSelector only", reevaluated)
	}
	if s := c.LabelSelector; s != nil {
		var keys []string
		for k := range s.MatchLabels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, e := range s.MatchExpressions {
			keys = append(keys, e.Key)
		}
		for _, k := range keys {
			if veleroDomain(k) {
				return fmt.Sprintf("conditions.labelSelector names %s, a label of Velero's domain: %s (Velero writes its own labels)", k, reevaluated)
			}
		}
	}
	return ""
}

// veleroDomain reports whether label key k is in Velero's domain: its
// prefix (the whole key when it has none) is velero.io or a sub-domain.
func veleroDomain(k string) bool {
	prefix, _, _ := strings.Cut(strings.ToLower(k), "/")
	return prefix == "velero.io" || strings.HasSuffix(prefix, ".velero.io")
}

// ProtectedResources are the group-resources (as Velero's conditions name
// them: resource.group, the resource alone for the core group) a tenant's
// modifiers never apply to: RBAC, ServiceAccounts and their token Secrets,
// Secrets, PersistentVolumes, every NAC kind (the kind registry and the
// other kinds of group oadp.openshift.io nacflow and OADP define) and
// every kind of Velero 1.18 (its CRDs, velero.io v1 and v2alpha1).
func ProtectedResources() []string {
	out := []string{
		"roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
		"clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
		"serviceaccounts", "secrets", "persistentvolumes",
	}
	nac := []string{"blueprints", "nonadminbackupstoragelocationrequests", "tenantlocations",
		"dataprotectionapplications", "cloudstorages", "dataprotectiontests"}
	for _, k := range v1alpha1.Kinds() {
		nac = append(nac, k.Resource)
	}
	slices.Sort(nac)
	for _, r := range slices.Compact(nac) {
		out = append(out, r+"."+v1alpha1.GroupVersion.Group)
	}
	for _, r := range veleroResources {
		out = append(out, r+"."+velerov1.SchemeGroupVersion.Group)
	}
	return out
}

// veleroResources are the plural names of Velero 1.18's CRDs
// (config/crd/v1/bases and v2alpha1/bases).
var veleroResources = []string{
	"backuprepositories", "backups", "backupstoragelocations", "datadownloads", "datauploads",
	"deletebackuprequests", "downloadrequests", "podvolumebackups", "podvolumerestores", "restores",
	"schedules", "serverstatusrequests", "volumesnapshotlocations",
}

// pointer splits a JSON patch path into its decoded reference tokens;
// false when it is not a JSON pointer ("" is the whole document).
func pointer(path string) ([]string, bool) {
	if path == "" {
		return nil, true
	}
	if !strings.HasPrefix(path, "/") {
		return nil, false
	}
	tokens := strings.Split(path[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, true
}

// checkPointer returns why a JSON patch may not write or read path, or "".
func checkPointer(path string) string {
	tokens, ok := pointer(path)
	switch {
	case !ok:
		// evanphx/json-patch ignores what comes before the first "/":
		// "x/kind" is /kind.
		return "is not a JSON pointer (it must start with /)"
	case len(tokens) == 0 || tokens[0] == "" || len(tokens) == 1 && strings.EqualFold(tokens[0], "metadata"):
		if path == "/metadata" {
			// Kept as before: the namespace is the first thing it moves.
			return "would change an item's namespace: a restore's items stay in its namespace"
		}
		return "would replace the whole item or its metadata: " + keepIdentity
	}
	first := strings.ToLower(tokens[0])
	switch first {
	case "kind", "apiversion":
		return "would change an item's kind or version: " + keepIdentity
	case "status":
		return "touches the status: " + nacflows
	case "metadata":
		switch strings.ToLower(tokens[1]) {
		case "namespace":
			return "would change an item's namespace: a restore's items stay in its namespace"
		case "name", "generatename":
			return "would change an item's name: " + keepIdentity
		case "annotations":
			if len(tokens) == 2 || tokens[2] == statusAnnotation {
				return fmt.Sprintf("sets Velero's %s: %s", statusAnnotation, nacflows)
			}
		}
	}
	return ""
}

// checkPatchData returns why a merge or strategic patch may not be applied,
// or "".
func checkPatchData(d string) string {
	var v any
	if err := yaml.Unmarshal([]byte(d), &v); err != nil {
		return fmt.Sprintf("patchData is not a YAML or JSON object: %v", err)
	}
	patch, ok := v.(map[string]any)
	if !ok {
		return "patchData is not an object"
	}
	for _, k := range slices.Sorted(maps.Keys(patch)) {
		switch lk := strings.ToLower(k); {
		case strings.HasPrefix(k, "$"):
			return fmt.Sprintf("patchData has the directive %s at its top level: %s", k, keepIdentity)
		case lk == "kind" || lk == "apiversion":
			return fmt.Sprintf("patchData sets %s: %s", k, keepIdentity)
		case lk == "status":
			return fmt.Sprintf("patchData sets %s: %s", k, nacflows)
		case lk == "metadata":
			if why := checkMetadataPatch(patch[k]); why != "" {
				return why
			}
		}
	}
	return ""
}

// checkMetadataPatch returns why a merge or strategic patch's metadata may
// not be applied, or "".
func checkMetadataPatch(md any) string {
	mdm, ok := md.(map[string]any)
	if !ok {
		return "patchData replaces metadata: a restore's items keep their namespace"
	}
	for _, k := range slices.Sorted(maps.Keys(mdm)) {
		switch lk := strings.ToLower(k); {
		case strings.HasPrefix(k, "$"):
			return fmt.Sprintf("patchData has the directive %s in metadata: %s", k, keepIdentity)
		case lk == "namespace":
			return "patchData sets metadata.namespace: a restore's items stay in its namespace"
		case lk == "name" || lk == "generatename":
			return fmt.Sprintf("patchData sets metadata.%s: %s", k, keepIdentity)
		case lk == "annotations":
			an, isMap := mdm[k].(map[string]any)
			if !isMap {
				return fmt.Sprintf("patchData replaces metadata.annotations, %s among them: %s", statusAnnotation, nacflows)
			}
			if _, set := an[statusAnnotation]; set {
				return fmt.Sprintf("patchData sets Velero's %s: %s", statusAnnotation, nacflows)
			}
			for _, a := range slices.Sorted(maps.Keys(an)) {
				if strings.HasPrefix(a, "$") {
					// $patch: replace (or delete) drops the annotation
					// velero-plugin-nacflow sets.
					return fmt.Sprintf("patchData has the directive %s in metadata.annotations, which could drop Velero's %s: %s", a, statusAnnotation, nacflows)
				}
			}
		}
	}
	return ""
}

// ParseAsVelero reads the modifiers of cm as Velero does, without
// nacflow's rules for a tenant's modifiers (the admin's own, or a copy
// already checked): for velero-plugin-nacflow, which must apply exactly
// what Velero applies. Errors: Velero's, or that Velero's scheme (which
// strategic merge patches need) could not be built.
func ParseAsVelero(cm *corev1.ConfigMap) (*Modifiers, error) {
	m, err := resourcemodifiers.GetResourceModifiersFromConfig(cm)
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s as Velero's resource modifiers (one data key, YAML, version v1): %v", cm.Name, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: Velero refuses these resource modifiers: %v", cm.Name, err)
	}
	// Apply needs the scheme: a modifier that cannot be applied is refused
	// here, where the caller handles errors, not item by item.
	if _, err := veleroScheme(); err != nil {
		return nil, err
	}
	return m, nil
}

// statusAnnotation is Velero's per-item switch for restoring a status
// (restorepolicy.StatusRestoreAnnotation), and its JSON pointer spelling.
const (
	statusAnnotation     = "velero.io/restore-status"
	statusAnnotationPath = "velero.io~1restore-status"
)

// veleroScheme returns the Velero server's scheme (pkg/cmd/server: velero
// v1 and v2alpha1, core, apps, batch; the snapshot kinds a tenant's restore
// never holds): strategic merge patches apply only to its kinds, as in
// Velero. It is built once, on first use; the error is AddToScheme's, and
// every later call returns the same one. Nothing here panics: ParseAsVelero
// returns the error, and Apply reports it as a failed rule.
var veleroScheme = sync.OnceValues(func() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{velerov1.AddToScheme, velerov2alpha1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building Velero's scheme: %w", err)
		}
	}
	return s, nil
})

// Apply returns a copy of obj as Velero creates it after m: Velero's
// ApplyResourceModifierRules with the item's group-resource as it was
// backed up (gr; rules match on it and on the item's original namespace).
// changed reports whether anything changed; errs are the rules Velero
// would report and skip (the item is still created, without them), or the
// one error of building Velero's scheme (which ParseAsVelero reports first).
func Apply(m *Modifiers, obj map[string]any, gr schema.GroupResource) (out map[string]any, changed bool, errs []error) {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	scheme, err := veleroScheme()
	if err != nil {
		return u.Object, false, []error{err}
	}
	before := u.DeepCopy()
	log := logrus.New()
	log.Out = io.Discard
	errs = m.ApplyResourceModifierRules(u, gr.String(), scheme, log)
	return u.Object, !equal(before, u), errs
}

func equal(a, b *unstructured.Unstructured) bool {
	x, err1 := a.MarshalJSON()
	y, err2 := b.MarshalJSON()
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// AsCreated returns item obj of group-resource gr as Velero will create it
// under m (nil m: as it is), with its group-resource (always gr: a change
// of kind is refused), or why it must not be restored: a modifier changed
// its kind, group, version, name or namespace (refused for any modifiers,
// the admin's too: nacflow never judges an item as another than the one
// the backup holds), changed a PersistentVolume (Velero creates volumes
// with its own rights: only its volume restore may make one), or failed
// on it (deny by default: Velero would create it without that rule).
// Errors: none; every refusal is a reason.
func AsCreated(m *Modifiers, obj map[string]any, gr schema.GroupResource) (map[string]any, schema.GroupResource, string) {
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
		return nil, gr, fmt.Sprintf("a resource modifier makes it a %s (it was a %s): a restore's items keep their kind, group and version", now, old)
	}
	if after.GetName() != before.GetName() {
		return nil, gr, fmt.Sprintf("a resource modifier renames it %q: a restore's items keep their name", after.GetName())
	}
	if after.GetGenerateName() != before.GetGenerateName() {
		return nil, gr, fmt.Sprintf("a resource modifier gives it generateName %q: a restore's items keep their name", after.GetGenerateName())
	}
	return out, gr, ""
}
