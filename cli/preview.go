package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// newRestorePreviewCommand is `kubectl nac restore preview`: a
// NonAdminRestore with spec.preview is created, followed until its preview
// ends, printed, and deleted. Nothing is restored.
func newRestorePreviewCommand(o *Options, k *tenantKind[*v1alpha1.NonAdminRestore]) *cobra.Command {
	f := newRestoreCreateFlags()
	var output string
	var keep bool
	timeout := 10 * time.Minute
	cmd := &cobra.Command{Use: "preview --from-backup NONADMINBACKUP", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			nar, err := f.build(ns, "")
			if err != nil {
				return err
			}
			nar.GenerateName = previewPrefix(f.fromBackup)
			nar.Spec.Preview = true
			switch output {
			case "", "yaml", "json":
			default:
				return fmt.Errorf("unsupported output format %q: use yaml or json", output)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			if err := c.Create(cmd.Context(), nar); err != nil {
				return err
			}
			if !keep {
				defer func() {
					// A fresh context: the preview's own may have ended.
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if err := client.IgnoreNotFound(c.Delete(ctx, nar)); err != nil {
						fmt.Fprintf(o.ErrOut, "Could not delete NonAdminRestore %s: %v\n", nar.Name, err)
					}
				}()
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			// The progress goes to standard error: standard output holds
			// the preview alone.
			quiet := *o
			quiet.Out, quiet.Terminal = o.ErrOut, false
			err = quiet.follow(ctx, c, nar, k.registryKind().NewList(), "NonAdminRestore", func() Progress {
				pr := planProgress(nar.Status.Plan, "preview")
				if pv := nar.Status.Preview; pv != nil {
					pr.Summary = pv.Message
				}
				return pr
			})
			if err != nil {
				return err
			}
			if nar.Status.Preview == nil {
				return &OperationFailed{Kind: "NonAdminRestore", Name: nar.Name, Message: "the preview ended without status.preview"}
			}
			return printPreview(o.Out, nar.Status.Preview, output)
		}}
	addRestoreFlags(o, cmd, f)
	fl := cmd.Flags()
	fl.StringVarP(&output, "output", "o", "", "Print the preview as yaml or json instead of a table.")
	fl.BoolVar(&keep, "keep", false, "Keep the NonAdminRestore that holds the preview (it restores nothing).")
	fl.DurationVar(&timeout, "timeout", timeout, "How long to wait for the preview.")
	return cmd
}

// previewPrefix is the generateName of a preview of backup: at most 50
// characters, a DNS label's.
func previewPrefix(backup string) string {
	const suffix = "-preview-"
	if n := 50 - len(suffix); len(backup) > n {
		backup = strings.TrimRight(backup[:n], "-.")
	}
	return backup + suffix
}

// printPreview writes pv as a table (counts, then one line per listed item)
// or as yaml or json.
func printPreview(w io.Writer, pv *v1alpha1.RestorePreview, output string) error {
	switch output {
	case "yaml":
		b, err := yaml.Marshal(pv)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "json":
		b, err := json.MarshalIndent(pv, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	fmt.Fprintf(w, "Preview of Velero Backup %s: %s.\n", pv.BackupName, pv.Message)
	fmt.Fprintf(w, "create %d, skip %d, update %d, excluded %d", pv.Create, pv.Skip, pv.Update, pv.Excluded)
	if pv.Unknown > 0 {
		fmt.Fprintf(w, ", unknown %d", pv.Unknown)
	}
	fmt.Fprintln(w)
	if len(pv.Items) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tRESOURCE\tNAME\tDETAILS")
	for _, it := range pv.Items {
		details := it.Reason
		if len(it.Fields) > 0 {
			if details != "" {
				details += "; "
			}
			details += "fields: " + strings.Join(it.Fields, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Outcome, it.Resource, it.Name, details)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if int(pv.Total) > len(pv.Items) {
		fmt.Fprintf(w, "(%d of %d items listed)\n", len(pv.Items), pv.Total)
	}
	return nil
}
