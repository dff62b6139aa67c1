package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	veleroflag "github.com/vmware-tanzu/velero/pkg/cmd/util/flag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Annotations the approve and reject commands leave on a request (OADP's
// CLI's).
const (
	AnnotationApprovalReason  = "openshift.io/oadp-approval-reason"
	AnnotationRejectionReason = "openshift.io/oadp-rejection-reason"
)

// storageLocations is `kubectl nac bsl`; its request subgroup is the
// admin's.
func storageLocations() *tenantKind[*v1alpha1.NonAdminBackupStorageLocation] {
	return &tenantKind[*v1alpha1.NonAdminBackupStorageLocation]{
		name: "bsl",
		group: help{
			short: "Work with NonAdminBackupStorageLocations: your own object storage for backups",
			long: "A NonAdminBackupStorageLocation is a Velero BackupStorageLocation of your own, with credentials from a\n" +
				"Secret of your namespace. When the admin requires approval, each one creates a\n" +
				"NonAdminBackupStorageLocationRequest in the OADP namespace that an admin approves or rejects\n" +
				"(`kubectl nac bsl request …`).",
			example: "  kubectl nac bsl create my-bucket -n demo --provider aws --bucket demo-backups --credential cloud-credentials=cloud --region us-east-1\n" +
				"  kubectl nac bsl get -n demo\n" +
				"  kubectl nac bsl request approve demo/my-bucket",
		},
		create: newBSLCreateCommand,
		get: help{
			short:   "List NonAdminBackupStorageLocations, or show one",
			long:    "Lists the NonAdminBackupStorageLocations of the namespace: request phase, Velero's view (Available or\nnot), approval and the plan's current phase; -o wide adds provider, bucket and prefix.",
			example: "  kubectl nac bsl get -n demo -o wide",
		},
		columns: bslColumns,
		describe: help{
			short:   "Show a NonAdminBackupStorageLocation: location, phase timeline, approval, Velero's view, events",
			long:    "Prints the NonAdminBackupStorageLocation NAME: the location asked for, the phase plan as a timeline,\nVelero's view of the location (phase, last validation, message), conditions and recent events.",
			example: "  kubectl nac bsl describe my-bucket -n demo",
		},
		describeTo: func(w io.Writer, nabsl *v1alpha1.NonAdminBackupStorageLocation, _ *Details, now time.Time) {
			DescribeBSL(w, nabsl, now)
		},
	}
}

// newBSLCommand is `kubectl nac bsl` with its request subgroup.
func newBSLCommand(o *Options) *cobra.Command {
	cmd := storageLocations().command(o)
	cmd.AddCommand(newBSLRequestCommand(o))
	return cmd
}

func newBSLCreateCommand(o *Options, _ *tenantKind[*v1alpha1.NonAdminBackupStorageLocation]) *cobra.Command {
	var provider, bucket, prefix, region, output string
	credential := veleroflag.NewMap()
	config := veleroflag.NewMap()
	cmd := &cobra.Command{
		Use:   "create NAME --provider PROVIDER --bucket BUCKET --credential SECRET=KEY",
		Short: "Create a NonAdminBackupStorageLocation",
		Long: "Creates a NonAdminBackupStorageLocation called NAME whose credential is key KEY of the Secret SECRET in\n" +
			"the same namespace (OADP's `bsl create` flags). nacflow copies the Secret to the OADP namespace and\n" +
			"creates the Velero BackupStorageLocation, after an admin's approval when one is required. -o yaml|json\n" +
			"prints it instead of creating it.",
		Example: "  kubectl create secret generic cloud-credentials -n demo --from-file=cloud=./credentials\n" +
			"  kubectl nac bsl create my-bucket -n demo --provider aws --bucket demo-backups --prefix team-a \\\n" +
			"      --credential cloud-credentials=cloud --config region=us-east-1,s3ForcePathStyle=true",
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
			if _, created, err := o.createOrPrint(cmd, nabsl, output); err != nil || !created {
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
	fl.StringVarP(&output, "output", "o", "", "Print the NonAdminBackupStorageLocation as yaml or json instead of creating it.")
	for _, f := range []string{"provider", "bucket", "credential"} {
		_ = cmd.MarkFlagRequired(f)
	}
	_ = cmd.RegisterFlagCompletionFunc("credential", o.flagNameCompletion(func() client.ObjectList { return &corev1.SecretList{} }))
	return cmd
}

func newBSLRequestCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "request",
		Aliases: []string{"requests", "nabslrequest"},
		Short:   "Approve or reject tenants' storage locations (cluster admins)",
		Long: "Each NonAdminBackupStorageLocation that needs approval has a NonAdminBackupStorageLocationRequest in the\n" +
			"OADP namespace (--oadp-namespace). A REQUEST is named by the request's name, or by the location as\n" +
			"NAMESPACE/NAME, or by the location's NAME alone when only one namespace has one of that name.",
		Example: "  kubectl nac bsl request get\n" +
			"  kubectl nac bsl request describe demo/my-bucket\n" +
			"  kubectl nac bsl request approve demo/my-bucket --reason 'bucket owned by team A'\n" +
			"  kubectl nac bsl request reject demo/my-bucket --reason 'use the shared bucket'",
	}
	cmd.AddCommand(newBSLRequestGetCommand(o), newBSLRequestDescribeCommand(o),
		newBSLRequestDecideCommand(o, v1alpha1.ApprovalApprove), newBSLRequestDecideCommand(o, v1alpha1.ApprovalReject))
	return cmd
}

