package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	veleroflag "github.com/vmware-tanzu/velero/pkg/cmd/util/flag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// restores is `kubectl nac restore`.
func restores() *tenantKind[*v1alpha1.NonAdminRestore] {
	return &tenantKind[*v1alpha1.NonAdminRestore]{
		name:    "restore",
		aliases: []string{"restores"},
		group: help{
			short: "Work with NonAdminRestores: restore your namespace from a NonAdminBackup",
			long: "A NonAdminRestore restores one of the namespace's own NonAdminBackups into the same namespace. nacflow\n" +
				"validates it, creates the Velero Restore in the OADP namespace and mirrors its status back.",
			example: "  kubectl nac restore create r1 -n demo --from-backup b1 --wait\n" +
				"  kubectl nac restore get -n demo\n" +
				"  kubectl nac restore describe r1 -n demo\n" +
				"  kubectl nac restore logs r1 -n demo",
		},
		create:   newRestoreCreateCommand,
		progress: RestoreProgress,
		get: help{
			short: "List NonAdminRestores, or show one",
			long: "Lists the NonAdminRestores of the namespace as a table: the backup restored, request phase, Velero's\n" +
				"phase and the plan's current phase; -o wide adds the Velero Restore, items and queue position.",
			example: "  kubectl nac restore get -n demo\n  kubectl nac restore get r1 -n demo -o yaml",
		},
		columns: restoreColumns,
		describe: help{
			short: "Show a NonAdminRestore: its phase timeline, progress, Velero's result and events",
			long: "Prints the NonAdminRestore NAME: the backup it restores, the phase plan as a timeline, the live progress\n" +
				"(queue position, items restored of total, volumes), Velero's result, conditions and recent events.\n" +
				"--details adds Velero's list of the resources restored, read through a NonAdminDownloadRequest\n" +
				"(edit or admin in the namespace: view cannot read download requests).",
			example: "  kubectl nac restore describe r1 -n demo --details",
		},
		describeTo: DescribeRestore,
		details: &downloadVerb{target: velerov1.DownloadTargetKindRestoreResourceList,
			usage: "Add Velero's list of the resources restored (through a NonAdminDownloadRequest)."},
		logs: &downloadVerb{target: velerov1.DownloadTargetKindRestoreLog, help: help{
			short: "Print Velero's log of a NonAdminRestore",
			long: "Prints the log Velero wrote while it ran the restore of the NonAdminRestore NAME, through a\n" +
				"NonAdminDownloadRequest the command creates and removes (edit or admin in the namespace: view cannot\n" +
				"read download requests, whose pre-signed URLs open the restore's files).",
			example: "  kubectl nac restore logs r1 -n demo",
		}},
		delete: &deleteVerb{help: help{
			short: "Delete NonAdminRestores",
			long: "Deletes each NonAdminRestore (the restored resources stay; nacflow removes the Velero Restore). Asks\n" +
				"for confirmation unless --confirm.",
			example: "  kubectl nac restore delete r1 -n demo --confirm",
		}},
	}
}

// restoreCreateFlags are OADP's `restore create` flags.
type restoreCreateFlags struct {
	fromBackup                         string
	includeResources, excludeResources veleroflag.StringArray
	labels, annotations                veleroflag.Map
	selector                           veleroflag.LabelSelector
	orSelector                         veleroflag.OrLabelSelector
	itemOperationTimeout               time.Duration
	existingResourcePolicy             string
	resourceModifierConfigMap          string
	includeClusterResources            veleroflag.OptionalBool
	restoreVolumes, preserveNodePorts  veleroflag.OptionalBool
	wait                               bool
	output                             string
}

