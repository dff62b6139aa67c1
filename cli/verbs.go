package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// tenantKind describes the command group of one NAC kind a tenant works
// with in their own namespace: the kind itself and the group's name come
// from the kind registry (by T), the rest is what the verbs need of it.
// command builds the group from it: every kind gets the same get and
// describe, and create, logs and delete when it says how, so a verb is
// written once for every kind. The commands' help is in help.txt, by
// command path.
type tenantKind[T v1alpha1.Object] struct {
	// name is the group's command name, the registry's Kind.Command
	// ("backup"), set by command; it is also the noun of prompts and
	// messages ("No backups found", "delete 2 backups").
	name string
	// aliases are the group's other names besides the kind's short name.
	aliases []string
	// create builds the create command (its flags are the kind's own).
	create func(o *Options, k *tenantKind[T]) *cobra.Command
	// progress reads what --wait shows of an object; nil when create has
	// no --wait.
	progress func(obj T) Progress
	columns  []column[T]
	// describeTo writes an object as describe prints it; details is nil
	// without --details.
	describeTo func(w io.Writer, obj T, details *Details, now time.Time)
	// files, when set, are the Velero files of an object: the log the logs
	// command prints and the resource list describe --details reads.
	// Without them there is neither logs nor --details.
	files *veleroFiles
	// delete, when set, is how the delete command deletes.
	delete *deleteVerb
	// more are the kind's own commands besides the shared verbs.
	more []func(o *Options, k *tenantKind[T]) *cobra.Command
	// admin are the admin's subgroups under the group in kubectl nac
	// (`kubectl nac bsl request`); the group under OADP's nonadmin words
	// leaves them out, as OADP's CLI has its own words for them
	// (nabsl-request).
	admin []func(o *Options) *cobra.Command

	// kind is T's registry entry, set by command.
	kind v1alpha1.Kind
}

// veleroFiles are the Velero files of an object, read through a
// NonAdminDownloadRequest.
type veleroFiles struct {
	log, resources velerov1.DownloadTargetKind
	// resourcesUsage is the usage of describe's --details.
	resourcesUsage string
}

// deleteVerb says how delete deletes an object of the kind.
type deleteVerb struct {
	// deletedNote follows "<Kind> <name> deleted" after a plain delete.
	deletedNote string
	// mark, when set, is how the kind is deleted by default instead of
	// the plain delete, which --keep-data then asks for.
	mark *markForDeletion
}

// markForDeletion deletes by a merge patch that asks the controller to
// delete.
type markForDeletion struct {
	patch string
	// keepDataUsage is the usage of --keep-data.
	keepDataUsage string
	// after is printed once every object was marked; %s is the namespace.
	after string
}

// registryKind returns the kind registry's entry for T, read when the
// group's command was made (command).
func (k *tenantKind[T]) registryKind() v1alpha1.Kind { return k.kind }

// command returns the kind's command group over o, named by the
// registry's Kind.Command. A kind the registry lacks (a build defect) gets
// a group that says so when run.
func (k *tenantKind[T]) command(o *Options) *cobra.Command {
	kind, err := v1alpha1.KindFor[T]()
	if err != nil {
		return &cobra.Command{Use: fmt.Sprintf("%T", *new(T)), RunE: func(*cobra.Command, []string) error { return err }}
	}
	k.kind, k.name = kind, kind.Command
	cmd := &cobra.Command{Use: k.name, Aliases: append(append([]string(nil), k.aliases...), k.registryKind().Short)}
	if k.create != nil {
		cmd.AddCommand(k.create(o, k))
	}
	cmd.AddCommand(k.getCommand(o), k.describeCommand(o))
	if k.files != nil {
		cmd.AddCommand(k.logsCommand(o))
	}
	if k.delete != nil {
		cmd.AddCommand(k.deleteCommand(o))
	}
	for _, more := range k.more {
		cmd.AddCommand(more(o, k))
	}
	return cmd
}

// verb returns the command use of the kind: its arguments complete with the
// names of the kind's objects in the tenant's namespace.
func (k *tenantKind[T]) verb(o *Options, use string, args cobra.PositionalArgs, run func(cmd *cobra.Command, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Args: args, ValidArgsFunction: o.nameCompletion(k.registryKind().NewList), RunE: run}
}

// table is the kind's get table (a tableFunc).
func (k *tenantKind[T]) table(list client.ObjectList, now time.Time) *metav1.Table {
	return tableOf(list, now, k.columns)
}

