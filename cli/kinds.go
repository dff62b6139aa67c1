package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// groupBuilders holds the builder of each NAC kind's command group, by kind
// name: each builder's file adds its own at init (addGroup), as a kind's
// types file adds its registry entry, so that which kinds have a group is
// the registry's word alone (Kind.Command; TestTenantGroups checks that
// every such kind has a builder).
var groupBuilders = map[string]func(o *Options, admin bool) *cobra.Command{}

// addGroup adds build, the builder of T's command group, to groupBuilders.
// A T the registry lacks adds nothing (its group would have no name):
// TestTenantGroups finds it.
func addGroup[T v1alpha1.Object](build func() *tenantKind[T]) {
	kind, err := v1alpha1.KindFor[T]()
	if err != nil {
		return
	}
	groupBuilders[kind.Kind] = func(o *Options, admin bool) *cobra.Command {
		k := build()
		cmd := k.command(o)
		if admin {
			for _, sub := range k.admin {
				cmd.AddCommand(sub(o))
			}
		}
		return cmd
	}
}

// tenantGroups returns fresh trees of the command groups of the NAC kinds
// that have one (v1alpha1.Kind.Command), in registry order; with admin,
// each has the admin's subgroups too (kubectl nac's tree; OADP's nonadmin
// words have none). A kind with a Command but no builder (a build defect)
// gets a group that says so when run.
func tenantGroups(o *Options, admin bool) []*cobra.Command {
	var groups []*cobra.Command
	for _, k := range v1alpha1.Kinds() {
		if k.Command == "" {
			continue
		}
		build, ok := groupBuilders[k.Kind]
		if !ok {
			err := fmt.Errorf("kubectl nac has no builder for the %s command group (%s)", k.Command, k.Kind)
			groups = append(groups, &cobra.Command{Use: k.Command, RunE: func(*cobra.Command, []string) error { return err }})
			continue
		}
		groups = append(groups, build(o, admin))
	}
	return groups
}

func init() {
	addGroup(backups)
	addGroup(restores)
	addGroup(storageLocations)
}

// backups is `kubectl nac backup`: deleting marks a NonAdminBackup for
// deletion (spec.deleteBackup, as OADP's CLI does), so that Velero deletes
// the backup data before the object goes; --keep-data deletes it plainly.
func backups() *tenantKind[*v1alpha1.NonAdminBackup] {
	return &tenantKind[*v1alpha1.NonAdminBackup]{
		aliases: []string{"backups"}, create: newBackupCreateCommand, progress: BackupProgress,
		columns: backupColumns, describeTo: DescribeBackup,
		files: &veleroFiles{log: velerov1.DownloadTargetKindBackupLog, resources: velerov1.DownloadTargetKindBackupResourceList,
			resourcesUsage: "Add Velero's resource list of the backup (through a NonAdminDownloadRequest)."},
		more: []func(*Options, *tenantKind[*v1alpha1.NonAdminBackup]) *cobra.Command{newBackupDownloadCommand},
		delete: &deleteVerb{deletedNote: "; its backup data stays in object storage", mark: &markForDeletion{
			patch:         `{"spec":{"deleteBackup":true}}`,
			keepDataUsage: "Delete only the NonAdminBackup (a plain delete); the backup data stays in object storage.",
			after:         "Velero deletes the backup data, then nacflow removes the NonAdminBackup: `kubectl nac backup get -n %s` shows progress.",
		}},
	}
}

// restores is `kubectl nac restore`: deleting a NonAdminRestore leaves
// what it restored in place.
func restores() *tenantKind[*v1alpha1.NonAdminRestore] {
	return &tenantKind[*v1alpha1.NonAdminRestore]{
		aliases: []string{"restores"}, delete: &deleteVerb{},
		more:   []func(*Options, *tenantKind[*v1alpha1.NonAdminRestore]) *cobra.Command{newRestorePreviewCommand},
		create: newRestoreCreateCommand, progress: RestoreProgress,
		columns: restoreColumns, describeTo: DescribeRestore,
		files: &veleroFiles{log: velerov1.DownloadTargetKindRestoreLog, resources: velerov1.DownloadTargetKindRestoreResourceList,
			resourcesUsage: "Add Velero's list of the resources restored (through a NonAdminDownloadRequest)."},
	}
}

// storageLocations is `kubectl nac bsl`, with its request subgroup as the
// admin's (newBSLRequestCommand): a location has no Velero files and no
// --wait; deleting it removes its Velero location and credential copy, not
// the backups in its bucket.
func storageLocations() *tenantKind[*v1alpha1.NonAdminBackupStorageLocation] {
	return &tenantKind[*v1alpha1.NonAdminBackupStorageLocation]{create: newBSLCreateCommand, columns: bslColumns,
		admin:  []func(*Options) *cobra.Command{newBSLRequestCommand},
		delete: &deleteVerb{deletedNote: "; its Velero BackupStorageLocation and credential copy go, the backups in its bucket stay"},
		describeTo: func(w io.Writer, nabsl *v1alpha1.NonAdminBackupStorageLocation, _ *Details, now time.Time) {
			DescribeBSL(w, nabsl, now)
		}}
}
