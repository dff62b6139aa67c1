package phases_test

import (
	"reflect"

	. "gopkg.in/check.v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/phases"
)

type GuardedSuite struct{}

var _ = Suite(&GuardedSuite{})

// holdsClient reports whether a value of type t can hold a client.Reader
// (a client.Client included) in one of its fields, at any depth.
func holdsClient(t reflect.Type, seen map[reflect.Type]bool) bool {
	reader := reflect.TypeOf((*client.Reader)(nil)).Elem()
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	if t.Kind() == reflect.Interface {
		return t.Implements(reader) || reader.Implements(t) && t.NumMethod() > 0
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		if holdsClient(t.Field(i).Type, seen) {
			return true
		}
	}
	return false
}

// TestFunctionsHoldNoClient: phase functions reach the cluster only through
// the guarded clients of engine.Operation (the safety rule): none keeps a
// client of its own.
func (s *GuardedSuite) TestFunctionsHoldNoClient(c *C) {
	funcs := []any{
		&phases.ValidateBackupSpec{}, &phases.CreateVeleroBackup{}, &phases.WaitFor{}, &phases.SyncStatus{},
		&phases.MarkDeleting{}, &phases.CreateDeleteBackupRequest{}, &phases.DeleteObjects{}, &phases.ValidateRestoreSpec{},
		&phases.CreateVeleroRestore{}, &phases.DeleteRestoresOfBackup{}, &phases.ValidateBSLSpec{}, &phases.RequestApproval{},
		&phases.CopySecret{}, &phases.CreateVeleroBSL{}, &phases.DeleteBackupsUsingBSL{}, &phases.AdoptVeleroBackup{},
		&phases.Notify{}, &phases.LimitActiveOperations{}, &phases.ValidateDownloadRequest{}, &phases.CreateDownloadRequest{},
		&phases.VerifyBackupContents{}, &phases.ValidateScheduleSpec{}, &phases.CreateVeleroSchedule{}, &phases.WaitForTurn{},
		&phases.CheckRestoreItems{}, &phases.SyncScheduleRuns{}, &phases.PreviewRestore{},
		&phases.TestRestore{}, &phases.RemoveRestoreTest{}, &phases.MeasureUsage{}, &phases.CheckQuota{},
	}
	reg, err := phases.NewRegistry(phases.Clients{}, phases.Options{})
	c.Assert(err, IsNil)
	c.Assert(funcs, HasLen, len(reg.Names()), Commentf("a new function: add it here"))
	for _, f := range funcs {
		c.Check(holdsClient(reflect.TypeOf(f), map[reflect.Type]bool{}), Equals, false, Commentf("%T", f))
	}
	c.Check(holdsClient(reflect.TypeOf(phases.Clients{}), map[reflect.Type]bool{}), Equals, true, Commentf("the check finds a client"))
}
