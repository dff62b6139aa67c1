package cli

import (
	"bufio"
	"context"
	"fmt"
	"github.com/nacflow/nacflow/api/v1alpha1"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

func metaExtractList(list client.ObjectList) ([]runtime.Object, error) {
	return meta.ExtractList(list)
}

func setItems(list client.ObjectList, items []runtime.Object) error {
	return meta.SetList(list, items)
}

// newItemOf returns a new object of the kind list holds (FooList → Foo).
func newItemOf(scheme *runtime.Scheme, list client.ObjectList) (client.Object, error) {
	gvk, err := apiutil.GVKForObject(list, scheme)
	if err != nil {
		return nil, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object kind", gvk)
	}
	return co, nil
}

// completeNames completes the first argument with the names of the objects
// of list in the namespace ns returns (the -n namespace for tenants); shell
// completion must never fail loudly, so errors complete nothing.
func (o *Options) completeNames(cmd *cobra.Command, list client.ObjectList, ns func() string) ([]string, cobra.ShellCompDirective) {
	c, err := o.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if err := c.List(cmd.Context(), list, client.InNamespace(ns())); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		if m, err := meta.Accessor(it); err == nil {
			names = append(names, m.GetName())
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// tenantNamespace is the namespace of -n or the context, "" when it cannot
// be resolved (completion).
func (o *Options) tenantNamespace() string {
	ns, err := o.Namespace()
	if err != nil {
		return ""
	}
	return ns
}

// nameCompletion completes the first argument with the names of the
// objects of newList() in the tenant's namespace.
func (o *Options) nameCompletion(newList func() client.ObjectList) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.completeNames(cmd, newList(), o.tenantNamespace)
	}
}

// flagNameCompletion completes a flag's value with the names of the objects
// of newList() in the tenant's namespace.
func (o *Options) flagNameCompletion(newList func() client.ObjectList) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return o.completeNames(cmd, newList(), o.tenantNamespace)
	}
}

// clientAndNamespace returns the client and the tenant's namespace.
func (o *Options) clientAndNamespace() (client.Client, string, error) {
	c, err := o.Client()
	if err != nil {
		return nil, "", err
	}
	ns, err := o.Namespace()
	return c, ns, err
}

// printObject prints obj as yaml or json (the -o of create and describe).
func (o *Options) printObject(obj client.Object, format string) error {
	var p printers.ResourcePrinter
	switch format {
	case "yaml":
		p = &printers.YAMLPrinter{}
	case "json":
		p = &printers.JSONPrinter{}
	default:
		return fmt.Errorf("unsupported output format %q: use yaml or json", format)
	}
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		scheme, err := v1alpha1.NewScheme()
		if err != nil {
			return err
		}
		if err := setKind(scheme, obj); err != nil {
			return err
		}
	}
	return p.PrintObj(obj, o.Out)
}

// namesToDelete returns args, or with all the names of every object of
// list in ns; it is an error to give both or neither.
func (o *Options) namesToDelete(cmd *cobra.Command, c client.Client, ns string, list client.ObjectList, args []string, all bool, what string) ([]string, error) {
	switch {
	case all && len(args) > 0:
		return nil, fmt.Errorf("give NAMEs or --all, not both")
	case !all && len(args) == 0:
		return nil, fmt.Errorf("give the NAME of the %s to delete, or --all", what)
	case !all:
		return args, nil
	}
	if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, it := range items {
		if m, err := meta.Accessor(it); err == nil {
			names = append(names, m.GetName())
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(o.Out, "No %ss found in namespace %s.\n", what, ns)
	}
	return names, nil
}

// confirm asks on In whether to delete names; only "y" or "yes" agrees.
func (o *Options) confirm(what string, names []string) bool {
	if len(names) == 1 {
		fmt.Fprintf(o.Out, "Are you sure you want to delete %s %q? (y/N): ", what, names[0])
	} else {
		fmt.Fprintf(o.Out, "Are you sure you want to delete %d %ss (%s)? (y/N): ", len(names), what, strings.Join(names, ", "))
	}
	answer, _ := bufio.NewReader(o.In).ReadString('\n')
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes"
}

// describeEvents prints the events of obj, oldest first (kubectl describe's
// Events section); events it may not read are left out quietly.
func (o *Options) describeEvents(ctx context.Context, c client.Client, obj client.Object, kind string) {
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"involvedObject.name": obj.GetName(), "involvedObject.kind": kind}); err != nil {
		return
	}
	var mine []corev1.Event
	for _, e := range events.Items {
		if e.InvolvedObject.UID == obj.GetUID() {
			mine = append(mine, e)
		}
	}
	DescribeEvents(o.Out, mine, o.now())
}
