package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// CLIReference renders the whole kubectl-nac command tree as one Markdown
// page with cobra's doc generator (docs/cli.md is this output): every
// command with its synopsis, examples and flags, in tree order. Defaults
// that depend on the machine (the home directory, $WATCH_NAMESPACE,
// $OADP_CLI_REQUEST_TIMEOUT) are shown as their portable form.
func CLIReference() (string, error) {
	o := NewOptions(genericiooptions.NewTestIOStreamsDiscard())
	o.OADPNamespace = DefaultOADPNamespace
	root := NewRootCommand(o)
	root.DisableAutoGenTag = true
	var b bytes.Buffer
	b.WriteString("# kubectl nac command reference\n\n")
	b.WriteString("Generated from the command tree by `make docs` (cobra's doc generator): do not edit.\n")
	b.WriteString("Install with `make build` (bin/kubectl-nac) or `go install ./cmd/kubectl-nac`; with the binary on PATH,\n")
	b.WriteString("`kubectl nac …` runs it. OADP's CLI words work too: [From OADP's CLI](#from-oadps-cli). Commands:\n\n")
	var all []*cobra.Command
	var walk func(c *cobra.Command, depth int)
	walk = func(c *cobra.Command, depth int) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		all = append(all, c)
		fmt.Fprintf(&b, "%s- [%s](#%s)\n", strings.Repeat("  ", depth), c.CommandPath(), anchor(c))
		for _, sub := range c.Commands() {
			walk(sub, depth+1)
		}
	}
	walk(root, 0)
	home, _ := os.UserHomeDir()
	for _, c := range all {
		portable := func(f *pflag.Flag) {
			if home != "" && strings.Contains(f.DefValue, home) {
				f.DefValue = strings.ReplaceAll(f.DefValue, home, "$HOME")
			}
			if f.Name == "timeout" {
				f.DefValue = defaultDownloadTimeout.String()
			}
		}
		c.LocalFlags().VisitAll(portable)
		c.InheritedFlags().VisitAll(portable)
		b.WriteString("\n")
		var page bytes.Buffer
		// One page: cobra's links to a command's file become links to its
		// heading (GitHub's anchor of "## kubectl nac backup").
		link := func(file string) string {
			return "#" + strings.ReplaceAll(strings.TrimSuffix(file, ".md"), "_", "-")
		}
		if err := doc.GenMarkdownCustom(c, &page, link); err != nil {
			return "", err
		}
		text := page.String()
		if c != root {
			// The global flags are listed once, under kubectl nac.
			if i := strings.Index(text, "### Options inherited from parent commands"); i >= 0 {
				end := strings.Index(text[i+1:], "\n### ")
				text = text[:i] + "Global flags (`-n`, `--context`, `--kubeconfig`, `--oadp-namespace`, …): see [kubectl nac](#kubectl-nac).\n\n" + text[i+1+end+1:]
			}
		}
		b.WriteString(text)
	}
	b.WriteString("\n## From OADP's CLI\n\n")
	b.WriteString("OADP's `kubectl oadp` words run the same commands (hidden from the list above, each with the help of\n")
	b.WriteString("the command it runs): `nonadmin` (alias `na`) before a group, OADP's verb-first order\n")
	b.WriteString("(`kubectl nac nonadmin get backup`), and the admin's `nabsl-request`. Replace `kubectl oadp` with\n")
	b.WriteString("`kubectl nac`, or use the command on the right:\n\n")
	b.WriteString("| OADP's CLI | kubectl nac |\n|---|---|\n")
	for _, pair := range OADPAliases(root) {
		fmt.Fprintf(&b, "| `%s` | [`%s`](#%s) |\n", pair[0], pair[1], strings.ReplaceAll(pair[1], " ", "-"))
	}
	return b.String(), nil
}

// anchor is GitHub's anchor of c's heading: its command path joined by "-".
func anchor(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}
