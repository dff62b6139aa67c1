package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// errInvalid marks a check that found problems: exit status 1 and nothing
// more to print (the findings are on standard output).
var errInvalid = errors.New("invalid")

// offlineRegistry returns the phase registry without clients: enough to
// validate, preview and document (nothing runs). Its error is
// phases.NewRegistry's (two functions of one name: a build defect).
func offlineRegistry() (*engine.Registry, error) {
	return phases.NewRegistry(phases.Clients{}, phases.Options{})
}

// fileCommand is a command without arguments that reads the file of its
// required -f (fileUsage; "-" reads standard input) and runs run on its
// contents.
func (o *Options) fileCommand(use, fileUsage string, run func(cmd *cobra.Command, file string, data []byte) error) *cobra.Command {
	var file string
	cmd := &cobra.Command{Use: use, Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		data, err := readInput(file, o.In)
		if err != nil {
			return err
		}
		return run(cmd, file, data)
	}}
	cmd.Flags().StringVarP(&file, "filename", "f", "", fileUsage)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// readInput reads path, or in for "-".
func readInput(path string, in io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(in)
	}
	return os.ReadFile(path)
}

// documents splits a YAML stream into its non-empty documents.
func documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func stripComments(d []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(d, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// newBlueprintCommand: kubectl nac blueprint validate|dump|diff.
func newBlueprintCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{Use: "blueprint"}
	cmd.AddCommand(newBlueprintValidateCommand(o), newBlueprintDumpCommand(o), newBlueprintDiffCommand(o))
	return cmd
}

func newBlueprintValidateCommand(o *Options) *cobra.Command {
	return o.fileCommand("validate -f FILE", "Blueprint YAML file (several documents allowed); - reads standard input.",
		func(_ *cobra.Command, file string, data []byte) error {
			reg, err := offlineRegistry()
			if err != nil {
				return err
			}
			invalid := false
			for _, doc := range documents(data) {
				bp := &v1alpha1.Blueprint{}
				if err := yaml.UnmarshalStrict(doc, bp); err != nil {
					fmt.Fprintf(o.Out, "%s: not a Blueprint: %v\n", file, err)
					invalid = true
					continue
				}
				errs := blueprints.Validate(bp, reg)
				if len(errs) == 0 {
					fmt.Fprintf(o.Out, "%s: blueprint %s is valid\n", file, bp.Name)
					continue
				}
				invalid = true
				fmt.Fprintf(o.Out, "%s: blueprint %s has %d error(s):\n", file, bp.Name, len(errs))
				for _, e := range errs {
					fmt.Fprintf(o.Out, "  - %s\n", e)
				}
			}
			if invalid {
				return errInvalid
			}
			return nil
		})
}

func newBlueprintDumpCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:       "dump KIND",
		Args:      cobra.ExactArgs(1),
		ValidArgs: dumpKinds(),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := builtinName(args[0])
			if name == "" {
				return fmt.Errorf("blueprint dump: unknown kind %q (%s)", args[0], v1alpha1.KindNames())
			}
			data, err := blueprints.BuiltInYAML(name)
			if err != nil {
				return err
			}
			_, err = o.Out.Write(data)
			return err
		},
	}
}

func newBlueprintDiffCommand(o *Options) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:  "diff (-f FILE | NAME)",
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return o.completeNames(cmd, &v1alpha1.BlueprintList{}, o.adminNamespace)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if (file == "") == (len(args) == 0) {
				return fmt.Errorf("blueprint diff: give either -f FILE or a Blueprint NAME")
			}
			var bps []*v1alpha1.Blueprint
			if file != "" {
				data, err := readInput(file, o.In)
				if err != nil {
					return err
				}
				for _, doc := range documents(data) {
					bp := &v1alpha1.Blueprint{}
					if err := yaml.UnmarshalStrict(doc, bp); err != nil {
						return fmt.Errorf("%s: not a Blueprint: %w", file, err)
					}
					bps = append(bps, bp)
				}
			} else {
				c, err := o.Client()
				if err != nil {
					return err
				}
				bp := &v1alpha1.Blueprint{}
				if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: o.adminNamespace(), Name: args[0]}, bp); err != nil {
					return err
				}
				bps = append(bps, bp)
			}
			differ := false
			for _, bp := range bps {
				d, err := BlueprintDiff(bp)
				if err != nil {
					return err
				}
				if d == "" {
					fmt.Fprintf(o.Out, "blueprint %s: same as the built-in %s\n", bp.Name, blueprints.BuiltInFor(bp.Spec.Kind))
					continue
				}
				differ = true
				fmt.Fprint(o.Out, d)
			}
			if differ {
				return errInvalid
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "Blueprint YAML file (several documents allowed); - reads standard input.")
	return cmd
}

