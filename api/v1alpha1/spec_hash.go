package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
)

// ConditionSpecChanged is True on a NonAdminBackup or NonAdminRestore whose
// spec.backupSpec or spec.restoreSpec changed after nacflow validated it:
// the change is not acted on (OADP's design: a request's spec is read once).
// Absent otherwise. nacflow's condition.
const ConditionSpecChanged = "SpecChanged"

// ReasonSpecImmutable is the reason of SpecChanged=True and of its Warning
// event.
const ReasonSpecImmutable = "SpecImmutable"

// SpecHash returns the hex SHA-256 of spec (a Velero BackupSpec or
// RestoreSpec) encoded from its Go type, 64 characters; "" for a nil
// spec. Fields another client writes with their zero value — OADP NAC's
// updates add "metadata: {}", "hooks: {}" and the like — decode to the
// same Go value and so do not change the hash. encoding/json writes
// struct fields in order and map keys sorted, so the hash is stable.
func SpecHash(spec any) string {
	b, err := json.Marshal(spec)
	if err != nil || string(b) == "null" {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// AcceptedBackupSpec returns the BackupSpec nacflow acts on for nab: the
// one its validation accepted, admin-enforced values applied
// (status.veleroBackup.spec, which tenants cannot write), or
// spec.backupSpec before any validation recorded one. nil when neither is
// set.
func (nab *NonAdminBackup) AcceptedBackupSpec() *velerov1.BackupSpec {
	if vb := nab.Status.VeleroBackup; vb != nil && vb.Spec != nil {
		return vb.Spec
	}
	return nab.Spec.BackupSpec
}

// AcceptedRestoreSpec returns the RestoreSpec nacflow acts on for nar: the
// one its validation accepted (status.veleroRestore.spec; backupName still
// names the NonAdminBackup), or spec.restoreSpec before any validation
// recorded one. nil when neither is set.
func (nar *NonAdminRestore) AcceptedRestoreSpec() *velerov1.RestoreSpec {
	if vr := nar.Status.VeleroRestore; vr != nil && vr.Spec != nil {
		return vr.Spec
	}
	return nar.Spec.RestoreSpec
}
