package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/controllers"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// subcommands are the offline tools of nac; anything else runs the manager.
var subcommands = map[string]func(args []string, stdin io.Reader, stdout io.Writer) error{
	"blueprint": blueprintCmd,
	"plan":      planCmd,
	"funcs":     funcsCmd,
}

// errInvalid marks a check that found problems (exit status 1, nothing else
// to print).
var errInvalid = errors.New("invalid")

// runSubcommand runs the subcommand in args[0] and returns the exit status.
func runSubcommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := subcommands[args[0]](args[1:], stdin, stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errInvalid):
		return 1
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "nac:", err)
		return 2
	}
}

// registry returns the phase registry without clients: enough to validate,
// preview and document (nothing runs).
func offlineRegistry() *engine.Registry {
	reg, err := phases.New(phases.Clients{}, phases.Options{})
	if err != nil {
		panic(err) // two functions with one name: a build defect
	}
	return reg
}

// readInput reads path, or standard input for "-".
func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
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

// blueprintCmd: nac blueprint validate -f FILE | nac blueprint dump KIND.
func blueprintCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: nac blueprint validate -f FILE | nac blueprint dump KIND")
	}
	switch args[0] {
	case "validate":
		fs := flag.NewFlagSet("blueprint validate", flag.ContinueOnError)
		file := fs.String("f", "", "Blueprint YAML file (several documents allowed); - reads standard input.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *file == "" {
			return fmt.Errorf("blueprint validate: -f FILE is required")
		}
		data, err := readInput(*file, stdin)
		if err != nil {
			return err
		}
		reg, invalid := offlineRegistry(), false
		for _, doc := range documents(data) {
			bp := &v1alpha1.Blueprint{}
			if err := yaml.UnmarshalStrict(doc, bp); err != nil {
				fmt.Fprintf(stdout, "%s: not a Blueprint: %v\n", *file, err)
				invalid = true
				continue
			}
			errs := controllers.ValidateBlueprint(bp, reg)
			if len(errs) == 0 {
				fmt.Fprintf(stdout, "%s: blueprint %s is valid\n", *file, bp.Name)
				continue
			}
			invalid = true
			fmt.Fprintf(stdout, "%s: blueprint %s has %d error(s):\n", *file, bp.Name, len(errs))
			for _, e := range errs {
				fmt.Fprintf(stdout, "  - %s\n", e)
			}
		}
		if invalid {
			return errInvalid
		}
		return nil
	case "dump":
		if len(args) != 2 {
			return fmt.Errorf("usage: nac blueprint dump KIND (NonAdminBackup, NonAdminRestore, NonAdminBackupStorageLocation, NonAdminDownloadRequest)")
		}
		name := builtinName(args[1])
		if name == "" {
			return fmt.Errorf("blueprint dump: unknown kind %q (NonAdminBackup, NonAdminRestore, NonAdminBackupStorageLocation, NonAdminDownloadRequest)", args[1])
		}
		data, err := blueprints.BuiltInYAML(name)
		if err != nil {
			return err
		}
		_, err = stdout.Write(data)
		return err
	default:
		return fmt.Errorf("blueprint: unknown command %q (validate, dump)", args[0])
	}
}

// builtinName accepts a kind, its short name or the blueprint's name.
func builtinName(kind string) string {
	switch strings.ToLower(kind) {
	case "nonadminbackup", "nab":
		return blueprints.NonAdminBackup
	case "nonadminrestore", "nar":
		return blueprints.NonAdminRestore
	case "nonadminbackupstoragelocation", "nabsl":
		return blueprints.NonAdminBackupStorageLocation
	case "nonadmindownloadrequest", "nadr":
		return blueprints.NonAdminDownloadRequest
	}
	return ""
}

