package phases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/dpa"
	"github.com/nacflow/nacflow/engine"
)

// Settings resolves the admin's non-admin settings: *dpa.Source (flags
// given on the command line, then OADP's DataProtectionApplication). It is
// an interface so that phase functions hold no client (the safety rule):
// what it reads is the DPA of the OADP namespace, chosen by the controller,
// never by a blueprint or a tenant.
type Settings interface {
	Get(ctx context.Context) (*dpa.Settings, error)
	RequireApprovalForBSL(ctx context.Context) (bool, string, error)
	Report(ctx context.Context, setting, source string)
}

// noSettings is Settings without a DPA and without flags.
type noSettings struct{}

func (noSettings) Get(context.Context) (*dpa.Settings, error) { return nil, nil }
func (noSettings) RequireApprovalForBSL(context.Context) (bool, string, error) {
	return false, dpa.FromDefault, nil
}
func (noSettings) Report(context.Context, string, string) {}

// recheckSettings is how often a phase waiting for the admin to fix the
// DPA's settings looks again.
const recheckSettings = 10 * time.Second

// fromBlueprint names a blueprint's own args as the source of a setting.
const fromBlueprint = "blueprint args.enforce"

// enforcedSpec is one kind of spec an admin may enforce: the field of
// OADP's DataProtectionApplication holding it (spec.nonAdmin.<field>, OADP's
// enforceBackupSpec, enforceRestoreSpec and enforceBSLSpec) and its decoder,
// which fills a fresh value from the field's raw JSON.
type enforcedSpec[T any] struct {
	field  string
	raw    func(*dpa.NonAdmin) json.RawMessage
	decode func([]byte) (*T, error)
}

// The specs an admin may enforce, one entry a kind.
var (
	backupEnforcement = enforcedSpec[EnforcedBackupSpec]{"enforceBackupSpec",
		func(n *dpa.NonAdmin) json.RawMessage { return n.EnforceBackupSpec }, decodeBackupEnforce}
	restoreEnforcement = enforcedSpec[EnforcedRestoreSpec]{"enforceRestoreSpec",
		func(n *dpa.NonAdmin) json.RawMessage { return n.EnforceRestoreSpec }, decodeRestoreEnforce}
	bslEnforcement = enforcedSpec[EnforcedBSLSpec]{"enforceBSLSpec",
		func(n *dpa.NonAdmin) json.RawMessage { return n.EnforceBSLSpec }, decodeBSLEnforce}
)

// invalidSettings is a DPA field that does not decode or enforces what
// cannot be enforced: the admin must fix it, and the phase waits for that
// rather than running unenforced (waitForSettings).
type invalidSettings struct{ err error }

func (e invalidSettings) Error() string { return e.err.Error() }

// inForce returns the enforced values in force for a validate phase and
// where they come from: the blueprint's own args.enforce when it sets one
// (own non-nil), else the DPA's spec.nonAdmin.<field> (decoded strictly, as
// args are), else nil.
//
// Errors: reading the DPA (retryable), and invalidSettings, which the
// phase hands to waitForSettings.
func (k enforcedSpec[T]) inForce(ctx context.Context, s Settings, own *T) (e *T, source string, err error) {
	if s == nil {
		s = noSettings{}
	}
	if own != nil {
		s.Report(ctx, k.field, fromBlueprint)
		return own, fromBlueprint, nil
	}
	settings, err := s.Get(ctx)
	if err != nil {
		return nil, "", err
	}
	if settings == nil || len(k.raw(&settings.NonAdmin)) == 0 || string(k.raw(&settings.NonAdmin)) == "null" {
		s.Report(ctx, k.field, "none")
		return nil, "", nil
	}
	source = settings.Field(k.field)
	e, err = k.decode(k.raw(&settings.NonAdmin))
	if err != nil {
		return nil, "", invalidSettings{fmt.Errorf("%s is invalid (the admin must fix it; nothing is enforced until then, so the operation waits): %w", source, err)}
	}
	s.Report(ctx, k.field, source)
	return e, source, nil
}

