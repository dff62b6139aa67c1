package restorejudge

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nacflow/nacflow/internal/policy/itemdigest"
)

// UnusableKind is why a record of verified items cannot be used.
type UnusableKind int

// The kinds of Unusable.
const (
	// RecordMissing: no such ConfigMap.
	RecordMissing UnusableKind = iota + 1
	// RecordUnreadable: the ConfigMap is not a record (Err says why).
	RecordUnreadable
	// RecordOfOtherBackup: it records another Velero Backup (RecordUID).
	RecordOfOtherBackup
	// RecordWithoutDigests: nacflow recorded no digests (Why says why:
	// more than itemdigest.MaxDigests items, contents unreadable then).
	RecordWithoutDigests
)

// Unusable says why a record of verified items cannot be used for a
// restore. Callers word it (the controller's conditions and the plugin's
// log lines say it each their own way).
type Unusable struct {
	Kind UnusableKind
	// Err is FromConfigMap's error (RecordUnreadable).
	Err error
	// RecordUID is the UID of the Backup the record is of
	// (RecordOfOtherBackup).
	RecordUID types.UID
	// Why is the record's reason for holding no digests
	// (RecordWithoutDigests).
	Why string
}

// Record returns the set of digests cm records when it is the usable
// record of the items of the Velero Backup of UID backupUID
// (docs/security.md: a restore from a bucket a tenant writes restores only
// what nacflow verified), else why not: cm nil (not found), not a record
// (itemdigest.FromConfigMap), of another Backup (by UID: one made again
// under the same name is another), or holding no digests. The
// controller (phases) and velero-plugin-nacflow both decide with it.
func Record(cm *corev1.ConfigMap, backupUID types.UID) (*itemdigest.Set, *Unusable) {
	if cm == nil {
		return nil, &Unusable{Kind: RecordMissing}
	}
	m, err := itemdigest.FromConfigMap(cm)
	switch {
	case err != nil:
		return nil, &Unusable{Kind: RecordUnreadable, Err: err}
	case m.BackupUID != backupUID:
		return nil, &Unusable{Kind: RecordOfOtherBackup, RecordUID: m.BackupUID}
	case m.Unrecorded != "":
		return nil, &Unusable{Kind: RecordWithoutDigests, Why: m.Unrecorded}
	}
	return &m.Set, nil
}