// planCmd: nac plan -f FILE [--blueprint FILE | --builtin].
func planCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	file := fs.String("f", "", "The NAC object (NonAdminBackup, NonAdminRestore, NonAdminBackupStorageLocation, NonAdminDownloadRequest) as YAML; - reads standard input.")
	bpFile := fs.String("blueprint", "", "Use this Blueprint file instead of the cluster's blueprints.")
	builtin := fs.Bool("builtin", false, "Use the built-in blueprint, without reading the cluster.")
	oadpNS := fs.String("oadp-namespace", envOr(namespaceEnvVar, "openshift-adp"), "The OADP namespace (for rendering and for reading the cluster's blueprints).")
	waitTimeout := fs.Duration("wait-timeout", engine.DefaultWaitTimeout, "The controller's --wait-timeout, shown for wait phases without a timeout.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("plan: -f FILE is required")
	}
	data, err := readInput(*file, stdin)
	if err != nil {
		return err
	}
	obj, kind, action, err := decodeNAC(data)
	if err != nil {
		return err
	}
	name := blueprints.BuiltInFor(kind)
	var res blueprints.Resolution
	var nsLabels map[string]string
	switch {
	case *bpFile != "":
		res, err = resolveFromFile(*bpFile, name, kind, action)
	case *builtin:
		res, err = blueprints.BuiltInAction(name, action)
	default:
		res, nsLabels, err = resolveLive(obj, *oadpNS, name, kind, action)
	}
	if err != nil {
		return err
	}
	uuid := "<nacuuid>"
	if obj.GetUID() != "" {
		uuid = controllers.NACUUID(obj.GetUID())
	}
	preview, err := engine.Preview(engine.Plan{Action: action, Blueprint: res.Blueprint, BlueprintGeneration: res.Generation, Spec: res.Action, Message: res.Message},
		engine.Request{Object: obj, UUID: uuid, OADPNamespace: *oadpNS, NamespaceLabels: nsLabels}, offlineRegistry(), *waitTimeout, time.Now())
	if err != nil {
		return err
	}
	out, err := yaml.Marshal(preview)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// decodeNAC decodes a NAC object and picks the action the controller would
// run for it now.
func decodeNAC(data []byte) (engine.Object, string, string, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, "", "", fmt.Errorf("plan: %w", err)
	}
	var obj engine.Object
	action := ""
	switch meta.Kind {
	case "NonAdminBackup":
		obj, action = &v1alpha1.NonAdminBackup{}, controllers.ActionBackup
	case "NonAdminRestore":
		obj, action = &v1alpha1.NonAdminRestore{}, controllers.ActionRestore
	case "NonAdminBackupStorageLocation":
		obj, action = &v1alpha1.NonAdminBackupStorageLocation{}, controllers.ActionCreate
	case "NonAdminDownloadRequest":
		obj, action = &v1alpha1.NonAdminDownloadRequest{}, controllers.ActionDownload
	default:
		return nil, "", "", fmt.Errorf("plan: kind %q is not a NAC kind (NonAdminBackup, NonAdminRestore, NonAdminBackupStorageLocation, NonAdminDownloadRequest)", meta.Kind)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, "", "", fmt.Errorf("plan: %w", err)
	}
	if nab, ok := obj.(*v1alpha1.NonAdminBackup); ok && nab.Spec.DeleteBackup {
		action = controllers.ActionDelete
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
		if errs := controllers.ValidateBlueprint(bp, offlineRegistry()); len(errs) > 0 {
			return blueprints.Resolution{}, fmt.Errorf("%s: blueprint %s is invalid: %s", path, bp.Name, strings.Join(errs, "; "))
		}
		if a, ok := bp.Spec.Actions[action]; ok {
			return blueprints.Resolution{Blueprint: bp.Name, Generation: "file", Action: &a}, nil
		}
		return blueprints.BuiltInAction(builtin, action)
	}
	return blueprints.Resolution{}, fmt.Errorf("%s: no Blueprint of kind %s", path, kind)
}

// resolveLive resolves as the controller would, against the cluster of
// --kubeconfig / $KUBECONFIG.
func resolveLive(obj engine.Object, oadpNS, builtin, kind, action string) (blueprints.Resolution, map[string]string, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return blueprints.Resolution{}, nil, fmt.Errorf("plan: no cluster to read blueprints from (%v): use --builtin or --blueprint FILE", err)
	}
	scheme, err := controllers.NewScheme()
	if err != nil {
		return blueprints.Resolution{}, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return blueprints.Resolution{}, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); client.IgnoreNotFound(err) != nil {
		return blueprints.Resolution{}, nil, fmt.Errorf("plan: reading namespace %s: %w", obj.GetNamespace(), err)
	}
	res, err := (&blueprints.Resolver{Reader: c, Namespace: oadpNS}).Resolve(ctx, builtin, kind, action, ns.Labels)
	return res, ns.Labels, err
}

// funcsCmd: nac funcs [--markdown] prints the phase function reference.
func funcsCmd(args []string, _ io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("funcs", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := io.WriteString(stdout, FunctionReference(offlineRegistry()))
	return err
}

// FunctionReference renders the reference of every function of reg as
// Markdown (docs/functions.md is this output).
func FunctionReference(reg *engine.Registry) string {
	var b strings.Builder
	b.WriteString("# Phase functions\n\n")
	b.WriteString("Generated by `nac funcs` (`make docs`) from the function registry: do not edit.\n\n")
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
