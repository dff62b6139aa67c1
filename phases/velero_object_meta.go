package phases

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ObjectMetaArgs are extra labels and annotations a blueprint puts on the
// Velero object an operation creates (e.g. a cost centre from the tenant's
// Namespace: '{{ index .NamespaceLabels "cost-centre" }}').
type ObjectMetaArgs struct {
	// Labels to add. Keys under openshift.io/oadp, velero.io/ and
	// app.kubernetes.io/managed-by are nacflow's and Velero's: refused.
	Labels map[string]string `json:"labels,omitempty" doc:"labels to add to the Velero object (reserved: openshift.io/oadp*, velero.io/*, app.kubernetes.io/managed-by)"`
	// Annotations to add, with the same reserved keys.
	Annotations map[string]string `json:"annotations,omitempty" doc:"annotations to add, same reserved keys"`
}

// reservedPrefixes are label and annotation keys a blueprint may not set:
// they carry the ownership nacflow's safety rule relies on.
var reservedPrefixes = []string{"openshift.io/oadp", "velero.io/", "app.kubernetes.io/managed-by"}

// Validate checks that no key is reserved and that keys and label values are
// valid Kubernetes label syntax. It returns an error naming the key.
func (a ObjectMetaArgs) Validate() error {
	for _, set := range []struct {
		field string
		m     map[string]string
	}{{"labels", a.Labels}, {"annotations", a.Annotations}} {
		keys := make([]string, 0, len(set.m))
		for k := range set.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, p := range reservedPrefixes {
				if strings.HasPrefix(k, p) {
					return fmt.Errorf("%s.%s: key is reserved for nacflow and Velero (prefix %s)", set.field, k, p)
				}
			}
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return fmt.Errorf("%s.%s: %s", set.field, k, strings.Join(errs, "; "))
			}
			if set.field == "labels" {
				if errs := validation.IsValidLabelValue(set.m[k]); len(errs) > 0 {
					return fmt.Errorf("labels.%s: value %q: %s", k, set.m[k], strings.Join(errs, "; "))
				}
			}
		}
	}
	return nil
}

// apply adds a's labels and annotations to labels and annotations (which
// hold nacflow's own keys, never overwritten: Validate refused those).
func (a ObjectMetaArgs) apply(labels, annotations map[string]string) {
	for k, v := range a.Labels {
		labels[k] = v
	}
	for k, v := range a.Annotations {
		annotations[k] = v
	}
}
