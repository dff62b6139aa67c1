package resourcemodifiers_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type CopySuite struct{}

var _ = Suite(&CopySuite{})

// TestSameAsVelero: every file of the copy is the one of the Velero module
// go.mod requires, byte for byte: modifiers are applied as that Velero
// applies them.
func (s *CopySuite) TestSameAsVelero(c *C) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/vmware-tanzu/velero").Output()
	c.Assert(err, IsNil, Commentf("locating the Velero module"))
	dir := filepath.Join(strings.TrimSpace(string(out)), "internal", "resourcemodifiers")
	for _, f := range []string{"json_merge_patch.go", "json_patch.go", "resource_modifiers.go", "resource_modifiers_validator.go", "strategic_merge_patch.go"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		c.Assert(err, IsNil)
		got, err := os.ReadFile(f)
		c.Assert(err, IsNil)
		c.Check(string(got) == string(want), Equals, true, Commentf("%s differs from Velero's %s: copy it again (doc.go)", f, filepath.Join(dir, f)))
	}
}
