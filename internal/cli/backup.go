package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	veleroflag "github.com/vmware-tanzu/velero/pkg/cmd/util/flag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// backups is `kubectl nac backup`.
func backups() *tenantKind[*v1alpha1.NonAdminBackup] {
	return &tenantKind[*v1alpha1.NonAdminBackup]{
		name:    "backup",
		aliases: []string{"backups"},
		group: help{
			short: "Work with NonAdminBackups: back up your namespace",
			long: "A NonAdminBackup asks for a Velero Backup of its own namespace. nacflow validates it, creates the Velero\n" +
				"Backup in the OADP namespace, follows it and mirrors its status back; deleting it with --confirm removes the\n" +
				"backup data too.",
			example: "  kubectl nac backup create b1 -n demo --wait\n" +
				"  kubectl nac backup get -n demo\n" +
				"  kubectl nac backup describe b1 -n demo --details\n" +
				"  kubectl nac backup logs b1 -n demo\n" +
				"  kubectl nac backup delete b1 -n demo --confirm",
		},
		create:   newBackupCreateCommand,
		progress: BackupProgress,
		get: help{
			short: "List NonAdminBackups, or show one",
			long: "Lists the NonAdminBackups of the namespace (-n, else the context's) as a table: request phase, Velero's\n" +
				"phase and the plan's current phase; -o wide adds the Velero Backup, location, items, queue position and\n" +
				"expiry; -o yaml|json|name|jsonpath=… print the objects.",
			example: "  kubectl nac backup get -n demo\n" +
				"  kubectl nac backup get b1 -n demo -o wide\n" +
				"  kubectl nac backup get -n demo -o jsonpath='{.items[*].status.veleroBackup.status.phase}'",
		},
		columns: backupColumns,
		describe: help{
			short: "Show a NonAdminBackup: its phase timeline, progress, Velero's result and events",
			long: "Prints the NonAdminBackup NAME: the spec that matters, the phase plan as a timeline (each phase, its\n" +
				"function, state, start offset, duration, attempts and message), the live progress of the wait (queue\n" +
				"position, items backed up of total, volumes uploaded), Velero's result (phase, warnings, errors, times),\n" +
				"conditions and recent events. --details adds Velero's resource list, read through a\n" +
				"NonAdminDownloadRequest (edit or admin in the namespace: view cannot read download requests).",
			example: "  kubectl nac backup describe b1 -n demo\n" +
				"  kubectl nac backup describe b1 -n demo --details",
		},
		describeTo: DescribeBackup,
		details: &downloadVerb{target: velerov1.DownloadTargetKindBackupResourceList,
			usage: "Add Velero's resource list of the backup (through a NonAdminDownloadRequest)."},
		logs: &downloadVerb{target: velerov1.DownloadTargetKindBackupLog, help: help{
			short: "Print Velero's log of a NonAdminBackup",
			long: "Prints the log Velero wrote while it ran the backup of the NonAdminBackup NAME. The command creates a\n" +
				"NonAdminDownloadRequest for it, waits for the download URL, downloads and gunzips the log, and removes the\n" +
				"request (as OADP's `kubectl oadp nonadmin backup logs`). It needs edit or admin in the namespace: view\n" +
				"cannot read download requests, whose pre-signed URLs open the backup's files.",
			example: "  kubectl nac backup logs b1 -n demo | grep -i error",
		}},
		delete: &deleteVerb{
			help: help{
				short: "Delete NonAdminBackups and their backup data",
				long: "Marks each NonAdminBackup for deletion (spec.deleteBackup: true, as OADP's CLI): nacflow asks Velero to\n" +
					"delete the backup and its data (a DeleteBackupRequest), then removes the NonAdminBackup. --keep-data\n" +
					"deletes the NonAdminBackup with a plain delete: its Velero Backup object goes, the backup data stays in\n" +
					"object storage (Velero's backup sync may bring it back). Asks for confirmation unless --confirm.",
				example: "  kubectl nac backup delete b1 -n demo --confirm\n" +
					"  kubectl nac backup delete --all -n demo\n" +
					"  kubectl nac backup delete b1 -n demo --keep-data --confirm",
			},
			deletedNote: "; its backup data stays in object storage",
			mark: &markForDeletion{
				patch:         `{"spec":{"deleteBackup":true}}`,
				keepDataUsage: "Delete only the NonAdminBackup (a plain delete); the backup data stays in object storage.",
				after:         "Velero deletes the backup data, then nacflow removes the NonAdminBackup: `kubectl nac backup get -n %s` shows progress.",
			},
		},
	}
}

