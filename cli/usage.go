package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// LocationUsage is what a namespace's backups take on one storage location.
type LocationUsage struct {
	// Location is a NonAdminBackupStorageLocation's name, or "default".
	Location string `json:"location"`
	// Backups counts the NonAdminBackups that hold a backup there.
	Backups int `json:"backups"`
	// Bytes is what they take (status.usage.totalBytes).
	Bytes int64 `json:"bytes"`
	// Unmeasured counts those without status.usage yet (still running, or
	// finished before nacflow measured usage).
	Unmeasured int `json:"unmeasured,omitempty"`
}

// NamespaceUsage sums nabs (a namespace's NonAdminBackups) by location
// (v1alpha1.UsageByLocation), sorted by location: the same figures as the
// gauges nacflow_tenant_backups and nacflow_tenant_backup_bytes.
func NamespaceUsage(nabs []v1alpha1.NonAdminBackup) []LocationUsage {
	by := v1alpha1.UsageByLocation(nabs)
	out := make([]LocationUsage, 0, len(by))
	for l, u := range by {
		out = append(out, LocationUsage{Location: l, Backups: int(u.Backups), Bytes: u.TotalBytes, Unmeasured: int(u.NotMeasured)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Location < out[j].Location })
	return out
}

func newUsageCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:  "usage",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			list := &v1alpha1.NonAdminBackupList{}
			if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("listing the NonAdminBackups of %s: %w", ns, err)
			}
			usage := NamespaceUsage(list.Items)
			switch output {
			case "json", "yaml":
				b, err := json.MarshalIndent(usage, "", "  ")
				if err == nil && output == "yaml" {
					b, err = yaml.JSONToYAML(b)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "%s\n", b)
				return nil
			case "":
			default:
				return fmt.Errorf("-o %s: the output is a table, json or yaml", output)
			}
			w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "LOCATION\tBACKUPS\tBYTES\tNOT MEASURED")
			var total LocationUsage
			for _, u := range usage {
				fmt.Fprintf(w, "%s\t%d\t%s\t%d\n", u.Location, u.Backups, quantity(u.Bytes), u.Unmeasured)
				total.Backups += u.Backups
				total.Bytes += u.Bytes
				total.Unmeasured += u.Unmeasured
			}
			fmt.Fprintf(w, "total\t%d\t%s\t%d\n", total.Backups, quantity(total.Bytes), total.Unmeasured)
			return w.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml (default: a table).")
	return cmd
}

// quantity writes n bytes as a binary quantity, exact ("1536Mi", "12345").
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
