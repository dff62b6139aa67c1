package phases

import (
	"encoding/json"
	"fmt"
)

// MaxSpecBytes bounds a tenant's backupSpec, restoreSpec or
// backupStorageLocationSpec, JSON-encoded (bytes). The spec is copied into
// the Velero object and mirrored into the NAC object's status, so an
// oversized one would make the status write fail against etcd's 1.5 MiB
// object limit on every retry; refusing it up front names the field instead.
// Real specs are a few KiB.
const MaxSpecBytes = 256 << 10

// checkTenantSpec returns a refusal naming field when spec, a tenant's
// spec, is missing ("<field> is required") or, JSON-encoded, longer than
// MaxSpecBytes: the first rules of every validate phase.
func checkTenantSpec[T any](field string, spec *T) error {
	if spec == nil {
		return fmt.Errorf("%s is required", field)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if len(raw) > MaxSpecBytes {
		return fmt.Errorf("%s is %d bytes; at most %d are accepted", field, len(raw), MaxSpecBytes)
	}
	return nil
}