// waitForSettings returns what a validate phase returns for inForce's
// error err: a Wait of recheckSettings naming the invalid DPA field, or err
// itself (retryable).
func waitForSettings(err error) (engine.Result, error) {
	var invalid invalidSettings
	if errors.As(err, &invalid) {
		return engine.Wait(invalid.Error(), recheckSettings), nil
	}
	return engine.Result{}, err
}

// withoutZeroFields returns data, a JSON object of typed's type (a pointer
// to a Velero spec struct), without the fields whose value is the zero value
// of their Go type (null, 0, "0s", "", {} for a struct, and empty lists
// and maps); a pointer set to false or 0 (snapshotVolumes: false) is not
// zero. A DPA's enforce specs follow OADP's rule, "a zero enforced value
// enforces nothing" (reflect's IsZero on the typed field): OADP's operator
// may write the typed spec back whole, zero fields included ("ttl": "0s",
// "metadata": {}), and those must not enforce anything. Fields typed does
// not know are kept, for the strict decoder to refuse.
func withoutZeroFields(data []byte, typed any) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	v := reflect.ValueOf(typed).Elem()
	for name, raw := range fields {
		f, ok := jsonField(v, name)
		if !ok {
			continue
		}
		one := reflect.New(f.Type())
		if err := json.Unmarshal(raw, one.Interface()); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if zero := one.Elem(); zero.IsZero() || (zero.Kind() == reflect.Slice || zero.Kind() == reflect.Map) && zero.Len() == 0 {
			delete(fields, name)
		}
	}
	return json.Marshal(fields)
}

// The decoders of a DPA's enforce specs: zero fields dropped
// (withoutZeroFields), then decoded strictly as a blueprint's args.enforce.

func decodeBackupEnforce(data []byte) (*EnforcedBackupSpec, error) {
	e := &EnforcedBackupSpec{}
	return e, decodeWithoutZeroFields(data, &velerov1.BackupSpec{}, e)
}

func decodeRestoreEnforce(data []byte) (*EnforcedRestoreSpec, error) {
	e := &EnforcedRestoreSpec{}
	return e, decodeWithoutZeroFields(data, &velerov1.RestoreSpec{}, e)
}

// decodeWithoutZeroFields decodes data, a DPA's enforce spec of typed's
// type, into into (strictly, its UnmarshalJSON) once its zero fields are
// dropped.
func decodeWithoutZeroFields(data []byte, typed any, into json.Unmarshaler) error {
	data, err := withoutZeroFields(data, typed)
	if err != nil {
		return err
	}
	return into.UnmarshalJSON(data)
}

func decodeBSLEnforce(data []byte) (*EnforcedBSLSpec, error) {
	data, err := withoutZeroFields(data, &velerov1.BackupStorageLocationSpec{})
	if err != nil {
		return nil, err
	}
	// objectStorage is inline in Velero's type: its fields are enforced one
	// by one, so zero ones go too.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	if os, ok := fields["objectStorage"]; ok {
		if fields["objectStorage"], err = withoutZeroFields(os, &velerov1.ObjectStorageLocation{}); err != nil {
			return nil, fmt.Errorf("objectStorage: %w", err)
		}
		if string(fields["objectStorage"]) == "{}" {
			delete(fields, "objectStorage")
		}
		if data, err = json.Marshal(fields); err != nil {
			return nil, err
		}
	}
	e := &EnforcedBSLSpec{}
	return e, e.UnmarshalJSON(data)
}

// enforcedBy returns the "; enforced by the admin (<source>): f1, f2"
// suffix of a validate phase's message, "" when nothing is enforced: the
// plan shows which source won.
func enforcedBy(source string, fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%s): %s", enforcedNote, source, strings.Join(fields, ", "))
}
