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

// unenforceableBackupFields would break tenancy if an admin could set them
// for every tenant: they are the tenant rules' own fields.
var unenforceableBackupFields = map[string]bool{
	"includedNamespaces": true, "excludedNamespaces": true, "includeClusterResources": true,
	"includedClusterScopedResources": true, "excludedClusterScopedResources": true,
	"storageLocation": true, "volumeSnapshotLocations": true,
}

// UnmarshalJSON decodes an enforce object strictly: an unknown field or a
// wrongly typed value is an error, and so is a field that cannot be enforced.
func (e *EnforcedBackupSpec) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e.Spec); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e.Fields = e.Fields[:0]
	var refused []string
	for k := range raw {
		if unenforceableBackupFields[k] {
			refused = append(refused, k)
		}
		e.Fields = append(e.Fields, k)
	}
	sort.Strings(e.Fields)
	if len(refused) > 0 {
		sort.Strings(refused)
		return fmt.Errorf("enforce.%s can not be enforced: it would break tenant isolation", strings.Join(refused, ", enforce."))
	}
	return nil
}

// jsonField returns the struct field of v (a BackupSpec value) whose JSON
// name is name.
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

// Apply enforces e on spec, in place: a field the user left empty takes the
// enforced value (whole, so a second-level field such as labelSelector is
// enforced as one value), and a field the user set to another value is
// refused with "spec.backupSpec.<field> field value is enforced by admin
// user, can not override it" (OADP NAC's message). It returns the first
// refusal, in field-name order.
func (e *EnforcedBackupSpec) Apply(spec *velerov1.BackupSpec) error {
	if e == nil {
		return nil
	}
	user := reflect.ValueOf(spec).Elem()
	enforced := reflect.ValueOf(&e.Spec).Elem()
	for _, name := range e.Fields {
		uf, ok := jsonField(user, name)
		if !ok {
			continue
		}
		ef, _ := jsonField(enforced, name)
		switch {
		case uf.IsZero():
			uf.Set(ef)
		case !equality.Semantic.DeepEqual(uf.Interface(), ef.Interface()):
			return fmt.Errorf("spec.backupSpec.%s field value is enforced by admin user, can not override it", name)
		}
	}
	return nil
}
