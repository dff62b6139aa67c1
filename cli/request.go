package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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

func newBSLRequestCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "request",
		Aliases: []string{"requests", "nabslrequest"},
	}
	cmd.AddCommand(newBSLRequestGetCommand(o), newBSLRequestDescribeCommand(o),
		newBSLRequestDecideCommand(o, v1alpha1.ApprovalApprove), newBSLRequestDecideCommand(o, v1alpha1.ApprovalReject))
	return cmd
}

func newBSLRequestGetCommand(o *Options) *cobra.Command {
	var g *getOptions
	cmd := &cobra.Command{
		Use:               "get [REQUEST]",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.requestCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			list := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
			if len(args) == 0 {
				err = c.List(cmd.Context(), list, client.InNamespace(o.OADPNamespace))
			} else {
				list.Items = make([]v1alpha1.NonAdminBackupStorageLocationRequest, 1)
				err = o.findRequest(cmd.Context(), c, args[0], &list.Items[0])
			}
			if err != nil {
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
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.requestCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &v1alpha1.NonAdminBackupStorageLocationRequest{}
			if _, err := o.getRequest(cmd, args[0], req); err != nil {
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
		Use:               verb + " REQUEST",
		Aliases:           aliases,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.requestCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &v1alpha1.NonAdminBackupStorageLocationRequest{}
			c, err := o.getRequest(cmd, args[0], req)
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

// getRequest reads into req the request REQUEST names (findRequest) with
// the client of o, which it returns.
func (o *Options) getRequest(cmd *cobra.Command, ref string, req *v1alpha1.NonAdminBackupStorageLocationRequest) (client.Client, error) {
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	return c, o.findRequest(cmd.Context(), c, ref, req)
}

// findRequest reads into req the request ref names: a request's name,
// NAMESPACE/NAME of the tenant's location, or NAME of the location when it
// is unique.
func (o *Options) findRequest(ctx context.Context, c client.Client, ref string, req *v1alpha1.NonAdminBackupStorageLocationRequest) error {
	if !strings.Contains(ref, "/") {
		err := c.Get(ctx, client.ObjectKey{Namespace: o.OADPNamespace, Name: ref}, req)
		if client.IgnoreNotFound(err) != nil || err == nil {
			return err
		}
	}
	list := &v1alpha1.NonAdminBackupStorageLocationRequestList{}
	if err := c.List(ctx, list, client.InNamespace(o.OADPNamespace)); err != nil {
		return err
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
		return fmt.Errorf("no NonAdminBackupStorageLocationRequest in %s is named %q or is for the location %q", o.OADPNamespace, ref, ref)
	case 1:
		found[0].DeepCopyInto(req)
		return nil
	}
	var names []string
	for _, r := range found {
		names = append(names, r.Status.SourceNonAdminBSL.Namespace+"/"+name)
	}
	return fmt.Errorf("%q names the locations of several namespaces (%s): give NAMESPACE/NAME", ref, strings.Join(names, ", "))
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
