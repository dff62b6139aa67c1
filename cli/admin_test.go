package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
)

func Test(t *testing.T) { TestingT(t) }

type CLISuite struct{}

var _ = Suite(&CLISuite{})

// nac runs kubectl nac with args and stdin, without a cluster, returning
// exit status and output.
func nac(stdin string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	o := NewOptions(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	code := ExitCode(context.Background(), o, args)
	return code, out.String(), errOut.String()
}

func (s *CLISuite) TestValidateExamples(c *C) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "blueprints", "*.yaml"))
	c.Assert(err, IsNil)
	c.Assert(len(files) >= 4, Equals, true)
	for _, f := range files {
		code, out, errOut := nac("", "blueprint", "validate", "-f", f)
		c.Check(code, Equals, 0, Commentf("%s: %s %s", f, out, errOut))
		c.Check(out, Matches, `(?s).*is valid\n`)
	}
}

func (s *CLISuite) TestValidateReportsEveryError(c *C) {
	broken := `apiVersion: oadp.openshift.io/v1alpha1
kind: Blueprint
metadata: {name: broken}
spec:
  kind: NonAdminBackup
  actions:
    backup:
      phases:
      - {name: a, func: Nope}
      - {name: b, func: WaitFor, args: {kind: Backup, name: "{{ .Phases.c.Output.name }}", colour: red}}
      - {name: c, func: LimitActiveOperations, args: {max: 0}}
    explode:
      phases:
      - {name: a, func: Notify, args: {reason: Boom, message: x}}
`
	code, out, _ := nac(broken, "blueprint", "validate", "-f", "-")
	c.Check(code, Equals, 1)
	for _, want := range []string{
		"blueprint broken has 7 error(s):",
		`spec.actions.backup.phases[0] (a): unknown func "Nope"`,
		`spec.actions.backup.phases[1] (b): WaitFor takes no arg "colour" (it takes: acceptFailure, kind, name)`,
		`spec.actions.backup.phases[1] (b): args.name refers to phase "c", which does not come before it`,
		`spec.actions.backup.phases[2] (c): LimitActiveOperations args: max: must be at least 1, got 0`,
		"spec.actions.backup.phases: no phase runs the built-in backup action's safety phase ValidateBackupSpec",
		"spec.actions.backup.phases: no phase runs the built-in backup action's safety phase VerifyBackupContents",
		`spec.actions.explode: NonAdminBackup has no action "explode"`,
	} {
		c.Check(strings.Contains(out, want), Equals, true, Commentf("missing %q in:\n%s", want, out))
	}
}

func (s *CLISuite) TestDumpIsAValidStartingPoint(c *C) {
	for _, kind := range []string{"NonAdminBackup", "nar", "nabsl"} {
		code, out, errOut := nac("", "blueprint", "dump", kind)
		c.Assert(code, Equals, 0, Commentf(errOut))
		code, vout, _ := nac(out, "blueprint", "validate", "-f", "-")
		c.Check(code, Equals, 0, Commentf("%s: %s", kind, vout))
	}
	code, _, errOut := nac("", "blueprint", "dump", "Pod")
	c.Check(code, Equals, 2)
	c.Check(errOut, Matches, `Error: blueprint dump: unknown kind "Pod".*\n`)
}

func (s *CLISuite) TestPlanPreview(c *C) {
	nab, err := os.ReadFile(filepath.Join("..", "examples", "nonadminbackup.yaml"))
	c.Assert(err, IsNil)
	code, out, errOut := nac(string(nab), "plan", "-f", "-", "--builtin", "--oadp-namespace", "velero-ns")
	c.Assert(code, Equals, 0, Commentf(errOut))
	preview := map[string]any{}
	c.Assert(yaml.Unmarshal([]byte(out), &preview), IsNil)
	c.Check(preview["object"], Equals, "NonAdminBackup demo/sample")
	c.Check(preview["action"], Equals, "backup")
	phases := preview["phases"].([]any)
	c.Assert(phases, HasLen, 8)
	c.Check(phases[2].(map[string]any)["func"], Equals, "WaitForTurn")
	wait := phases[4].(map[string]any)
	c.Check(wait["func"], Equals, "WaitFor")
	c.Check(wait["timeout"], Equals, "4h0m0s")
	c.Check(wait["args"], DeepEquals, map[string]any{"kind": "Backup", "name": "<phases.createBackup.output.name>"})

	// With a blueprint file: the tenant-labels example renders its labels.
	code, out, errOut = nac(string(nab), "plan", "-f", "-", "--blueprint", filepath.Join("..", "examples", "blueprints", "nonadminbackup-tenant-labels.yaml"))
	c.Assert(code, Equals, 0, Commentf(errOut))
	c.Check(out, Matches, `(?s).*cost-centre: unassigned\n\s+tenant: demo\n.*tellTenant.*`)

	// A deleteBackup NAB previews the delete action.
	del, err := os.ReadFile(filepath.Join("..", "examples", "nonadminbackup-delete.yaml"))
	c.Assert(err, IsNil)
	code, out, _ = nac(string(del), "plan", "-f", "-", "--builtin")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, `(?s)action: delete\n.*CreateDeleteBackupRequest.*`)
}

func (s *CLISuite) TestFunctionReferenceIsCurrent(c *C) {
	code, out, _ := nac("", "funcs")
	c.Assert(code, Equals, 0)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "functions.md"))
	c.Assert(err, IsNil)
	c.Check(out == string(doc), Equals, true, Commentf("docs/functions.md is stale: run make docs"))
	reg, err := offlineRegistry()
	c.Assert(err, IsNil)
	for _, name := range reg.Names() {
		c.Check(strings.Contains(out, "\n## "+name+"\n"), Equals, true, Commentf(name))
	}
}

// TestValidateMatchesTheController: the offline check is the controller's.
func (s *CLISuite) TestValidateMatchesTheController(c *C) {
	bp := &v1alpha1.Blueprint{}
	bp.Spec.Kind = "NonAdminBackup"
	reg, err := offlineRegistry()
	c.Assert(err, IsNil)
	c.Check(blueprints.Validate(bp, reg), HasLen, 0)
}
