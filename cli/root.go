// Package cli is the command tree of kubectl-nac, nacflow's kubectl plugin:
// the tenant's verbs on NonAdminBackups, NonAdminRestores and
// NonAdminBackupStorageLocations (the names and flags of OADP's `kubectl oadp
// nonadmin`, migtools/oadp-cli), the admin's storage-location requests, and
// the blueprint tools (validate, dump, diff, plan, funcs). It is built on
// spf13/cobra and k8s.io/cli-runtime, as kubectl, velero, flux and kanctl are:
// --kubeconfig, --context, -n and -o behave as in kubectl.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/nacflow/nacflow/api/v1alpha1"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespaceEnvVar is OADP NAC's variable for the OADP namespace.
const namespaceEnvVar = "WATCH_NAMESPACE"

// DefaultOADPNamespace is the OADP namespace when neither --oadp-namespace
// nor $WATCH_NAMESPACE names one (OADP's default).
const DefaultOADPNamespace = "openshift-adp"

// Options is what every command shares: the kubeconfig flags of cli-runtime,
// the streams, the OADP namespace and a clock.
type Options struct {
	// ConfigFlags are kubectl's --kubeconfig, --context, -n, --server, … .
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	// OADPNamespace is where Velero and the admin's objects live
	// (--oadp-namespace).
	OADPNamespace string
	// Now is the clock (time.Now unless a test sets it).
	Now func() time.Time
	// PollInterval is how often --wait and logs re-read an object (1 s
	// unless a test sets it).
	PollInterval time.Duration
	// Terminal reports whether Out is a terminal (progress bar) or not
	// (plain lines); Width is its width in columns (0: unknown).
	Terminal bool
	Width    int

	client client.Client
}

// NewOptions returns Options over streams with kubectl's default kubeconfig
// flags.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	ns := os.Getenv(namespaceEnvVar)
	if ns == "" {
		ns = DefaultOADPNamespace
	}
	return &Options{
		ConfigFlags:   genericclioptions.NewConfigFlags(true),
		IOStreams:     streams,
		OADPNamespace: ns,
		Now:           time.Now,
		PollInterval:  time.Second,
	}
}

func (o *Options) now() time.Time { return o.Now() }

// Client returns a client of the cluster the kubeconfig flags name, with the
// NAC, Velero and core types (a client.WithWatch, so that --wait follows
// every status write); it is made once.
func (o *Options) Client() (client.Client, error) {
	if o.client != nil {
		return o.client, nil
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return o.newClient(cfg)
}

func (o *Options) newClient(cfg *rest.Config) (client.Client, error) {
	scheme, err := v1alpha1.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	o.client = c
	return c, nil
}

// SetClient makes every command use c (tests).
func (o *Options) SetClient(c client.Client) { o.client = c }

// Namespace returns the namespace of -n, else the kubeconfig context's, else
// "default" (kubectl's rule).
func (o *Options) Namespace() (string, error) {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("resolving the namespace: %w", err)
	}
	return ns, nil
}

func (o *Options) adminNamespace() string { return o.OADPNamespace }

// NewRootCommand returns the kubectl-nac command tree over o.
func NewRootCommand(o *Options) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-nac",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl nac"},
	}
	flags := root.PersistentFlags()
	o.ConfigFlags.AddFlags(flags)
	flags.StringVar(&o.OADPNamespace, "oadp-namespace", o.OADPNamespace, "The OADP namespace, where Velero and the admin's objects live ($"+namespaceEnvVar+" when set).")
	root.AddCommand(tenantGroups(o, true)...)
	root.AddCommand(
		newBlueprintCommand(o),
		newPlanCommand(o),
		newFuncsCommand(o),
		newUsageCommand(o),
		newVersionCommand(o),
		newNonAdminCommand(o),
		newNABSLRequestCommand(o),
	)
	if err := setHelp(root); err != nil {
		// Every command says so rather than the process panicking.
		root.PersistentPreRunE = func(*cobra.Command, []string) error { return err }
	}
	// The completion commands bind their output when they are made.
	root.SetIn(o.In)
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = "  source <(kubectl nac completion bash)\n" +
			"  kubectl nac completion zsh > \"${fpath[1]}/_kubectl-nac\"\n" +
			"  kubectl nac completion fish > ~/.config/fish/completions/kubectl-nac.fish"
		for _, shell := range c.Commands() {
			shell.Example = "  kubectl nac completion " + shell.Name() + " > kubectl-nac-completion." + shell.Name()
			if shell.Name() == "bash" {
				withKubectlNac(shell)
			}
		}
	}
	return root
}