// backupCreateFlags are Velero's and OADP's `backup create` flags.
type backupCreateFlags struct {
	ttl                                                  metav1.Duration
	includeResources, excludeResources                   veleroflag.StringArray
	includeClusterScoped, excludeClusterScoped           veleroflag.StringArray
	includeNamespaceScoped, excludeNamespaceScoped       veleroflag.StringArray
	labels, annotations                                  veleroflag.Map
	storageLocation                                      string
	snapshotLocations                                    []string
	selector                                             veleroflag.LabelSelector
	orSelector                                           veleroflag.OrLabelSelector
	orderedResources                                     string
	csiSnapshotTimeout, itemOperationTimeout             time.Duration
	snapshotVolumes, snapshotMoveData, includeClusterRes veleroflag.OptionalBool
	defaultVolumesToFsBackup                             veleroflag.OptionalBool
	resourcePoliciesConfigMap, dataMover                 string
	parallelFilesUpload                                  int
	wait, force, assumeYes                               bool
	output                                               string
}

func newBackupCreateCommand(o *Options, k *tenantKind[*v1alpha1.NonAdminBackup]) *cobra.Command {
	f := &backupCreateFlags{labels: veleroflag.NewMap(), annotations: veleroflag.NewMap(),
		snapshotVolumes: veleroflag.NewOptionalBool(nil), snapshotMoveData: veleroflag.NewOptionalBool(nil),
		includeClusterRes: veleroflag.NewOptionalBool(nil), defaultVolumesToFsBackup: veleroflag.NewOptionalBool(nil)}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a NonAdminBackup of your namespace",
		Long: "Creates a NonAdminBackup called NAME in the namespace (-n, else the context's) with a Velero backup spec\n" +
			"built from the flags (Velero's and OADP's `backup create` flags). The backup covers this namespace only.\n" +
			"Without --storage-location the admin's default location is used. With --wait the command follows the\n" +
			"phase plan until Velero ends: it exits 0 when the Velero Backup is Completed, 1 with the failing phase's\n" +
			"message otherwise. -o yaml|json prints the NonAdminBackup instead of creating it.",
		Example: "  kubectl nac backup create b1 -n demo --wait\n" +
			"  kubectl nac backup create cms -n demo --include-resources configmaps,secrets --ttl 72h\n" +
			"  kubectl nac backup create b2 -n demo --storage-location my-bucket -l app=web -o yaml",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			nab, err := f.build(ns, args[0])
			if err != nil {
				return err
			}
			return k.submit(cmd, o, nab, f.output, f.wait)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.ttl.Duration, "ttl", 0, "How long before the backup can be garbage collected (Velero's default, 720h, when 0).")
	fl.Var(&f.includeResources, "include-resources", "Resources to include in the backup, formatted as resource.group, such as storageclasses.storage.k8s.io (use '*' for all resources).")
	fl.Var(&f.excludeResources, "exclude-resources", "Resources to exclude from the backup, formatted as resource.group.")
	fl.Var(&f.includeClusterScoped, "include-cluster-scoped-resources", "Cluster-scoped resources to include (new-style filter; nacflow's blueprint decides what a tenant may include).")
	fl.Var(&f.excludeClusterScoped, "exclude-cluster-scoped-resources", "Cluster-scoped resources to exclude (new-style filter).")
	fl.Var(&f.includeNamespaceScoped, "include-namespace-scoped-resources", "Namespaced resources to include (new-style filter).")
	fl.Var(&f.excludeNamespaceScoped, "exclude-namespace-scoped-resources", "Namespaced resources to exclude (new-style filter).")
	fl.Var(&f.labels, "labels", "Labels to apply to the NonAdminBackup and its backup, key=value,key2=value2.")
	fl.Var(&f.annotations, "annotations", "Annotations to apply to the NonAdminBackup, key=value,key2=value2.")
	fl.StringVar(&f.storageLocation, "storage-location", "", "Your NonAdminBackupStorageLocation to store the backup in (the admin's default location when empty).")
	fl.StringSliceVar(&f.snapshotLocations, "volume-snapshot-locations", nil, "Volume snapshot locations to use.")
	fl.VarP(&f.selector, "selector", "l", "Only back up resources matching this label selector.")
	fl.Var(&f.orSelector, "or-selector", "Back up resources matching at least one of these label selectors, separated by ' or ' (not with --selector).")
	fl.StringVar(&f.orderedResources, "ordered-resources", "", "Mapping Kinds to an ordered list of specific resources of that Kind, e.g. 'pods=ns1/pod1,ns1/pod2;persistentvolumeclaims=ns1/pvc4'.")
	fl.DurationVar(&f.csiSnapshotTimeout, "csi-snapshot-timeout", 0, "How long to wait for CSI snapshots to be ready.")
	fl.DurationVar(&f.itemOperationTimeout, "item-operation-timeout", 0, "How long to wait for async plugin operations.")
	fl.Var(&f.snapshotVolumes, "snapshot-volumes", "Take snapshots of persistent volumes.")
	fl.Lookup("snapshot-volumes").NoOptDefVal = "true"
	fl.Var(&f.snapshotMoveData, "snapshot-move-data", "Move snapshot data to the backup storage location (data mover).")
	fl.Lookup("snapshot-move-data").NoOptDefVal = "true"
	fl.Var(&f.includeClusterRes, "include-cluster-resources", "Include cluster-scoped resources (old-style filter; tenants usually may not).")
	fl.Lookup("include-cluster-resources").NoOptDefVal = "true"
	fl.Var(&f.defaultVolumesToFsBackup, "default-volumes-to-fs-backup", "Back up all pod volumes with the file system backup by default.")
	fl.Lookup("default-volumes-to-fs-backup").NoOptDefVal = "true"
	fl.StringVar(&f.resourcePoliciesConfigMap, "resource-policies-configmap", "", "A ConfigMap of resource policies for the backup.")
	fl.StringVar(&f.dataMover, "data-mover", "", "The data mover for volume data (Velero's built-in when empty).")
	fl.IntVar(&f.parallelFilesUpload, "parallel-files-upload", 0, "Files uploaded in parallel by the file system backup (kopia only).")
	fl.BoolVarP(&f.wait, "wait", "w", false, "Follow the backup until it ends, showing its progress; exit 1 when it does not complete.")
	fl.BoolVar(&f.force, "force", false, "Accepted for OADP compatibility: nacflow does not require --storage-location (the admin's default is used).")
	fl.BoolVarP(&f.assumeYes, "assume-yes", "y", false, "Accepted for OADP compatibility (nacflow asks nothing on create).")
	fl.StringVarP(&f.output, "output", "o", "", "Print the NonAdminBackup as yaml or json instead of creating it.")
	_ = cmd.RegisterFlagCompletionFunc("storage-location", o.flagNameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminBackupStorageLocationList{} }))
	return cmd
}