func newRestoreCreateCommand(o *Options, k *tenantKind[*v1alpha1.NonAdminRestore]) *cobra.Command {
	f := &restoreCreateFlags{labels: veleroflag.NewMap(), annotations: veleroflag.NewMap(),
		includeClusterResources: veleroflag.NewOptionalBool(nil), restoreVolumes: veleroflag.NewOptionalBool(nil),
		preserveNodePorts: veleroflag.NewOptionalBool(nil)}
	cmd := &cobra.Command{
		Use:   "create NAME --from-backup NONADMINBACKUP",
		Short: "Create a NonAdminRestore from one of your NonAdminBackups",
		Long: "Creates a NonAdminRestore called NAME that restores the NonAdminBackup --from-backup (also spelled\n" +
			"--backup-name, as in newer OADP CLIs) of the same namespace. With --wait the command follows the phase\n" +
			"plan until Velero ends: exit 0 when the Velero Restore is Completed, 1 with the failing phase's message\n" +
			"otherwise. -o yaml|json prints the NonAdminRestore instead of creating it.",
		Example: "  kubectl nac restore create r1 -n demo --from-backup b1 --wait\n" +
			"  kubectl nac restore create cms -n demo --from-backup b1 --include-resources configmaps --existing-resource-policy update",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			nar, err := f.build(ns, args[0])
			if err != nil {
				return err
			}
			return k.submit(cmd, o, nar, f.output, f.wait)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.fromBackup, "from-backup", "", "The NonAdminBackup of this namespace to restore from (required).")
	fl.StringVar(&f.fromBackup, "backup-name", "", "The same as --from-backup (newer OADP CLIs' name).")
	fl.Var(&f.includeResources, "include-resources", "Resources to restore, formatted as resource.group (use '*' for all resources).")
	fl.Var(&f.excludeResources, "exclude-resources", "Resources not to restore, formatted as resource.group.")
	fl.Var(&f.labels, "labels", "Labels to apply to the NonAdminRestore, key=value,key2=value2.")
	fl.Var(&f.annotations, "annotations", "Annotations to apply to the NonAdminRestore, key=value,key2=value2.")
	fl.VarP(&f.selector, "selector", "l", "Only restore resources matching this label selector.")
	fl.Var(&f.orSelector, "or-selector", "Restore resources matching at least one of these label selectors, separated by ' or ' (not with --selector).")
	fl.DurationVar(&f.itemOperationTimeout, "item-operation-timeout", 0, "How long to wait for async plugin operations.")
	fl.StringVar(&f.existingResourcePolicy, "existing-resource-policy", "", "What to do with resources that already exist: none (the default: skip them) or update.")
	fl.StringVar(&f.resourceModifierConfigMap, "resource-modifier-configmap", "", "A ConfigMap of resource modifier rules for the restore.")
	fl.Var(&f.includeClusterResources, "include-cluster-resources", "Include cluster-scoped resources (tenants usually may not).")
	fl.Lookup("include-cluster-resources").NoOptDefVal = "true"
	fl.Var(&f.restoreVolumes, "restore-volumes", "Restore volumes from snapshots or file system backups.")
	fl.Lookup("restore-volumes").NoOptDefVal = "true"
	fl.Var(&f.preserveNodePorts, "preserve-nodeports", "Keep the node ports of Services.")
	fl.Lookup("preserve-nodeports").NoOptDefVal = "true"
	fl.BoolVarP(&f.wait, "wait", "w", false, "Follow the restore until it ends, showing its progress; exit 1 when it does not complete.")
	fl.StringVarP(&f.output, "output", "o", "", "Print the NonAdminRestore as yaml or json instead of creating it.")
	cmd.MarkFlagsMutuallyExclusive("from-backup", "backup-name")
	cmd.MarkFlagsOneRequired("from-backup", "backup-name")
	backups := o.flagNameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminBackupList{} })
	_ = cmd.RegisterFlagCompletionFunc("from-backup", backups)
	_ = cmd.RegisterFlagCompletionFunc("backup-name", backups)
	_ = cmd.RegisterFlagCompletionFunc("existing-resource-policy", cobra.FixedCompletions([]string{"none", "update"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// build returns the NonAdminRestore the flags describe.
func (f *restoreCreateFlags) build(ns, name string) (*v1alpha1.NonAdminRestore, error) {
	if f.fromBackup == "" {
		return nil, fmt.Errorf("--from-backup is required: the NonAdminBackup to restore")
	}
	if f.selector.LabelSelector != nil && len(f.orSelector.OrLabelSelectors) > 0 {
		return nil, fmt.Errorf("--selector and --or-selector cannot be used together")
	}
	switch f.existingResourcePolicy {
	case "", string(velerov1.PolicyTypeNone), string(velerov1.PolicyTypeUpdate):
	default:
		return nil, fmt.Errorf("--existing-resource-policy: %q is neither none nor update", f.existingResourcePolicy)
	}
	spec := &velerov1.RestoreSpec{
		BackupName:              f.fromBackup,
		IncludedResources:       f.includeResources,
		ExcludedResources:       f.excludeResources,
		LabelSelector:           f.selector.LabelSelector,
		OrLabelSelectors:        f.orSelector.OrLabelSelectors,
		IncludeClusterResources: f.includeClusterResources.Value,
		RestorePVs:              f.restoreVolumes.Value,
		PreserveNodePorts:       f.preserveNodePorts.Value,
		ExistingResourcePolicy:  velerov1.PolicyType(f.existingResourcePolicy),
		ItemOperationTimeout:    metav1.Duration{Duration: f.itemOperationTimeout},
	}
	if f.resourceModifierConfigMap != "" {
		spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: f.resourceModifierConfigMap}
	}
	return &v1alpha1.NonAdminRestore{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NonAdminRestore"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: f.labels.Data(), Annotations: f.annotations.Data()},
		Spec:       v1alpha1.NonAdminRestoreSpec{RestoreSpec: spec},
	}, nil
}
