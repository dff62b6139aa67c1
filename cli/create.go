package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	veleroflag "github.com/vmware-tanzu/velero/pkg/cmd/util/flag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// The create commands: each kind's own flags (Velero's and OADP's), built
// into the object the kind's tenantKind then submits.

// createFlags are the flags backup create and restore create share: the
// new object's labels and annotations, Velero's resource filters and label
// selectors, --wait and -o. Their usage is each command's own.
type createFlags struct {
	includeResources, excludeResources veleroflag.StringArray
	labels, annotations                veleroflag.Map
	selector                           veleroflag.LabelSelector
	orSelector                         veleroflag.OrLabelSelector
	itemOperationTimeout               time.Duration
	wait                               bool
	out                                createOutput
}

func newCreateFlags() createFlags {
	return createFlags{labels: veleroflag.NewMap(), annotations: veleroflag.NewMap()}
}

// check refuses what Velero refuses: --selector with --or-selector.
func (f *createFlags) check() error {
	if f.selector.LabelSelector != nil && len(f.orSelector.OrLabelSelectors) > 0 {
		return fmt.Errorf("--selector and --or-selector cannot be used together")
	}
	return nil
}

// objectMeta is the metadata of the object name in ns: --labels and
// --annotations.
func (f *createFlags) objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: f.labels.Data(), Annotations: f.annotations.Data()}
}

// addOptionalBool adds --name as Velero's optional booleans are: unset, or
// true when given alone, or --name=false.
func addOptionalBool(fl *pflag.FlagSet, v *veleroflag.OptionalBool, name, usage string) {
	*v = veleroflag.NewOptionalBool(nil)
	fl.Var(v, name, usage)
	fl.Lookup(name).NoOptDefVal = "true"
}

// refusedFlag is a flag of Velero's or OADP's CLI that nacflow's tenant
// rules always refuse: it is hidden from help and docs, and setting it
// fails the command before anything is written, naming the rule, instead of
// creating an object the controller would refuse (Accepted=False,
// BackingOff). It stays a flag so that an OADP script gets that reason,
// not "unknown flag".
type refusedFlag struct{ reason string }

func (f *refusedFlag) String() string { return "" }

// Type is shown in usage text only, which hides the flag.
func (f *refusedFlag) Type() string { return "string" }

// Set returns why nacflow refuses the flag, whatever v is.
func (f *refusedFlag) Set(v string) error {
	return fmt.Errorf("nacflow refuses it: %s", f.reason)
}

// addRefused registers the hidden flag name that fails with reason.
func addRefused(fl *pflag.FlagSet, name, reason string) {
	fl.Var(&refusedFlag{reason: reason}, name, reason)
	_ = fl.MarkHidden(name)
}

// refusedBackupFlags are `backup create` flags of Velero's and OADP's CLIs
// that ValidateBackupSpec always refuses for a tenant (the tenant rules of
// OADP's NAC): name → the rule.
var refusedBackupFlags = map[string]string{
	"include-cluster-scoped-resources": "a NonAdminBackup may not include cluster-scoped resources (spec.backupSpec.includedClusterScopedResources)",
	"volume-snapshot-locations":        "volume snapshot locations are the admin's (spec.backupSpec.volumeSnapshotLocations)",
	"resource-policies-configmap":      "the ConfigMap would be read in the OADP namespace; an admin may enforce one in the blueprint (spec.backupSpec.resourcePolicy)",
}

// refusedRestoreFlags are `restore create` flags ValidateRestoreSpec always
// refuses: name → the rule.
var refusedRestoreFlags = map[string]string{}

// clusterResourcesRule is why --include-cluster-resources=true is refused;
// =false (no cluster-scoped resources at all) is a tenant's right.
const clusterResourcesRule = "a tenant's backup or restore may not include cluster-scoped resources; only --include-cluster-resources=false is accepted"

// backupCreateFlags are Velero's and OADP's `backup create` flags.
type backupCreateFlags struct {
	createFlags
	ttl                                            metav1.Duration
	excludeClusterScoped                           veleroflag.StringArray
	includeNamespaceScoped, excludeNamespaceScoped veleroflag.StringArray
	storageLocation                                string
	orderedResources                               string
	csiSnapshotTimeout                             time.Duration
	snapshotVolumes, snapshotMoveData              veleroflag.OptionalBool
	includeClusterRes, defaultVolumesToFsBackup    veleroflag.OptionalBool
	dataMover                                      string
	parallelFilesUpload                            int
	force, assumeYes                               bool
}