// build returns the NonAdminBackup the flags describe. The backup spec
// includes namespace ns only (OADP's CLI does the same).
func (f *backupCreateFlags) build(ns, name string) (*v1alpha1.NonAdminBackup, error) {
	if f.selector.LabelSelector != nil && len(f.orSelector.OrLabelSelectors) > 0 {
		return nil, fmt.Errorf("--selector and --or-selector cannot be used together")
	}
	oldStyle := len(f.includeResources) > 0 || len(f.excludeResources) > 0 || f.includeClusterRes.Value != nil
	newStyle := len(f.includeClusterScoped)+len(f.excludeClusterScoped)+len(f.includeNamespaceScoped)+len(f.excludeNamespaceScoped) > 0
	if oldStyle && newStyle {
		return nil, fmt.Errorf("--include-resources, --exclude-resources and --include-cluster-resources cannot be used with the new-style --include/exclude-*-scoped-resources filters")
	}
	spec := &velerov1.BackupSpec{
		IncludedNamespaces:               []string{ns},
		IncludedResources:                f.includeResources,
		ExcludedResources:                f.excludeResources,
		IncludedClusterScopedResources:   f.includeClusterScoped,
		ExcludedClusterScopedResources:   f.excludeClusterScoped,
		IncludedNamespaceScopedResources: f.includeNamespaceScoped,
		ExcludedNamespaceScopedResources: f.excludeNamespaceScoped,
		LabelSelector:                    f.selector.LabelSelector,
		OrLabelSelectors:                 f.orSelector.OrLabelSelectors,
		StorageLocation:                  f.storageLocation,
		VolumeSnapshotLocations:          f.snapshotLocations,
		TTL:                              f.ttl,
		SnapshotVolumes:                  f.snapshotVolumes.Value,
		SnapshotMoveData:                 f.snapshotMoveData.Value,
		IncludeClusterResources:          f.includeClusterRes.Value,
		DefaultVolumesToFsBackup:         f.defaultVolumesToFsBackup.Value,
		DataMover:                        f.dataMover,
		CSISnapshotTimeout:               metav1.Duration{Duration: f.csiSnapshotTimeout},
		ItemOperationTimeout:             metav1.Duration{Duration: f.itemOperationTimeout},
	}
	if f.orderedResources != "" {
		ordered, err := parseOrderedResources(f.orderedResources)
		if err != nil {
			return nil, err
		}
		spec.OrderedResources = ordered
	}
	if f.resourcePoliciesConfigMap != "" {
		spec.ResourcePolicy = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: f.resourcePoliciesConfigMap}
	}
	if f.parallelFilesUpload > 0 {
		spec.UploaderConfig = &velerov1.UploaderConfigForBackup{ParallelFilesUpload: f.parallelFilesUpload}
	}
	if labels := f.labels.Data(); len(labels) > 0 {
		spec.Metadata.Labels = labels
	}
	return &v1alpha1.NonAdminBackup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NonAdminBackup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: f.labels.Data(), Annotations: f.annotations.Data()},
		Spec:       v1alpha1.NonAdminBackupSpec{BackupSpec: spec},
	}, nil
}

// parseOrderedResources parses Velero's --ordered-resources:
// "pods=ns1/pod1,ns1/pod2;persistentvolumeclaims=ns1/pvc4".
func parseOrderedResources(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		kv := strings.SplitN(part, "=", 2)
		if len(kv) != 2 || strings.TrimSpace(kv[0]) == "" || strings.TrimSpace(kv[1]) == "" {
			return nil, fmt.Errorf("--ordered-resources: %q is not kind=ns/name,ns/name", part)
		}
		out[strings.TrimSpace(kv[0])] = strings.TrimSpace(kv[1])
	}
	return out, nil
}
