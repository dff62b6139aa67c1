package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/internal/runtime/version"
)

// versions is what `kubectl nac version` reports: the plugin's build and,
// unless --client, the Kubernetes API server's release. nac's own version
// is not included: a tenant has no right to read the controller's
// Deployment or logs in the OADP namespace, where it is recorded.
type versions struct {
	// Client is kubectl-nac's build.
	Client version.Info `json:"client"`
	// KubernetesServer is the API server's gitVersion (e.g. v1.33.13), ""
	// with --client.
	KubernetesServer string `json:"kubernetesServer,omitempty"`
}

func newVersionCommand(o *Options) *cobra.Command {
	var clientOnly bool
	var output string
	cmd := &cobra.Command{
		Use:  "version",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versions{Client: version.Get()}
			if !clientOnly {
				dc, err := o.ConfigFlags.ToDiscoveryClient()
				if err != nil {
					return fmt.Errorf("reading the server's version: %w", err)
				}
				info, err := dc.ServerVersion()
				if err != nil {
					return fmt.Errorf("reading the server's version (--client prints the plugin's alone): %w", err)
				}
				v.KubernetesServer = info.GitVersion
			}
			switch output {
			case "":
				fmt.Fprintf(o.Out, "Client: kubectl-nac %s\n", v.Client)
				if v.KubernetesServer != "" {
					fmt.Fprintf(o.Out, "Kubernetes server: %s\n", v.KubernetesServer)
				}
				return nil
			case "json":
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "%s\n", b)
				return nil
			case "yaml":
				b, err := yaml.Marshal(v)
				if err != nil {
					return err
				}
				_, err = o.Out.Write(b)
				return err
			default:
				return fmt.Errorf("--output: %q is neither json nor yaml", output)
			}
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print the plugin's version only; do not contact the server.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the versions as json or yaml.")
	return cmd
}
