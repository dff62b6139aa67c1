package cli

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// helpText is the help of every command, kept as text apart from the code
// that runs the commands: help.txt describes its layout.
//
//go:embed help.txt
var helpText string

// help is the help of one command: cobra's Short, Long and Example.
type help struct{ short, long, example string }

// parseHelp reads text in help.txt's layout: after comment lines starting
// with "#", sections "## <command path>" each holding three paragraphs,
// Short, Long and Example. It returns the help of each command path, or
// an error naming the first section that is not so laid out.
func parseHelp(text string) (map[string]help, error) {
	var body []string
	for _, l := range strings.SplitAfter(text, "\n") {
		if len(body) > 0 || strings.HasPrefix(l, "## ") {
			body = append(body, l)
		}
	}
	var shorts []string
	for _, k := range v1alpha1.Kinds() {
		shorts = append(shorts, k.Short)
	}
	text = strings.NewReplacer("{kinds}", v1alpha1.KindNames(), "{shortnames}", strings.Join(shorts, ", ")).Replace(strings.Join(body, ""))
	helps := map[string]help{}
	for _, section := range strings.Split(strings.TrimPrefix(text, "## "), "\n## ") {
		parts := strings.Split(strings.TrimRight(section, "\n"), "\n\n")
		if len(parts) != 4 {
			return nil, fmt.Errorf("help.txt: section %q has %d paragraphs, want Short, Long and Example", parts[0], len(parts)-1)
		}
		helps[parts[0]] = help{short: parts[1], long: parts[2], example: parts[3]}
	}
	return helps, nil
}

// setHelp gives root and every command below it its help from helpText;
// cobra's own commands (help, completion) keep theirs. The error is
// parseHelp's: help.txt is embedded, so it is a build defect, which the
// tests catch.
func setHelp(root *cobra.Command) error {
	helps, err := parseHelp(helpText)
	if err != nil {
		return err
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		if p := c.Annotations[helpPathAnnotation]; p != "" {
			path = p // OADP's word for a command: its help
		}
		if h, ok := helps[path]; ok {
			c.Short, c.Long, c.Example = h.short, h.long, h.example
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return nil
}
