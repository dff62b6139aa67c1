package capabilities

import (
	"fmt"
	"slices"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// With OADP's CRDs (no Blueprint, no NonAdminSchedule), the cache keeps no
// settings for the kinds not served, and keeps those of the served kinds
// and of Velero's.
func TestTrimCache(t *testing.T) {
	c := All()
	c.Served["Blueprint"], c.Served["NonAdminSchedule"], c.Served["NonAdminBackupStorageLocationRequest"] = false, false, false
	opts := c.TrimCache(cache.Options{ByObject: map[client.Object]cache.ByObject{
		&v1alpha1.Blueprint{}: {}, &v1alpha1.NonAdminSchedule{}: {}, &v1alpha1.NonAdminBackupStorageLocationRequest{}: {},
		&v1alpha1.NonAdminBackup{}: {}, &velerov1.Backup{}: {},
	}})
	var kept []string
	for obj := range opts.ByObject {
		kept = append(kept, fmt.Sprintf("%T", obj))
	}
	slices.Sort(kept)
	if want := []string{"*v1.Backup", "*v1alpha1.NonAdminBackup"}; !slices.Equal(kept, want) {
		t.Errorf("TrimCache kept %v, want %v", kept, want)
	}
}

// A location's controller needs its request kind's CRD too (Kind.Requires).
func TestRunsRequires(t *testing.T) {
	c := All()
	if !c.Runs("NonAdminBackupStorageLocation") || len(c.Limits()) != 0 {
		t.Fatalf("with nacflow's CRDs: Runs(NonAdminBackupStorageLocation) = false or limits %v", c.Limits())
	}
	c.Served["NonAdminBackupStorageLocationRequest"] = false
	if c.Runs("NonAdminBackupStorageLocation") {
		t.Error("Runs(NonAdminBackupStorageLocation) without its request's CRD")
	}
	if !c.Runs("NonAdminBackup") {
		t.Error("Runs(NonAdminBackup) = false")
	}
	want := "no NonAdminBackupStorageLocationRequest CRD: the NonAdminBackupStorageLocation controller does not run"
	if got := c.Limits(); !slices.Equal(got, []string{want}) {
		t.Errorf("Limits() = %q, want [%q]", got, want)
	}
	if got := c.Off(); !got["NonAdminBackupStorageLocation"] || got["NonAdminBackup"] {
		t.Errorf("Off() = %v", got)
	}
}
