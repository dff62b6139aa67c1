package phases

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DefaultProtectedNamespaces are the namespace name patterns no
// NonAdminRestore maps into by default: the cluster's own (kube-system,
// kube-public, kube-node-lease) and OpenShift's.
var DefaultProtectedNamespaces = []string{"kube-*", "openshift-*"}

// Protected names the namespaces a restore never maps into: by name
// (path.Match patterns, e.g. kube-*) or by label (Selector, nil: none).
type Protected struct {
	Names    []string
	Selector labels.Selector
}

// protects says why ns is protected ("" when it is not).
func (p Protected) protects(ns *corev1.Namespace) string {
	for _, pattern := range p.Names {
		if ok, _ := path.Match(pattern, ns.Name); ok {
			return fmt.Sprintf("its name matches %s", pattern)
		}
	}
	if p.Selector != nil && !p.Selector.Empty() && p.Selector.Matches(labels.Set(ns.Labels)) {
		return fmt.Sprintf("its labels match %s", p.Selector)
	}
	return ""
}

// ParseProtectedNames parses --protected-namespaces: comma-separated
// path.Match patterns. Errors: a malformed pattern.
func ParseProtectedNames(s string) ([]string, error) {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("namespace pattern %q: %w", p, err)
		}
		out = append(out, p)
	}
	return out, nil
}