// BlueprintDiff returns the unified diff from the built-in blueprint of bp's
// kind to bp, both as normalised spec YAML; "" when they are equal. It fails
// when bp's kind has no built-in blueprint.
func BlueprintDiff(bp *v1alpha1.Blueprint) (string, error) {
	name := blueprints.BuiltInFor(bp.Spec.Kind)
	if name == "" {
		return "", fmt.Errorf("blueprint %s: spec.kind %q is not a NAC kind (%s)", bp.Name, bp.Spec.Kind, v1alpha1.KindNames())
	}
	builtin, err := blueprints.BuiltIn(name)
	if err != nil {
		return "", err
	}
	from, err := yaml.Marshal(builtin.Spec)
	if err != nil {
		return "", err
	}
	to, err := yaml.Marshal(bp.Spec)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(from)), B: difflib.SplitLines(string(to)),
		FromFile: "built-in/" + name, ToFile: "blueprint/" + bp.Name, Context: 3,
	})
}

// builtinName returns the built-in blueprint of the NAC kind named kind
// or by its short name, in any case; "" for any other name.
func builtinName(kind string) string {
	for _, k := range v1alpha1.Kinds() {
		if strings.EqualFold(kind, k.Kind) || strings.EqualFold(kind, k.Short) {
			return k.Blueprint
		}
	}
	return ""
}

// dumpKinds completes blueprint dump's KIND: the short names, then the
// kinds.
func dumpKinds() []string {
	var shorts, names []string
	for _, k := range v1alpha1.Kinds() {
		shorts, names = append(shorts, k.Short), append(names, k.Kind)
	}
	return append(shorts, names...)
}

// newPlanCommand: kubectl nac plan -f FILE [--blueprint FILE | --builtin].
func newPlanCommand(o *Options) *cobra.Command {
	var bpFile string
	var builtin bool
	waitTimeout := engine.DefaultWaitTimeout
	cmd := o.fileCommand("plan -f FILE", "The NAC object as YAML; - reads standard input.",
		func(cmd *cobra.Command, _ string, data []byte) error {
			obj, kind, action, err := decodeNAC(data)
			if err != nil {
				return err
			}
			name := blueprints.BuiltInFor(kind)
			var res blueprints.Resolution
			var nsLabels map[string]string
			switch {
			case bpFile != "":
				res, err = resolveFromFile(bpFile, name, kind, action)
			case builtin:
				res, err = blueprints.BuiltInAction(name, action)
			default:
				res, nsLabels, err = o.resolveLive(cmd.Context(), obj, name, kind, action)
			}
			if err != nil {
				return err
			}
			uuid := "<nacuuid>"
			if obj.GetUID() != "" {
				uuid = v1alpha1.DerivedNACUUID(obj)
			}
			reg, err := offlineRegistry()
			if err != nil {
				return err
			}
			preview, err := engine.Preview(engine.ResolvedAction{Name: action, Blueprint: res.Blueprint, BlueprintGeneration: res.Generation, Spec: res.Action, Message: res.Message},
				engine.Request{Object: obj, UUID: uuid, OADPNamespace: o.OADPNamespace, NamespaceLabels: nsLabels}, reg, waitTimeout, o.now())
			if err != nil {
				return err
			}
			out, err := yaml.Marshal(preview)
			if err != nil {
				return err
			}
			_, err = o.Out.Write(out)
			return err
		})
	cmd.Flags().StringVar(&bpFile, "blueprint", "", "Use this Blueprint file instead of the cluster's blueprints.")
	cmd.Flags().BoolVar(&builtin, "builtin", false, "Use the built-in blueprint, without reading the cluster.")
	cmd.Flags().DurationVar(&waitTimeout, "wait-timeout", waitTimeout, "The controller's --wait-timeout, shown for wait phases without a timeout.")
	cmd.MarkFlagsMutuallyExclusive("blueprint", "builtin")
	return cmd
}