func (k *tenantKind[T]) getCommand(o *Options) *cobra.Command {
	kind := k.registryKind()
	var g *getOptions
	cmd := k.verb(o, "get [NAME]", cobra.MaximumNArgs(1), func(cmd *cobra.Command, args []string) error {
		return g.list(cmd, o, kind.NewList(), firstArg(args), k.table)
	})
	g = addGetFlags(cmd, true)
	return cmd
}

func (k *tenantKind[T]) describeCommand(o *Options) *cobra.Command {
	kind := k.registryKind()
	var details bool
	var output string
	var d *downloadOptions
	cmd := k.verb(o, "describe NAME", cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		obj := kind.New().(T)
		c, err := o.getTenantObject(cmd, args[0], obj)
		if err != nil {
			return err
		}
		if output != "" {
			return o.printObject(obj, output)
		}
		var det *Details
		if details {
			det = o.resourceDetails(cmd.Context(), c, obj.GetNamespace(), k.files.resources, obj.GetName(), d)
		}
		k.describeTo(o.Out, obj, det, o.now())
		o.describeEvents(cmd.Context(), c, obj, kind.Kind)
		return nil
	})
	if k.files != nil {
		cmd.Flags().BoolVar(&details, "details", false, k.files.resourcesUsage)
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the "+kind.Kind+" as yaml or json instead.")
	if k.files != nil {
		d = addDownloadFlags(cmd)
	}
	return cmd
}

func (k *tenantKind[T]) logsCommand(o *Options) *cobra.Command {
	kind := k.registryKind()
	var d *downloadOptions
	cmd := k.verb(o, "logs NAME", cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		obj := kind.New()
		c, err := o.getTenantObject(cmd, args[0], obj)
		if err != nil {
			return err
		}
		// Streamed as it comes, whatever its size, as velero backup logs
		// does.
		return o.DownloadTo(cmd.Context(), c, obj.GetNamespace(), k.files.log, obj.GetName(), d, o.Out, true)
	})
	d = addDownloadFlags(cmd)
	return cmd
}

func (k *tenantKind[T]) deleteCommand(o *Options) *cobra.Command {
	kind, del := k.registryKind(), k.delete
	var confirm, all, keepData bool
	cmd := k.verb(o, "delete [NAME...] | --all", nil, func(cmd *cobra.Command, args []string) error {
		c, ns, err := o.clientAndNamespace()
		if err != nil {
			return err
		}
		names, err := o.namesToDelete(cmd, c, ns, kind.NewList(), args, all, k.name)
		if err != nil || len(names) == 0 {
			return err
		}
		what := k.name
		if keepData {
			what += " (keeping its data)"
		}
		if !confirm && !o.confirm(what, names) {
			fmt.Fprintln(o.Out, "Deletion cancelled.")
			return nil
		}
		marking := del.mark != nil && !keepData
		failed := 0
		for _, name := range names {
			obj := kind.New()
			obj.SetNamespace(ns)
			obj.SetName(name)
			if marking {
				err = c.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, []byte(del.mark.patch)))
			} else {
				err = c.Delete(cmd.Context(), obj)
			}
			switch {
			case err != nil:
				failed++
				fmt.Fprintf(o.ErrOut, "Failed to delete %s %s: %v\n", kind.Kind, name, err)
			case marking:
				fmt.Fprintf(o.Out, "%s %s marked for deletion.\n", kind.Kind, name)
			default:
				fmt.Fprintf(o.Out, "%s %s deleted%s.\n", kind.Kind, name, del.deletedNote)
			}
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d %ss could not be deleted", failed, len(names), kind.Kind)
		}
		if marking {
			fmt.Fprintf(o.Out, del.mark.after+"\n", ns)
		}
		return nil
	})
	cmd.Flags().BoolVar(&confirm, "confirm", false, "Skip the confirmation prompt and delete at once.")
	cmd.Flags().BoolVar(&all, "all", false, "Delete every "+kind.Kind+" of the namespace.")
	if del.mark != nil {
		cmd.Flags().BoolVar(&keepData, "keep-data", false, del.mark.keepDataUsage)
	}
	return cmd
}

// createCommand is the kind's create command: build makes the object NAME
// of the tenant's namespace from the flags, submit creates it (--wait and
// -o of f). Its flags are the caller's to add.
func (k *tenantKind[T]) createCommand(o *Options, use string, f *createFlags, build func(ns, name string) (T, error)) *cobra.Command {
	return &cobra.Command{Use: use, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			obj, err := build(ns, args[0])
			if err != nil {
				return err
			}
			return k.submit(cmd, o, obj, f.out, f.wait)
		}}
}

