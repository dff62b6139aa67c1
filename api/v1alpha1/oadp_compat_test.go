package v1alpha1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "gopkg.in/check.v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The OADP schema compatibility test: every field that OADP's Non-Admin Controller
// declares under spec and status must exist in nacflow's CRD with the same type, so
// that manifests and clients written for OADP NAC work against nacflow. nacflow may
// add fields; it may only drop or retype one with an entry in oadpDeliberate.

const (
	oadpCRDDir    = "testdata/oadp"          // vendored upstream CRDs, see its README.md
	nacflowCRDDir = "../../config/crd/bases" // nacflow's generated CRDs
	compatVersion = "v1alpha1"
)

// oadpCompatPlurals lists the OADP NAC kinds nacflow implements, by plural.
var oadpCompatPlurals = []string{
	"nonadminbackups",
	"nonadminrestores",
	"nonadminbackupstoragelocations",
	"nonadminbackupstoragelocationrequests",
	"nonadmindownloadrequests",
}

// oadpDeliberate lists differences from OADP that nacflow makes on purpose. path
// matches the field itself and every field nested under it, so name the path the
// failure reports (or one above it): the fields nested under a reported difference are
// only counted. Every entry must still match a difference: remove it when nacflow
// catches up. Empty: nacflow has every field OADP defines, with its type.
var oadpDeliberate = []struct {
	plural, path, reason string
}{}

// schemaField is one field of a CRD schema: its type as "type", "type/format" or
// "int-or-string", with "+preserve-unknown-fields" when the schema keeps unknown fields.
type schemaField struct {
	path, typ string
}

// schemaDiff is one OADP field that nacflow lacks or types differently.
type schemaDiff struct {
	path, oadpType, nacflowType string // nacflowType "" when missing
	nested                      int    // OADP fields under path not listed separately
}

func (d schemaDiff) String() string {
	nac := d.nacflowType
	if nac == "" {
		nac = "(missing)"
	}
	s := fmt.Sprintf("%s: OADP %s, nacflow %s", d.path, d.oadpType, nac)
	if d.nested > 0 {
		s += fmt.Sprintf(" (+%d nested OADP fields)", d.nested)
	}
	return s
}

type OADPCompatSuite struct{}

var _ = Suite(&OADPCompatSuite{})

func (s *OADPCompatSuite) TestSchemaCompatible(c *C) {
	used := make([]bool, len(oadpDeliberate))
	for _, plural := range oadpCompatPlurals {
		file := "oadp.openshift.io_" + plural + ".yaml"
		oadp, err := loadCRDFields(filepath.Join(oadpCRDDir, file))
		c.Assert(err, IsNil)
		c.Assert(oadp["spec"], Equals, "object", Commentf("%s: the OADP schema has no spec", file))
		nac, err := loadCRDFields(filepath.Join(nacflowCRDDir, file))
		c.Assert(err, IsNil)

		var unexplained []string
		for _, d := range diffFields(oadp, nac) {
			explained := false
			for i, e := range oadpDeliberate {
				if e.plural == plural && pathWithin(d.path, e.path) {
					used[i], explained = true, true
				}
			}
			if !explained {
				unexplained = append(unexplained, d.String())
			}
		}
		if len(unexplained) > 0 {
			c.Errorf("%s: %d OADP fields missing or typed differently in nacflow "+
				"(fix the API type, or add a reasoned entry to oadpDeliberate):\n\t%s",
				plural, len(unexplained), strings.Join(unexplained, "\n\t"))
		}
	}
	for i, e := range oadpDeliberate {
		c.Check(used[i], Equals, true, Commentf("oadpDeliberate entry %s %s matches no difference any more: remove it",
			e.plural, e.path))
	}
}

// TestWalker pins the path and type notation the compatibility test relies on.
func (s *OADPCompatSuite) TestWalker(c *C) {
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"ttl":    {Type: "string"},
			"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			"hooks": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"port": {XIntOrString: true}},
			}}},
		}},
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"started": {Type: "string", Format: "date-time"},
			"raw":     {Type: "object", XPreserveUnknownFields: ptrTo(true)},
		}},
		"kind": {Type: "string"}, // not under spec or status: ignored
	}}
	got := map[string]string{}
	collectFields(schema, "", got)
	c.Check(got, DeepEquals, map[string]string{
		"spec":              "object",
		"spec.ttl":          "string",
		"spec.labels":       "object",
		"spec.labels{}":     "string",
		"spec.hooks":        "array",
		"spec.hooks[]":      "object",
		"spec.hooks[].port": "int-or-string",
		"status":            "object",
		"status.started":    "string/date-time",
		"status.raw":        "object+preserve-unknown-fields",
	})

	nac := map[string]string{"spec": "object", "spec.ttl": "integer", "status": "object", "status.started": "string/date-time"}
	var diffs []string
	for _, d := range diffFields(got, nac) {
		diffs = append(diffs, d.String())
	}
	c.Check(diffs, DeepEquals, []string{
		"spec.hooks: OADP array, nacflow (missing) (+2 nested OADP fields)",
		"spec.labels: OADP object, nacflow (missing) (+1 nested OADP fields)",
		"spec.ttl: OADP string, nacflow integer",
		"status.raw: OADP object+preserve-unknown-fields, nacflow (missing)",
	})
	c.Check(pathWithin("spec.hooks[].port", "spec.hooks"), Equals, true)
	c.Check(pathWithin("spec.hooksExtra", "spec.hooks"), Equals, false)
}