func newBackupCreateCommand(o *Options, k *tenantKind[*v1alpha1.NonAdminBackup]) *cobra.Command {
	f := &backupCreateFlags{createFlags: newCreateFlags()}
	cmd := k.createCommand(o, "create NAME", &f.createFlags, f.build)
	f.addFlags(o, cmd, "NonAdminBackup")
	cmd.Flags().BoolVarP(&f.wait, "wait", "w", false, "Follow the backup until it ends, showing its progress; exit 1 when it does not complete.")
	return cmd
}

// addFlags adds to cmd the flags of a backup's spec (Velero's and OADP's
// `backup create` flags), -o and --dry-run, bound to f; object names the
// kind cmd creates, in the usage of the metadata and output flags.
func (f *backupCreateFlags) addFlags(o *Options, cmd *cobra.Command, object string) {
	fl := cmd.Flags()
	fl.DurationVar(&f.ttl.Duration, "ttl", 0, "How long before the backup can be garbage collected (Velero's default, 720h, when 0).")
	fl.Var(&f.includeResources, "include-resources", "Resources to include in the backup, formatted as resource.group, such as storageclasses.storage.k8s.io (use '*' for all resources).")
	fl.Var(&f.excludeResources, "exclude-resources", "Resources to exclude from the backup, formatted as resource.group.")
	fl.Var(&f.excludeClusterScoped, "exclude-cluster-scoped-resources", "Cluster-scoped resources to exclude (new-style filter).")
	fl.Var(&f.includeNamespaceScoped, "include-namespace-scoped-resources", "Namespaced resources to include (new-style filter).")
	fl.Var(&f.excludeNamespaceScoped, "exclude-namespace-scoped-resources", "Namespaced resources to exclude (new-style filter).")
	fl.Var(&f.labels, "labels", "Labels to apply to the "+object+" and its backup, key=value,key2=value2.")
	fl.Var(&f.annotations, "annotations", "Annotations to apply to the "+object+", key=value,key2=value2.")
	fl.StringVar(&f.storageLocation, "storage-location", "", "Your NonAdminBackupStorageLocation to store the backup in (the admin's default location when empty).")
	fl.VarP(&f.selector, "selector", "l", "Only back up resources matching this label selector.")
	fl.Var(&f.orSelector, "or-selector", "Back up resources matching at least one of these label selectors, separated by ' or ' (not with --selector).")
	fl.StringVar(&f.orderedResources, "ordered-resources", "", "Mapping Kinds to an ordered list of specific resources of that Kind, e.g. 'pods=ns1/pod1,ns1/pod2;persistentvolumeclaims=ns1/pvc4'.")
	fl.DurationVar(&f.csiSnapshotTimeout, "csi-snapshot-timeout", 0, "How long to wait for CSI snapshots to be ready.")
	fl.DurationVar(&f.itemOperationTimeout, "item-operation-timeout", 0, "How long to wait for async plugin operations.")
	addOptionalBool(fl, &f.snapshotVolumes, "snapshot-volumes", "Take snapshots of persistent volumes.")
	addOptionalBool(fl, &f.snapshotMoveData, "snapshot-move-data", "Move snapshot data to the backup storage location (data mover).")
	addOptionalBool(fl, &f.includeClusterRes, "include-cluster-resources", clusterResourcesRule)
	_ = fl.MarkHidden("include-cluster-resources")
	addOptionalBool(fl, &f.defaultVolumesToFsBackup, "default-volumes-to-fs-backup", "Back up all pod volumes with the file system backup by default.")
	fl.StringVar(&f.dataMover, "data-mover", "", "The data mover for volume data (Velero's built-in when empty).")
	fl.IntVar(&f.parallelFilesUpload, "parallel-files-upload", 0, "Files uploaded in parallel by the file system backup (kopia only).")
	fl.BoolVar(&f.force, "force", false, "Accepted for OADP compatibility: nacflow does not require --storage-location (the admin's default is used).")
	fl.BoolVarP(&f.assumeYes, "assume-yes", "y", false, "Accepted for OADP compatibility (nacflow asks nothing on create).")
	f.out.addFlags(cmd, object)
	for name, rule := range refusedBackupFlags {
		addRefused(fl, name, rule)
	}
	_ = cmd.RegisterFlagCompletionFunc("storage-location", o.flagNameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminBackupStorageLocationList{} }))
}