// kubectlNacBash is appended to cobra's bash completion of kubectl-nac, so
// that `kubectl nac <TAB>` completes too, not only `kubectl-nac <TAB>`: it
// completes kubectl's command line, handing `kubectl nac …` to kubectl-nac's
// completion (as `kubectl-nac …`) and everything else to the completion
// kubectl had when the script was sourced (`source <(kubectl completion
// bash)` first), or to file names when it had none.
const kubectlNacBash = `
# kubectl nac <TAB>: kubectl-nac's completion; any other kubectl command
# line: the completion kubectl had before.
__kubectl_nac_previous=$(complete -p kubectl 2>/dev/null | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
[[ $__kubectl_nac_previous == __kubectl_nac_kubectl ]] && __kubectl_nac_previous=
__kubectl_nac_kubectl()
{
    if [[ ${COMP_CWORD} -ge 2 && ${COMP_WORDS[1]} == nac ]]; then
        local COMP_WORDS=(kubectl-nac "${COMP_WORDS[@]:2}")
        local COMP_CWORD=$((COMP_CWORD - 1))
        local COMP_LINE="kubectl-nac ${COMP_LINE#*nac}"
        local COMP_POINT=${#COMP_LINE}
        __start_kubectl-nac kubectl-nac "$2" "${COMP_WORDS[COMP_CWORD-1]}"
    elif [[ -n $__kubectl_nac_previous ]]; then
        "$__kubectl_nac_previous" "$@"
    else
        COMPREPLY=($(compgen -f -- "$2"))
    fi
}
complete -o default -F __kubectl_nac_kubectl kubectl
`

// withKubectlNac makes bash, cobra's `completion bash` command, print
// kubectlNacBash after cobra's script.
func withKubectlNac(bash *cobra.Command) {
	run := bash.RunE
	bash.RunE = func(cmd *cobra.Command, args []string) error {
		if err := run(cmd, args); err != nil {
			return err
		}
		_, err := io.WriteString(cmd.OutOrStdout(), kubectlNacBash)
		return err
	}
	bash.Long += "\n\nThe script also completes `kubectl nac …`: source it after kubectl's own completion (source <(kubectl completion bash)), which it keeps for every other kubectl command."
}

// ExitCode runs root with args and returns the process exit status: 0, 1
// for a failed check or a failed operation (its message on stderr, except
// for validate/diff whose findings are on stdout), 2 for a usage or API
// error.
func ExitCode(ctx context.Context, o *Options, args []string) int {
	root := NewRootCommand(o)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var failed *OperationFailed
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errInvalid):
		return 1
	case errors.As(err, &failed):
		fmt.Fprintln(o.ErrOut, "Error:", err)
		return 1
	default:
		fmt.Fprintln(o.ErrOut, "Error:", err)
		return 2
	}
}

// OperationFailed is what --wait returns when the operation it followed
// ended without success: exit status 1 with the failing phase's message.
type OperationFailed struct {
	// Kind and Name of the NAC object.
	Kind, Name string
	// Message says which phase failed and why, or Velero's final phase.
	Message string
}

func (e *OperationFailed) Error() string {
	return fmt.Sprintf("%s %s failed: %s", e.Kind, e.Name, e.Message)
}