func ptrTo[T any](v T) *T { return &v }

// loadCRDFields reads the CRD YAML at path and returns the fields under spec and
// status of its compatVersion schema, keyed by path (see collectFields). It returns
// an error when the file cannot be read or parsed, or has no such version schema.
func loadCRDFields(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CRD: %w", err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, fmt.Errorf("parse CRD %s: %w", path, err)
	}
	if crd.Spec.Group != "oadp.openshift.io" {
		return nil, fmt.Errorf("CRD %s: group %q, want oadp.openshift.io", path, crd.Spec.Group)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != compatVersion {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD %s: version %s has no openAPIV3Schema", path, compatVersion)
		}
		fields := map[string]string{}
		collectFields(v.Schema.OpenAPIV3Schema, "", fields)
		return fields, nil
	}
	return nil, fmt.Errorf("CRD %s: no version %s", path, compatVersion)
}

// collectFields adds to fields every field of schema whose path starts with spec or
// status. Paths join property names with "."; an array's items add "[]" and a map's
// values (additionalProperties) add "{}", e.g. "status.veleroBackup.status.phase",
// "spec.backupSpec.hooks.resources[].name", "spec.backupSpec.labelSelector.matchLabels{}".
func collectFields(schema *apiextensionsv1.JSONSchemaProps, path string, fields map[string]string) {
	if path != "" {
		fields[path] = schemaType(schema)
	}
	for name, prop := range schema.Properties {
		if path == "" && name != "spec" && name != "status" {
			continue
		}
		child := name
		if path != "" {
			child = path + "." + name
		}
		collectFields(&prop, child, fields)
	}
	if schema.Items != nil {
		if schema.Items.Schema != nil {
			collectFields(schema.Items.Schema, path+"[]", fields)
		}
		for i := range schema.Items.JSONSchemas {
			collectFields(&schema.Items.JSONSchemas[i], fmt.Sprintf("%s[%d]", path, i), fields)
		}
	}
	if ap := schema.AdditionalProperties; ap != nil && ap.Schema != nil {
		collectFields(ap.Schema, path+"{}", fields)
	}
}

// schemaType returns the type notation of one field: "int-or-string" for
// x-kubernetes-int-or-string, else its type, with "/format" when a format is set and
// "+preserve-unknown-fields" when x-kubernetes-preserve-unknown-fields is true.
func schemaType(s *apiextensionsv1.JSONSchemaProps) string {
	t := s.Type
	if s.XIntOrString {
		t = "int-or-string"
	}
	if s.Format != "" {
		t += "/" + s.Format
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		t += "+preserve-unknown-fields"
	}
	if t == "" {
		t = "(untyped)"
	}
	return t
}

// diffFields returns, sorted by path, the OADP fields that nacflow lacks or types
// differently. A field under a reported one is folded into its nested count.
func diffFields(oadp, nacflow map[string]string) []schemaDiff {
	paths := make([]string, 0, len(oadp))
	for p := range oadp {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var diffs []schemaDiff
	for _, p := range paths {
		nacType, ok := nacflow[p]
		if ok && nacType == oadp[p] {
			continue
		}
		if i := ancestorDiff(diffs, p); i >= 0 {
			diffs[i].nested++
			continue
		}
		diffs = append(diffs, schemaDiff{path: p, oadpType: oadp[p], nacflowType: nacType})
	}
	return diffs
}

// ancestorDiff returns the index of the diff that path is nested under, or -1. It
// searches all of diffs: in sorted order "a.b[]" follows "a.b2", so the parent of a
// path is not always the last diff.
func ancestorDiff(diffs []schemaDiff, path string) int {
	for i := range diffs {
		if pathWithin(path, diffs[i].path) {
			return i
		}
	}
	return -1
}

// pathWithin reports whether path is prefix itself or a field nested under it.
func pathWithin(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	rest := path[len(prefix):]
	return rest == "" || rest[0] == '.' || rest[0] == '[' || rest[0] == '{'
}