// decodeNAC decodes a NAC object and picks the action the controller would
// run for it now.
func decodeNAC(data []byte) (engine.Object, string, string, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, "", "", fmt.Errorf("plan: %w", err)
	}
	k, ok := v1alpha1.KindNamed(meta.Kind)
	action := k.FirstAction
	if !ok {
		return nil, "", "", fmt.Errorf("plan: kind %q is not a NAC kind (%s)", meta.Kind, v1alpha1.KindNames())
	}
	obj := k.New()
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, "", "", fmt.Errorf("plan: %w", err)
	}
	if nab, ok := obj.(*v1alpha1.NonAdminBackup); ok && nab.Spec.DeleteBackup {
		action = v1alpha1.ActionDelete
	}
	return obj, meta.Kind, action, nil
}

// resolveFromFile takes the action from the first Blueprint of path that
// serves kind; it must validate. A missing action comes from the built-in.
func resolveFromFile(path, builtin, kind, action string) (blueprints.Resolution, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return blueprints.Resolution{}, err
	}
	for _, doc := range documents(data) {
		bp := &v1alpha1.Blueprint{}
		if err := yaml.UnmarshalStrict(doc, bp); err != nil {
			return blueprints.Resolution{}, fmt.Errorf("%s: %w", path, err)
		}
		if bp.Spec.Kind != kind {
			continue
		}
		reg, err := offlineRegistry()
		if err != nil {
			return blueprints.Resolution{}, err
		}
		if errs := blueprints.Validate(bp, reg); len(errs) > 0 {
			return blueprints.Resolution{}, fmt.Errorf("%s: blueprint %s is invalid: %s", path, bp.Name, strings.Join(errs, "; "))
		}
		if a, ok := bp.Spec.Actions[action]; ok {
			return blueprints.Resolution{Blueprint: bp.Name, Generation: "file", Action: &a}, nil
		}
		return blueprints.BuiltInAction(builtin, action)
	}
	return blueprints.Resolution{}, fmt.Errorf("%s: no Blueprint of kind %s", path, kind)
}

// resolveLive resolves as the controller would, against the cluster of the
// kubeconfig flags.
func (o *Options) resolveLive(ctx context.Context, obj engine.Object, builtin, kind, action string) (blueprints.Resolution, map[string]string, error) {
	c, err := o.Client()
	if err != nil {
		return blueprints.Resolution{}, nil, fmt.Errorf("plan: no cluster to read blueprints from (%v): use --builtin or --blueprint FILE", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); client.IgnoreNotFound(err) != nil {
		return blueprints.Resolution{}, nil, fmt.Errorf("plan: reading namespace %s: %w", obj.GetNamespace(), err)
	}
	res, err := (&blueprints.Resolver{Reader: c, Namespace: o.OADPNamespace}).Resolve(ctx, builtin, kind, action, ns.Labels)
	return res, ns.Labels, err
}

// newFuncsCommand: kubectl nac funcs prints the phase function reference.
func newFuncsCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:  "funcs",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := offlineRegistry()
			if err != nil {
				return err
			}
			_, err = io.WriteString(o.Out, FunctionReference(reg))
			return err
		},
	}
}

