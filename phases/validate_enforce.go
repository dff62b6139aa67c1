package phases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// EnforcedBackupSpec is the admin's enforced values for a NonAdminBackup's
// backupSpec (seed design "admin enforced spec", OADP's
// enforceBackupSpec): a Velero BackupSpec plus the fields the admin set,
// so that "falsy" values (false, an empty list or map) are enforced too.
type EnforcedBackupSpec struct {
	// Spec holds the enforced values.
	Spec velerov1.BackupSpec
	// Fields are the JSON names of the fields the admin set, sorted.
	Fields []string
}

// EnforcedRestoreSpec is EnforcedBackupSpec for a NonAdminRestore's
// restoreSpec (OADP's enforceRestoreSpec).
type EnforcedRestoreSpec struct {
	// Spec holds the enforced values.
	Spec velerov1.RestoreSpec
	// Fields are the JSON names of the fields the admin set, sorted.
	Fields []string
}

// Fields that would break tenancy if an admin could set them for every
// tenant: they are the tenant rules' own fields.
var (
	unenforceableBackupFields = map[string]bool{
		"includedNamespaces": true, "excludedNamespaces": true, "includeClusterResources": true,
		"includedClusterScopedResources": true, "excludedClusterScopedResources": true,
		"storageLocation": true, "volumeSnapshotLocations": true,
	}
	unenforceableRestoreFields = map[string]bool{
		"backupName": true, "scheduleName": true, "includedNamespaces": true,
		"excludedNamespaces": true, "namespaceMapping": true, "includeClusterResources": true,
	}
)

// UnmarshalJSON decodes an enforce object strictly: an unknown field or a
// wrongly typed value is an error, and so is a field that cannot be enforced.
func (e *EnforcedBackupSpec) UnmarshalJSON(data []byte) error {
	var err error
	e.Fields, err = decodeEnforced(data, &e.Spec, unenforceableBackupFields)
	return err
}

// Apply enforces e on spec, in place; see applyEnforced. A nil e enforces
// nothing.
func (e *EnforcedBackupSpec) Apply(spec *velerov1.BackupSpec) error {
	if e == nil {
		return nil
	}
	return applyEnforced(spec, &e.Spec, e.Fields, "spec.backupSpec")
}

// UnmarshalJSON decodes an enforce object strictly, like
// EnforcedBackupSpec's.
func (e *EnforcedRestoreSpec) UnmarshalJSON(data []byte) error {
	var err error
	e.Fields, err = decodeEnforced(data, &e.Spec, unenforceableRestoreFields)
	return err
}

// Apply enforces e on spec, in place; see applyEnforced. A nil e enforces
// nothing.
func (e *EnforcedRestoreSpec) Apply(spec *velerov1.RestoreSpec) error {
	if e == nil {
		return nil
	}
	return applyEnforced(spec, &e.Spec, e.Fields, "spec.restoreSpec")
}

// decodeEnforced decodes data strictly into into (a pointer to a Velero
// spec) and returns the JSON names of the fields data sets, sorted. It
// returns an error for an unknown field, a wrong type, or a field in
// unenforceable.
func decodeEnforced(data []byte, into any, unenforceable map[string]bool) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	var fields, refused []string
	for k := range raw {
		if unenforceable[k] {
			refused = append(refused, k)
		}
		fields = append(fields, k)
	}
	sort.Strings(fields)
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, fmt.Errorf("enforce.%s can not be enforced: it would break tenant isolation", strings.Join(refused, ", enforce."))
	}
	return fields, nil
}

// jsonField returns the struct field of v whose JSON name is name.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// applyEnforced enforces the fields of enforced on user (pointers to the same
// struct type), in place: a field the user left empty takes the enforced
// value (whole, so a second-level field such as labelSelector is enforced as
// one value), and a field the user set to another value is refused with
// "<prefix>.<field> field value is enforced by admin user, can not override
// it" (OADP NAC's message). It returns the first refusal, in field-name
// order.
func applyEnforced(user, enforced any, fields []string, prefix string) error {
	u := reflect.ValueOf(user).Elem()
	e := reflect.ValueOf(enforced).Elem()
	for _, name := range fields {
		uf, ok := jsonField(u, name)
		if !ok {
			continue
		}
		ef, _ := jsonField(e, name)
		switch {
		case uf.IsZero():
			uf.Set(ef)
		case !equality.Semantic.DeepEqual(uf.Interface(), ef.Interface()):
			return fmt.Errorf("%s.%s field value is enforced by admin user, can not override it", prefix, name)
		}
	}
	return nil
}

// EnforcedBSLSpec is EnforcedBackupSpec for a NonAdminBackupStorageLocation's
// backupStorageLocationSpec: provider, config, accessMode, the sync and
// validation periods, and objectStorage's bucket, prefix and caCert, each
// enforced on its own.
type EnforcedBSLSpec struct {
	// Spec holds the enforced values.
	Spec velerov1.BackupStorageLocationSpec
	// Fields are the JSON names of the top-level fields the admin set, sorted
	// (objectStorage excluded: see ObjectStorageFields).
	Fields []string
	// ObjectStorageFields are the JSON names of objectStorage's fields the
	// admin set, sorted.
	ObjectStorageFields []string
}

var (
	unenforceableBSLFields           = map[string]bool{"credential": true, "default": true}
	unenforceableObjectStorageFields = map[string]bool{"caCertRef": true}
)

// UnmarshalJSON decodes an enforce object strictly, like
// EnforcedBackupSpec's; credential, default and objectStorage.caCertRef
// cannot be enforced.
func (e *EnforcedBSLSpec) UnmarshalJSON(data []byte) error {
	fields, err := decodeEnforced(data, &e.Spec, unenforceableBSLFields)
	if err != nil {
		return err
	}
	e.Fields = nil
	for _, f := range fields {
		if f != "objectStorage" {
			e.Fields = append(e.Fields, f)
		}
	}
	var raw struct {
		ObjectStorage json.RawMessage `json:"objectStorage"`
	}
	if err := json.Unmarshal(data, &raw); err != nil || raw.ObjectStorage == nil {
		return err
	}
	e.ObjectStorageFields, err = decodeEnforced(raw.ObjectStorage, &velerov1.ObjectStorageLocation{}, unenforceableObjectStorageFields)
	if err != nil {
		return fmt.Errorf("objectStorage: %w", err)
	}
	return nil
}

// Apply enforces e on spec, in place; see applyEnforced. A nil e enforces
// nothing.
func (e *EnforcedBSLSpec) Apply(spec *velerov1.BackupStorageLocationSpec) error {
	if e == nil {
		return nil
	}
	if err := applyEnforced(spec, &e.Spec, e.Fields, "spec.backupStorageLocationSpec"); err != nil {
		return err
	}
	if len(e.ObjectStorageFields) == 0 {
		return nil
	}
	if spec.ObjectStorage == nil {
		spec.ObjectStorage = &velerov1.ObjectStorageLocation{}
	}
	enforced := e.Spec.ObjectStorage
	if enforced == nil {
		enforced = &velerov1.ObjectStorageLocation{}
	}
	return applyEnforced(spec.ObjectStorage, enforced, e.ObjectStorageFields, "spec.backupStorageLocationSpec.objectStorage")
}
