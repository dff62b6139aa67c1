package v1alpha1_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// FuzzNACObjectName: for any namespace and name (valid Kubernetes names, as
// the API server guarantees), the Velero object name keeps the whole
// NACUUID, is at most 63 characters and is a valid label value and DNS
// subdomain; it never panics on anything.
func FuzzNACObjectName(f *testing.F) {
	for _, s := range [][2]string{{"demo", "sample"}, {strings.Repeat("n", 63), strings.Repeat("m", 253)}, {"", ""}, {"a", "b.c"}, {"demo", strings.Repeat("n", 20) + ".x"}} {
		f.Add(s[0], s[1])
	}
	const id = "ce241bd0-d16b-5123-8c48-620d5cb5b409"
	f.Fuzz(func(t *testing.T, ns, name string) {
		got := v1alpha1.NACObjectName(ns, name, id)
		if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return // the API server refuses such names: only no panic matters
		}
		if len(got) > 63 || !strings.HasSuffix(got, "-"+id) {
			t.Fatalf("NACObjectName(%q, %q) = %q", ns, name, got)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Fatalf("NACObjectName(%q, %q) = %q: not a label value: %v", ns, name, got, errs)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("NACObjectName(%q, %q) = %q: not a DNS subdomain: %v", ns, name, got, errs)
		}
	})
}
