package phases_test

import (
	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/phases"
)

type LastingSuite struct{}

var _ = Suite(&LastingSuite{})

// TestKeptMessages: through the registry the runner compacts with, the
// messages that are the only record of something stay; the plain ones of
// the same functions, and every message of a function with no rule, go.
func (s *LastingSuite) TestKeptMessages(c *C) {
	reg, err := phases.NewRegistry(phases.Clients{}, phases.Options{})
	c.Assert(err, IsNil)
	for _, tc := range []struct {
		fn, msg string
		keep    bool
	}{
		{"ValidateBackupSpec", "backupSpec accepted", false},
		{"ValidateBackupSpec", "backupSpec accepted; enforced by the admin (blueprint args.enforce): ttl", true},
		{"ValidateRestoreSpec", "restoreSpec accepted; enforced by the admin (blueprint args.enforce): restorePVs", true},
		{"ValidateBSLSpec", "location accepted; enforced by the admin (x): objectStorage.prefix", true},
		{"CreateVeleroBackup", "Created Velero Backup openshift-adp/b", false},
		{"CreateVeleroBackup", "Adopted Velero Backup openshift-adp/b", true},
		{"CreateVeleroRestore", "Created Velero Restore openshift-adp/r of Velero Backup b", false},
		{"CreateVeleroRestore", "Created Velero Restore openshift-adp/r of Velero Backup b; PersistentVolumes excluded: ...", true},
		{"CreateDeleteBackupRequest", `Created Velero DeleteBackupRequest openshift-adp/b (status.veleroBackup.name "x" corrected: this operation's Velero Backup is b)`, true},
		{"CreateDeleteBackupRequest", "Created Velero DeleteBackupRequest openshift-adp/b", false},
		{"AdoptVeleroBackup", "Adopted Velero Backup openshift-adp/b (created nothing)", true},
		{"CheckRestoreItems", "not checked: --restore-precheck=false", true},
		{"CheckRestoreItems", "12 items checked", false},
		{"MeasureUsage", "not measured: Velero did not serve the contents of Backup b within 1m0s", true},
		{"MeasureUsage", "Velero Backup b takes 10 bytes: contents 10, volume data 0", false},
		{"PreviewRestore", "preview: 3 items", true},
		{"WaitFor", "Velero Backup b is Completed", false},
		{"WaitFor", "Velero could not delete Backup b (going on: forced deletion): gone", true},
		{"Notify", "the admin says hello", true},
		{"SyncStatus", "Mirrored Velero Backup b (Completed)", false},
		{"VerifyBackupContents", "4 items of Velero Backup b checked: all belong to namespace demo", false},
		{"NoSuchFunc", "Adopted", false},
	} {
		c.Check(reg.KeepsMessage(tc.fn, tc.msg), Equals, tc.keep, Commentf("%s: %q", tc.fn, tc.msg))
	}
}