// build returns the NonAdminBackup the flags describe. The backup spec
// includes namespace ns only (OADP's CLI does the same).
func (f *backupCreateFlags) build(ns, name string) (*v1alpha1.NonAdminBackup, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.includeClusterRes.Value != nil && *f.includeClusterRes.Value {
		return nil, fmt.Errorf("nacflow refuses --include-cluster-resources: %s", clusterResourcesRule)
	}
	oldStyle := len(f.includeResources) > 0 || len(f.excludeResources) > 0 || f.includeClusterRes.Value != nil
	newStyle := len(f.excludeClusterScoped)+len(f.includeNamespaceScoped)+len(f.excludeNamespaceScoped) > 0
	if oldStyle && newStyle {
		return nil, fmt.Errorf("--include-resources, --exclude-resources and --include-cluster-resources cannot be used with the new-style --include/exclude-*-scoped-resources filters")
	}
	spec := &velerov1.BackupSpec{
		IncludedNamespaces:               []string{ns},
		IncludedResources:                f.includeResources,
		ExcludedResources:                f.excludeResources,
		ExcludedClusterScopedResources:   f.excludeClusterScoped,
		IncludedNamespaceScopedResources: f.includeNamespaceScoped,
		ExcludedNamespaceScopedResources: f.excludeNamespaceScoped,
		LabelSelector:                    f.selector.LabelSelector,
		OrLabelSelectors:                 f.orSelector.OrLabelSelectors,
		StorageLocation:                  f.storageLocation,
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
	if f.parallelFilesUpload > 0 {
		spec.UploaderConfig = &velerov1.UploaderConfigForBackup{ParallelFilesUpload: f.parallelFilesUpload}
	}
	if labels := f.labels.Data(); len(labels) > 0 {
		spec.Metadata.Labels = labels
	}
	return &v1alpha1.NonAdminBackup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NonAdminBackup"},
		ObjectMeta: f.objectMeta(ns, name),
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

// restoreCreateFlags are OADP's `restore create` flags.
type restoreCreateFlags struct {
	createFlags
	fromBackup                        string
	existingResourcePolicy            string
	includeClusterResources           veleroflag.OptionalBool
	restoreVolumes, preserveNodePorts veleroflag.OptionalBool
	namespaceMappings                 veleroflag.Map
	resourceModifier                  string
}

func newRestoreCreateCommand(o *Options, k *tenantKind[*v1alpha1.NonAdminRestore]) *cobra.Command {
	f := newRestoreCreateFlags()
	cmd := k.createCommand(o, "create NAME --from-backup NONADMINBACKUP", &f.createFlags, f.build)
	addRestoreFlags(o, cmd, f)
	fl := cmd.Flags()
	fl.BoolVarP(&f.wait, "wait", "w", false, "Follow the restore until it ends, showing its progress; exit 1 when it does not complete.")
	f.out.addFlags(cmd, "NonAdminRestore")
	return cmd
}

// newRestoreCreateFlags returns restore create's flags, unset.
func newRestoreCreateFlags() *restoreCreateFlags {
	return &restoreCreateFlags{createFlags: newCreateFlags(),
		namespaceMappings: veleroflag.NewMap().WithEntryDelimiter(',').WithKeyValueDelimiter(':')}
}

// addRestoreFlags adds to cmd the flags that describe a restore (what
// restore create and restore preview share), bound to f.
func addRestoreFlags(o *Options, cmd *cobra.Command, f *restoreCreateFlags) {
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
	addOptionalBool(fl, &f.includeClusterResources, "include-cluster-resources", clusterResourcesRule)
	_ = fl.MarkHidden("include-cluster-resources")
	for name, rule := range refusedRestoreFlags {
		addRefused(fl, name, rule)
	}
	addOptionalBool(fl, &f.restoreVolumes, "restore-volumes", "Restore volumes from snapshots or file system backups.")
	addOptionalBool(fl, &f.preserveNodePorts, "preserve-nodeports", "Keep the node ports of Services.")
	fl.Var(&f.namespaceMappings, "namespace-mapping", "Restore into another namespace you hold rights in: THIS:OTHER (the namespace must exist; every item is checked as you there; nacflow's requester webhook must be installed).")
	fl.Var(&f.namespaceMappings, "namespace-mappings", "The same as --namespace-mapping (Velero's name).")
	fl.StringVar(&f.resourceModifier, "resource-modifier", "", "A ConfigMap of this namespace holding Velero resource modifiers (version v1) to apply to the items; each item is checked as they make it.")
	fl.StringVar(&f.resourceModifier, "resource-modifier-configmap", "", "The same as --resource-modifier (Velero's name; the ConfigMap is read in this namespace).")
	cmd.MarkFlagsMutuallyExclusive("namespace-mapping", "namespace-mappings")
	cmd.MarkFlagsMutuallyExclusive("resource-modifier", "resource-modifier-configmap")
	cmd.MarkFlagsMutuallyExclusive("from-backup", "backup-name")
	cmd.MarkFlagsOneRequired("from-backup", "backup-name")
	backups := o.flagNameCompletion(func() client.ObjectList { return &v1alpha1.NonAdminBackupList{} })
	_ = cmd.RegisterFlagCompletionFunc("from-backup", backups)
	_ = cmd.RegisterFlagCompletionFunc("backup-name", backups)
	_ = cmd.RegisterFlagCompletionFunc("existing-resource-policy", cobra.FixedCompletions([]string{"none", "update"}, cobra.ShellCompDirectiveNoFileComp))
}

// build returns the NonAdminRestore the flags describe.
func (f *restoreCreateFlags) build(ns, name string) (*v1alpha1.NonAdminRestore, error) {
	if f.fromBackup == "" {
		return nil, fmt.Errorf("--from-backup is required: the NonAdminBackup to restore")
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.includeClusterResources.Value != nil && *f.includeClusterResources.Value {
		return nil, fmt.Errorf("nacflow refuses --include-cluster-resources: %s", clusterResourcesRule)
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
	if m := f.namespaceMappings.Data(); len(m) > 0 {
		spec.NamespaceMapping = m
	}
	if f.resourceModifier != "" {
		spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: f.resourceModifier}
	}
	return &v1alpha1.NonAdminRestore{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NonAdminRestore"},
		ObjectMeta: f.objectMeta(ns, name),
		Spec:       v1alpha1.NonAdminRestoreSpec{RestoreSpec: spec},
	}, nil
}

func newBSLCreateCommand(o *Options, _ *tenantKind[*v1alpha1.NonAdminBackupStorageLocation]) *cobra.Command {
	var provider, bucket, prefix, region string
	var out createOutput
	credential := veleroflag.NewMap()
	config := veleroflag.NewMap()
	cmd := &cobra.Command{
		Use:  "create NAME --provider PROVIDER --bucket BUCKET --credential SECRET=KEY",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			creds := credential.Data()
			if len(creds) != 1 {
				return fmt.Errorf("--credential must be exactly one SECRET=KEY pair, got %d", len(creds))
			}
			cfg := map[string]string{}
			if region != "" {
				cfg["region"] = region
			}
			for k, v := range config.Data() {
				cfg[k] = v
			}
			if len(cfg) == 0 {
				cfg = nil
			}
			spec := &velerov1.BackupStorageLocationSpec{
				Provider:    provider,
				StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: bucket, Prefix: prefix}},
				Config:      cfg,
				Credential:  &corev1.SecretKeySelector{},
			}
			for name, key := range creds {
				spec.Credential.Name, spec.Credential.Key = name, key
			}
			nabsl := &v1alpha1.NonAdminBackupStorageLocation{
				TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NonAdminBackupStorageLocation"},
				ObjectMeta: metav1.ObjectMeta{Name: args[0], Namespace: ns},
				Spec:       v1alpha1.NonAdminBackupStorageLocationSpec{BackupStorageLocationSpec: spec},
			}
			if _, created, err := o.createOrPrint(cmd, nabsl, out); err != nil || !created {
				return err
			}
			fmt.Fprintf(o.Out, "NonAdminBackupStorageLocation %q created successfully.\n", nabsl.Name)
			fmt.Fprintf(o.Out, "If the admin requires approval, it waits for it: `kubectl nac bsl describe %s -n %s` shows where it stands.\n", nabsl.Name, ns)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&provider, "provider", "", "The object storage provider (the Velero plugin's name, e.g. aws, azure, gcp).")
	fl.StringVar(&bucket, "bucket", "", "The bucket to store backups in.")
	fl.StringVar(&prefix, "prefix", "", "The folder in the bucket (nacflow, as OADP, stores under <namespace>/<prefix>).")
	fl.Var(&credential, "credential", "The Secret of this namespace and its key holding the credentials, SECRET=KEY.")
	fl.StringVar(&region, "region", "", "The bucket's region (config region=…).")
	fl.Var(&config, "config", "Provider configuration, key=value,key2=value2 (wins over --region).")
	out.addFlags(cmd, "NonAdminBackupStorageLocation")
	for _, f := range []string{"provider", "bucket", "credential"} {
		_ = cmd.MarkFlagRequired(f)
	}
	_ = cmd.RegisterFlagCompletionFunc("credential", o.flagNameCompletion(func() client.ObjectList { return &corev1.SecretList{} }))
	return cmd
}