// submit creates obj, the object create built, or with -o or --dry-run
// prints it instead (createOrPrint); with --wait it then follows obj until
// its operation ends (k.progress), returning *OperationFailed when it did
// not succeed.
func (k *tenantKind[T]) submit(cmd *cobra.Command, o *Options, obj T, out createOutput, wait bool) error {
	c, created, err := o.createOrPrint(cmd, obj, out)
	if err != nil || !created {
		return err
	}
	kind, name, ns := k.registryKind(), obj.GetName(), obj.GetNamespace()
	fmt.Fprintf(o.Out, "%s request %q submitted successfully.\n", kind.Kind, name)
	if !wait || k.progress == nil {
		if k.files != nil {
			fmt.Fprintf(o.Out, "Run `kubectl nac %[1]s describe %[2]s -n %[3]s` or `kubectl nac %[1]s logs %[2]s -n %[3]s` for more details.\n", k.name, name, ns)
		} else {
			fmt.Fprintf(o.Out, "Run `kubectl nac %[1]s describe %[2]s -n %[3]s` for more details.\n", k.name, name, ns)
		}
		return nil
	}
	fmt.Fprintf(o.Out, "Waiting for the %[1]s to complete. You may safely press ctrl-c to stop waiting: the %[1]s goes on.\n", k.name)
	return o.follow(cmd.Context(), c, obj, kind.NewList(), kind.Kind, func() Progress { return k.progress(obj) })
}

// getTenantObject reads obj, the object name of the tenant's namespace (-n,
// else the context's), and returns the client it used.
func (o *Options) getTenantObject(cmd *cobra.Command, name string, obj client.Object) (client.Client, error) {
	c, ns, err := o.clientAndNamespace()
	if err != nil {
		return nil, err
	}
	return c, c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

// createOutput are the output flags of every create verb: -o prints the
// object as yaml or json instead of creating it (OADP's CLI); --dry-run is
// kubectl's: client prints without asking the API server, server has it
// check the object without storing it.
type createOutput struct {
	output, dryRun string
}

// addFlags adds -o and --dry-run to cmd; object names the kind it creates.
func (out *createOutput) addFlags(cmd *cobra.Command, object string) {
	fl := cmd.Flags()
	fl.StringVarP(&out.output, "output", "o", "", "Print the "+object+" as yaml or json instead of creating it.")
	fl.StringVar(&out.dryRun, "dry-run", "none", `Must be "none", "server", or "client". client: print the `+object+` (with -o, as yaml or json) without creating it; server: the API server checks it (admission, the CRD's validation) and stores nothing.`)
	fl.Lookup("dry-run").NoOptDefVal = "client"
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{"none", "server", "client"}, cobra.ShellCompDirectiveNoFileComp))
}

// createOrPrint creates obj with the client of o, unless out says to print
// it: -o alone or --dry-run=client prints it (created false); with
// --dry-run=server the API server checks it, and what it would store is
// printed (created false). Errors: an unknown --dry-run or -o, the API
// server's.
func (o *Options) createOrPrint(cmd *cobra.Command, obj client.Object, out createOutput) (c client.Client, created bool, err error) {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	switch out.dryRun {
	case "", "none":
		if out.output != "" {
			return nil, false, o.printObject(obj, out.output)
		}
	case "client":
		if out.output != "" {
			return nil, false, o.printObject(obj, out.output)
		}
		fmt.Fprintf(o.Out, "%s %q created (dry run)\n", kind, obj.GetName())
		return nil, false, nil
	case "server":
	default:
		return nil, false, fmt.Errorf(`--dry-run: %q is not one of "none", "server", "client"`, out.dryRun)
	}
	if c, err = o.Client(); err != nil {
		return nil, false, err
	}
	if out.dryRun == "server" {
		if err := c.Create(cmd.Context(), obj, client.DryRunAll); err != nil {
			return nil, false, err
		}
		obj.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
		if out.output != "" {
			return nil, false, o.printObject(obj, out.output)
		}
		fmt.Fprintf(o.Out, "%s %q created (server dry run)\n", kind, obj.GetName())
		return nil, false, nil
	}
	if err := c.Create(cmd.Context(), obj); err != nil {
		return nil, false, err
	}
	return c, true, nil
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
