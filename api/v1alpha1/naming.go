package v1alpha1

import "strings"

// maxObjectNameLength is the longest name nacflow gives an object in the OADP
// namespace: 63, so that the name is also a valid label value.
const maxObjectNameLength = 63

// NACObjectName returns the name of the object created in the OADP namespace
// for the NAC object namespace/name in the operation nacuuid:
// "<namespace>-<name>-<nacuuid>", at most 63 characters. The NACUUID is kept
// whole; when the whole does not fit, name is cut first, then namespace
// (OADP NAC's naming rule).
func NACObjectName(namespace, name, nacuuid string) string {
	budget := maxObjectNameLength - len(nacuuid) - 2
	if budget < 0 {
		budget = 0
	}
	if len(namespace)+len(name) > budget {
		keep := budget - len(namespace)
		if keep < 0 {
			keep = 0
		}
		name = name[:keep]
	}
	if len(namespace) > budget {
		namespace = namespace[:budget]
	}
	n := namespace + "-" + name + "-" + nacuuid
	if len(n) > maxObjectNameLength {
		n = n[:maxObjectNameLength]
	}
	return strings.ToLower(n)
}
