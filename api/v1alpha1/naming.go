package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nacuuidSpace is the name space of NACUUIDs derived from a NAC object's UID.
var nacuuidSpace = uuid.MustParse("6f0d3a52-3c1e-4f8e-9a52-4b7a0d6c2e11")

// NACUUIDOf returns the NACUUID of the operation of the NAC object with uid:
// a name-based (SHA-1, RFC 4122 version 5) UUID of the UID, 36 characters.
// Deriving it, rather than drawing a random one as OADP NAC does, means it
// is known before anything is written, so a crash between creating a Velero
// object and recording it can never lead to a second object; and what an
// operation owns follows from the object itself, never from its status,
// which whoever may write the status subresource can forge.
func NACUUIDOf(uid types.UID) string {
	return uuid.NewSHA1(nacuuidSpace, []byte(uid)).String()
}

// DerivedNACUUID returns the NACUUID nacflow derives for the operation of
// the NAC object obj (of a registry kind; any other object is treated as a
// kind without Kind.NACUUIDIsName): for a kind whose NACUUID is a name
// (NonAdminBackupStorageLocation), NACObjectName(namespace, name,
// NACUUIDOf(uid)) — "<namespace>-<name>-<uuid>", at most 63 characters, the
// shape of OADP NAC's GenerateNacObjectUUID, derived rather than drawn; for
// the others NACUUIDOf(uid), 36 characters.
func DerivedNACUUID(obj client.Object) string {
	id := NACUUIDOf(obj.GetUID())
	if k, ok := KindOf(obj); ok && k.NACUUIDIsName {
		return NACObjectName(obj.GetNamespace(), obj.GetName(), id)
	}
	return id
}

// OperationObjectName returns the name of the objects the operation nacuuid
// of the NAC object obj makes in the OADP namespace. For a kind whose NACUUID
// is a name (Kind.NACUUIDIsName) it is nacuuid itself — what nacflow derives
// and what OADP NAC records alike — except for a bare 36-character UUID, the
// NACUUID nacflow recorded for such kinds before, whose objects are named
// NACObjectName(namespace, name, nacuuid); for the other kinds it is
// NACObjectName(namespace, name, nacuuid).
func OperationObjectName(obj client.Object, nacuuid string) string {
	if k, ok := KindOf(obj); ok && k.NACUUIDIsName && !isBareUUID(nacuuid) {
		return nacuuid
	}
	return NACObjectName(obj.GetNamespace(), obj.GetName(), nacuuid)
}

// isBareUUID reports whether s is a UUID in its 36-character form.
func isBareUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// maxObjectNameLength is the longest name nacflow gives an object in the OADP
// namespace: 63, so that the name is also a valid label value.
const maxObjectNameLength = 63

// NACObjectName returns the name of the object created in the OADP namespace
// for the NAC object namespace/name in the operation nacuuid:
// "<namespace>-<name>-<nacuuid>", at most 63 characters. The NACUUID is kept
// whole; when the whole does not fit, name is cut first, then namespace
// (OADP NAC's naming rule), and a cut name loses the dots it ends with, so
// that the result is a DNS subdomain and a label value.
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
		// A cut that ends at a dot would put ".-" in the name, which no
		// DNS subdomain holds: the API server would refuse every object of
		// the operation.
		name = strings.TrimRight(name[:keep], ".")
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

// RestoreTestSandbox returns the name of the sandbox namespace nacflow
// restores namespace's backups into for a restore test:
// "<namespace>-rt-<8 hex digits of the SHA-256 of namespace>", at most 63
// characters (namespace cut, then a dash it ends with dropped). One name per
// tenant is what bounds restore tests to one at a time per namespace: the
// API server refuses a second create of the name. The hash keeps names of
// long namespaces sharing a prefix apart.
func RestoreTestSandbox(namespace string) string {
	sum := sha256.Sum256([]byte(namespace))
	suffix := "-rt-" + hex.EncodeToString(sum[:4])
	keep := min(len(namespace), maxObjectNameLength-len(suffix))
	return strings.TrimRight(namespace[:keep], "-") + suffix
}

// PlanSecretPrefix begins the name of the Secret in the OADP namespace that
// keeps a NAC object's plan where its CRD has no status.plan (OADP NAC's
// CRDs): "nacflow-plan-<object UID>".
const PlanSecretPrefix = "nacflow-plan-"
