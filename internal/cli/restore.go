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

func newRestoreCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "restore",
		Aliases: []string{"restores", "nar"},
		Short:   "Work with NonAdminRestores: restore your namespace from a NonAdminBackup",
		Long: "A NonAdminRestore restores one of the namespace's own NonAdminBackups into the same namespace. nacflow\n" +
			"validates it, creates the Velero Restore in the OADP namespace and mirrors its status back.",
		Example: "  kubectl nac restore create r1 -n demo --from-backup b1 --wait\n" +
			"  kubectl nac restore get -n demo\n" +
			"  kubectl nac restore describe r1 -n demo\n" +
			"  kubectl nac restore logs r1 -n demo",
	}
	cmd.AddCommand(newRestoreCreateCommand(o), newRestoreGetCommand(o), newRestoreDescribeCommand(o),
		newRestoreLogsCommand(o), newRestoreDeleteCommand(o))
	return cmd
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

func newRestoreCreateCommand(o *Options) *cobra.Command {
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
			if f.output != "" {
				return o.printObject(nar, f.output)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			if err := c.Create(cmd.Context(), nar); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "NonAdminRestore request %q submitted successfully.\n", nar.Name)
			if !f.wait {
				fmt.Fprintf(o.Out, "Run `kubectl nac restore describe %s -n %s` or `kubectl nac restore logs %s -n %s` for more details.\n", nar.Name, ns, nar.Name, ns)
				return nil
			}
			fmt.Fprintln(o.Out, "Waiting for the restore to complete. You may safely press ctrl-c to stop waiting: the restore goes on.")
			return o.follow(cmd.Context(), c, nar, &v1alpha1.NonAdminRestoreList{}, "NonAdminRestore", func() Progress { return RestoreProgress(nar) })
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

func newRestoreGetCommand(o *Options) *cobra.Command {
	var g *getOptions
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List NonAdminRestores, or show one",
		Long: "Lists the NonAdminRestores of the namespace as a table: the backup restored, request phase, Velero's\n" +
			"phase and the plan's current phase; -o wide adds the Velero Restore, items and queue position.",
		Example:           "  kubectl nac restore get -n demo\n  kubectl nac restore get r1 -n demo -o yaml",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.nameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminRestoreList{} }),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.list(cmd, o, &v1alpha1.NonAdminRestoreList{}, firstArg(args), RestoreTable)
		},
	}
	g = addGetFlags(cmd, true)
	return cmd
}

func newRestoreDescribeCommand(o *Options) *cobra.Command {
	var details bool
	var output string
	var d *downloadOptions
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a NonAdminRestore: its phase timeline, progress, Velero's result and events",
		Long: "Prints the NonAdminRestore NAME: the backup it restores, the phase plan as a timeline, the live progress\n" +
			"(queue position, items restored of total, volumes), Velero's result, conditions and recent events.\n" +
			"--details adds Velero's list of the resources restored, read through a NonAdminDownloadRequest\n" +
			"(edit or admin in the namespace: view cannot read download requests).",
		Example:           "  kubectl nac restore describe r1 -n demo --details",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.nameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminRestoreList{} }),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clientAndNamespace()
			if err != nil {
				return err
			}
			nar := &v1alpha1.NonAdminRestore{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, nar); err != nil {
				return err
			}
			if output != "" {
				return o.printObject(nar, output)
			}
			var det *Details
			if details {
				det = o.resourceDetails(cmd.Context(), c, ns, velerov1.DownloadTargetKindRestoreResourceList, nar.Name, d)
			}
			DescribeRestore(o.Out, nar, det, o.now())
			o.describeEvents(cmd.Context(), c, nar, "NonAdminRestore")
			return nil
		},
	}
	cmd.Flags().BoolVar(&details, "details", false, "Add Velero's list of the resources restored (through a NonAdminDownloadRequest).")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the NonAdminRestore as yaml or json instead.")
	d = addDownloadFlags(cmd)
	return cmd
}

func newRestoreLogsCommand(o *Options) *cobra.Command {
	var d *downloadOptions
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print Velero's log of a NonAdminRestore",
		Long: "Prints the log Velero wrote while it ran the restore of the NonAdminRestore NAME, through a\n" +
			"NonAdminDownloadRequest the command creates and removes (edit or admin in the namespace: view cannot\n" +
			"read download requests, whose pre-signed URLs open the restore's files).",
		Example:           "  kubectl nac restore logs r1 -n demo",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.nameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminRestoreList{} }),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clientAndNamespace()
			if err != nil {
				return err
			}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, &v1alpha1.NonAdminRestore{}); err != nil {
				return err
			}
			data, err := o.Download(cmd.Context(), c, ns, velerov1.DownloadTargetKindRestoreLog, args[0], d)
			if err != nil {
				return err
			}
			_, err = o.Out.Write(data)
			return err
		},
	}
	d = addDownloadFlags(cmd)
	return cmd
}

func newRestoreDeleteCommand(o *Options) *cobra.Command {
	var confirm, all bool
	cmd := &cobra.Command{
		Use:   "delete [NAME...] | --all",
		Short: "Delete NonAdminRestores",
		Long: "Deletes each NonAdminRestore (the restored resources stay; nacflow removes the Velero Restore). Asks\n" +
			"for confirmation unless --confirm.",
		Example:           "  kubectl nac restore delete r1 -n demo --confirm",
		ValidArgsFunction: o.nameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminRestoreList{} }),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clientAndNamespace()
			if err != nil {
				return err
			}
			names, err := o.namesToDelete(cmd, c, ns, &v1alpha1.NonAdminRestoreList{}, args, all, "restore")
			if err != nil || len(names) == 0 {
				return err
			}
			if !confirm && !o.confirm("restore", names) {
				fmt.Fprintln(o.Out, "Deletion cancelled.")
				return nil
			}
			failed := 0
			for _, name := range names {
				if err := c.Delete(cmd.Context(), &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
					failed++
					fmt.Fprintf(o.ErrOut, "Failed to delete NonAdminRestore %s: %v\n", name, err)
					continue
				}
				fmt.Fprintf(o.Out, "NonAdminRestore %s deleted.\n", name)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d NonAdminRestores could not be deleted", failed, len(names))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&confirm, "confirm", false, "Skip the confirmation prompt and delete at once.")
	cmd.Flags().BoolVar(&all, "all", false, "Delete every NonAdminRestore of the namespace.")
	return cmd
}