// FunctionReference renders the reference of every function of reg as
// Markdown (docs/functions.md is this output).
func FunctionReference(reg *engine.Registry) string {
	var b strings.Builder
	b.WriteString("# Phase functions\n\n")
	b.WriteString("Generated by `kubectl nac funcs` (`make docs`) from the function registry: do not edit.\n\n")
	b.WriteString("A blueprint phase is `{name, func, args, timeout, onTimeout, retries}`. String args are Go templates\n")
	b.WriteString("(text/template with an allow-list of deterministic sprig functions, `missingkey=error`) over:\n\n")
	b.WriteString("| parameter | holds |\n| --- | --- |\n")
	for _, p := range [][2]string{
		{"`.Object`", "the NAC object as a map (metadata, spec, status)"},
		{"`.Namespace`, `.Name`", "the NAC object's namespace and name"},
		{"`.NamespaceLabels`", "the labels of the tenant's Namespace (`index .NamespaceLabels \"key\"`)"},
		{"`.OADPNamespace`", "the namespace Velero runs in"},
		{"`.UUID`", "the operation's NACUUID"},
		{"`.Time`", "the plan's start time, RFC 3339 (there is no `now`)"},
		{"`.Phases.<name>.Output.<key>`", "an output of an earlier phase"},
		{"`.DeferPhase.Output.<key>`", "the deferPhase's outputs, once it completed"},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", p[0], p[1])
	}
	fmt.Fprintf(&b, "\nDefaults: `retries` %d (retryable errors back off exponentially, attempts in the phase status); "+
		"`timeout` the controller's `--wait-timeout` (%s) for phases that wait; `onTimeout` fail; no plan `deadline`.\n",
		engine.DefaultRetries, engine.DefaultWaitTimeout)
	b.WriteString("\nThe engine's safety rule holds whatever a blueprint says: phases reach the cluster only through clients " +
		"that refuse, failing the phase with an error quoting the rule:\n\n")
	for _, r := range [][2]string{
		{engine.RuleWriteNamespace, "creates, updates, patches and deletes, status included"},
		{engine.RuleWriteOwn, "only objects carrying the operation's origin NACUUID label, on the live object too; every delete-all is narrowed to that label"},
		{engine.RuleRead, "no other namespace, nothing cluster-wide or cluster-scoped, no watch"},
		{engine.RuleReferences, "a BackupStorageLocation's credential is the operation's own Secret copy; a Restore or DeleteBackupRequest names a Backup of the tenant's namespace; a Backup uses no other tenant's location; WaitFor and SyncStatus act only on the operation's own objects"},
	} {
		fmt.Fprintf(&b, "- `%s`: %s.\n", r[0], r[1])
	}
	b.WriteString("\nA function's exceptions, if any, are listed with it.\n")
	names := reg.Names()
	sort.Strings(names)
	for _, name := range names {
		fn, _ := reg.Get(name)
		fmt.Fprintf(&b, "\n## %s\n\n", name)
		if d, ok := fn.(engine.Documented); ok {
			doc := d.Doc()
			fmt.Fprintf(&b, "%s\n", doc.Summary)
			if doc.Waits {
				b.WriteString("\nWaits: its phase's `timeout` and `onTimeout` apply.\n")
			}
			writeArgs(&b, fn)
			if len(doc.Outputs) > 0 {
				b.WriteString("\nOutputs:\n\n")
				for _, o := range doc.Outputs {
					fmt.Fprintf(&b, "- %s\n", o)
				}
			}
			if doc.Errors != "" {
				fmt.Fprintf(&b, "\nErrors: %s.\n", doc.Errors)
			}
		} else {
			writeArgs(&b, fn)
		}
		if e, ok := fn.(engine.Excepted); ok && len(e.SafetyExceptions()) > 0 {
			b.WriteString("\nSafety rule exceptions:\n\n")
			for _, x := range e.SafetyExceptions() {
				fmt.Fprintf(&b, "- %s: %s\n", x, x.Why)
			}
		}
	}
	return b.String()
}

func writeArgs(b *strings.Builder, fn engine.Func) {
	args := engine.Args(fn)
	if len(args) == 0 {
		b.WriteString("\nArgs: none.\n")
		return
	}
	b.WriteString("\n| arg | type | meaning |\n| --- | --- | --- |\n")
	for _, a := range args {
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", a.Name, a.Type, strings.ReplaceAll(a.Doc, "|", "\\|"))
	}
}
