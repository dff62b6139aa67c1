package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"
)

type FlagsSuite struct{}

var _ = Suite(&FlagsSuite{})

// Every flag nac registers (and --kubeconfig, which controller-runtime
// registers) has a row in docs/configuration.md, and the doc names no flag
// that does not exist.
func (s *FlagsSuite) TestEveryFlagIsDocumented(c *C) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	c.Assert(err, IsNil)
	fs := flag.NewFlagSet("nac", flag.ContinueOnError)
	registerFlags(fs, &options{})
	names := map[string]bool{"kubeconfig": true}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	for name := range names {
		c.Check(strings.Contains(string(doc), "| `--"+name+"`"), Equals, true, Commentf("--%s is not in docs/configuration.md", name))
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `--"); ok {
			name, _, _ := strings.Cut(rest, "`")
			c.Check(names[name], Equals, true, Commentf("docs/configuration.md documents --%s, which nac does not have", name))
		}
	}
}

// Only the non-admin flags given on the command line yield nothing to a
// DataProtectionApplication; their defaults do.
func (s *FlagsSuite) TestGivenFlagsWinOverTheDPA(c *C) {
	parse := func(args ...string) options {
		fs := flag.NewFlagSet("nac", flag.ContinueOnError)
		var o options
		registerFlags(fs, &o)
		c.Assert(fs.Parse(args), IsNil)
		o.given = givenFlags(fs)
		return o
	}
	none := parse().nonAdminFlags()
	c.Check(none.RequireApprovalForBSL, IsNil)
	c.Check(none.BackupSyncPeriod, IsNil)
	c.Check(none.GarbageCollectionPeriod, IsNil)

	given := parse("--require-approval-for-bsl=false", "--backup-sync-period=0", "--wait-timeout=1m").nonAdminFlags()
	c.Assert(given.RequireApprovalForBSL, NotNil)
	c.Check(*given.RequireApprovalForBSL, Equals, false)
	c.Assert(given.BackupSyncPeriod, NotNil)
	c.Check(*given.BackupSyncPeriod, Equals, time.Duration(0))
	c.Check(given.GarbageCollectionPeriod, IsNil)
}

func Test(t *testing.T) { TestingT(t) }