func newBSLRequestGetCommand(o *Options) *cobra.Command {
	var g *getOptions
	cmd := &cobra.Command{
		Use:               "get [REQUEST]",
		Short:             "List storage-location requests, or show one",
		Long:              "Lists the NonAdminBackupStorageLocationRequests of the OADP namespace: phase, whose location (namespace\nand name) and the decision; -o wide adds the provider and bucket asked for.",
		Example:           "  kubectl nac bsl request get\n  kubectl nac bsl request get demo/my-bucket -o yaml",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.requestCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			list := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
			if len(args) == 1 {
				req, err := o.findRequest(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				list.Items = append(list.Items, *req)
			} else if err := c.List(cmd.Context(), list, client.InNamespace(o.OADPNamespace)); err != nil {
				return err
			}
			return g.printList(o, c.Scheme(), list, BSLRequestTable)
		},
	}
	g = addGetFlags(cmd, false)
	g.namespace = o.adminNamespace
	return cmd
}

func newBSLRequestDescribeCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:               "describe REQUEST",
		Short:             "Show a storage-location request: whose, the location asked for, the decision",
		Long:              "Prints the NonAdminBackupStorageLocationRequest REQUEST: the tenant's location (namespace, name,\nNACUUID), the location asked for, the decision, and the location approved when it differs.",
		Example:           "  kubectl nac bsl request describe demo/my-bucket",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.requestCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			req, err := o.findRequest(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			DescribeBSLRequest(o.Out, req)
			return nil
		},
	}
}

// newBSLRequestDecideCommand is `approve` or `reject` (alias `deny`, the
// name in OADP's CLI file).
func newBSLRequestDecideCommand(o *Options, decision v1alpha1.ApprovalDecision) *cobra.Command {
	var reason string
	verb, past, annotation := "approve", "approved", AnnotationApprovalReason
	var aliases []string
	if decision == v1alpha1.ApprovalReject {
		verb, past, annotation, aliases = "reject", "rejected", AnnotationRejectionReason, []string{"deny"}
	}
	cmd := &cobra.Command{
		Use:     verb + " REQUEST",
		Aliases: aliases,
		Short:   strings.ToUpper(verb[:1]) + verb[1:] + " a tenant's storage location",
		Long: "Sets spec.approvalDecision of the NonAdminBackupStorageLocationRequest REQUEST to " + string(decision) + " (a merge\n" +
			"patch), with --reason in the annotation " + annotation + ". nacflow then " +
			map[bool]string{true: "creates the tenant's Velero BackupStorageLocation.", false: "refuses the location (and removes its Velero location if it had one)."}[decision == v1alpha1.ApprovalApprove],
		Example:           "  kubectl nac bsl request " + verb + " demo/my-bucket --reason 'checked with the bucket owner'",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.requestCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			req, err := o.findRequest(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			who := req.Name
			if src := req.Status.SourceNonAdminBSL; src != nil {
				who = fmt.Sprintf("%s (NonAdminBackupStorageLocation %s/%s)", req.Name, src.Namespace, src.Name)
			}
			if req.Spec.ApprovalDecision == decision && (reason == "" || req.Annotations[annotation] == reason) {
				fmt.Fprintf(o.Out, "Request %s is already %s.\n", who, past)
				return nil
			}
			patch := map[string]any{"spec": map[string]any{"approvalDecision": decision}}
			if reason != "" {
				patch["metadata"] = map[string]any{"annotations": map[string]string{annotation: reason}}
			}
			data, err := json.Marshal(patch)
			if err != nil {
				return err
			}
			if err := c.Patch(cmd.Context(), req, client.RawPatch(types.MergePatchType, data)); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Request %s %s.\n", who, past)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "Why, kept in the annotation "+annotation+".")
	return cmd
}

// findRequest resolves REQUEST: a request's name, NAMESPACE/NAME of the
// tenant's location, or NAME of the location when it is unique.
func (o *Options) findRequest(ctx context.Context, c client.Client, ref string) (*v1alpha1.NonAdminBackupStorageLocationRequest, error) {
	req := &v1alpha1.NonAdminBackupStorageLocationRequest{}
	if !strings.Contains(ref, "/") {
		err := c.Get(ctx, client.ObjectKey{Namespace: o.OADPNamespace, Name: ref}, req)
		if err == nil {
			return req, nil
		}
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
	}
	list := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
	if err := c.List(ctx, list, client.InNamespace(o.OADPNamespace)); err != nil {
		return nil, err
	}
	ns, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		ns, name = "", ref
	}
	var found []v1alpha1.NonAdminBackupStorageLocationRequest
	for _, r := range list.Items {
		src := r.Status.SourceNonAdminBSL
		if src != nil && src.Name == name && (ns == "" || src.Namespace == ns) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no NonAdminBackupStorageLocationRequest in %s is named %q or is for the location %q", o.OADPNamespace, ref, ref)
	case 1:
		return &found[0], nil
	}
	var names []string
	for _, r := range found {
		names = append(names, r.Status.SourceNonAdminBSL.Namespace+"/"+name)
	}
	return nil, fmt.Errorf("%q names the locations of several namespaces (%s): give NAMESPACE/NAME", ref, strings.Join(names, ", "))
}

// requestCompletion completes REQUEST with NAMESPACE/NAME of every request.
func (o *Options) requestCompletion(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
	if err := c.List(cmd.Context(), list, client.InNamespace(o.OADPNamespace)); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, r := range list.Items {
		if src := r.Status.SourceNonAdminBSL; src != nil {
			out = append(out, src.Namespace+"/"+src.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
