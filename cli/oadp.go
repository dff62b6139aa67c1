package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// OADP's CLI (migtools/oadp-cli) words for the same commands, so that an
// OADP user's scripts and habits work: `kubectl oadp nonadmin backup get`
// (alias `na`), its verb-first form `kubectl oadp nonadmin get backup`
// (oadp-cli's cmd/non-admin/verbs), and the admin's `kubectl oadp
// nabsl-request approve`. They are hidden (the reference lists each
// command once, under its own name) and built by the same builders as the
// commands they stand for, each with that command's help
// (helpPathAnnotation); docs/cli.md ends with the table OADPAliases gives.

// helpPathAnnotation names the command whose help.txt section an alias
// command shows.
const helpPathAnnotation = "nacflow.io/help-path"

// nounGroups builds fresh trees of the tenant's command groups, each with
// its help path set, for the alias trees (a cobra command has one parent).
func nounGroups(o *Options) []*cobra.Command {
	groups := tenantGroups(o, false)
	for _, g := range groups {
		markHelpPaths(g, "kubectl nac")
	}
	return groups
}

// markHelpPaths sets the help path of cmd, which is not in the tree yet,
// and of every command below it: prefix and its path in its own tree.
func markHelpPaths(cmd *cobra.Command, prefix string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[helpPathAnnotation] = prefix + " " + cmd.CommandPath()
	for _, sub := range cmd.Commands() {
		markHelpPaths(sub, prefix)
	}
}

// newNonAdminCommand is `kubectl nac nonadmin` (alias na): the tenant's
// groups under OADP's word, and OADP's verb-first commands.
func newNonAdminCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{Use: "nonadmin", Aliases: []string{"na"}, Hidden: true,
		Short:   "OADP's `kubectl oadp nonadmin` words for kubectl nac's commands",
		Long:    "kubectl nac nonadmin backup get is kubectl nac backup get, and so on; kubectl nac nonadmin get backup (verb first) is the same command.",
		Example: "  kubectl nac nonadmin backup get -n demo\n  kubectl nac na get backup -n demo\n  kubectl nac nonadmin create schedule nightly -n demo --schedule \"0 2 * * *\""}
	cmd.AddCommand(nounGroups(o)...)
	verbs := map[string]*cobra.Command{}
	for _, g := range nounGroups(o) {
		for _, sub := range g.Commands() {
			verb := verbs[sub.Name()]
			_, rest, _ := strings.Cut(sub.Use, " ")
			if verb == nil {
				verb = &cobra.Command{Use: sub.Name(), Short: fmt.Sprintf("OADP's verb-first form: kubectl nac nonadmin %s NOUN is kubectl nac NOUN %s", sub.Name(), sub.Name()),
					Example: strings.TrimRight(fmt.Sprintf("  kubectl nac nonadmin %s %s %s", sub.Name(), g.Name(), exampleArgs(rest)), " ") + " -n demo"}
				verbs[sub.Name()] = verb
			}
			g.RemoveCommand(sub)
			sub.Use = strings.TrimSpace(g.Name() + " " + rest)
			sub.Aliases = g.Aliases
			verb.AddCommand(sub)
		}
	}
	for _, verb := range verbs {
		cmd.AddCommand(verb)
	}
	return cmd
}

// exampleArgs turns a command's argument syntax ("NAME --from-backup
// NONADMINBACKUP", "[NAME...] | --all") into sample words: its required
// names only.
func exampleArgs(use string) string {
	var out []string
	for _, w := range strings.Fields(use) {
		if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "|") || strings.HasPrefix(w, "-") {
			break
		}
		out = append(out, strings.TrimSuffix(w, "..."))
	}
	return strings.Join(out, " ")
}

// newNABSLRequestCommand is `kubectl nac nabsl-request`: OADP's admin
// command for `kubectl nac bsl request`.
func newNABSLRequestCommand(o *Options) *cobra.Command {
	cmd := newBSLRequestCommand(o)
	markHelpPaths(cmd, "kubectl nac bsl")
	cmd.Use, cmd.Aliases, cmd.Hidden = "nabsl-request", nil, true
	return cmd
}

// OADPAliases returns OADP's CLI commands and the kubectl nac command each
// runs, as "kubectl oadp …" → "kubectl nac …" pairs sorted by OADP's: the
// migration table of docs/cli.md, read from the alias trees themselves.
func OADPAliases(root *cobra.Command) [][2]string {
	var out [][2]string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if target := c.Annotations[helpPathAnnotation]; target != "" && c.Runnable() {
			out = append(out, [2]string{"kubectl oadp " + strings.TrimPrefix(c.CommandPath(), "kubectl nac "), target})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, c := range root.Commands() {
		if c.Name() == "nonadmin" || c.Name() == "nabsl-request" {
			walk(c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
