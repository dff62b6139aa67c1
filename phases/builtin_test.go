package phases_test

import (
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

type BuiltInSuite struct{}

var _ = Suite(&BuiltInSuite{})

// TestBuiltInsCompile: every action of every built-in blueprint compiles
// against the real registry, and each phase's literal args decode strictly
// into its function's arg struct.
func (s *BuiltInSuite) TestBuiltInsCompile(c *C) {
	reg, err := phases.NewRegistry(phases.Clients{}, phases.Options{})
	c.Assert(err, IsNil)
	for _, name := range []string{blueprints.BuiltInFor("NonAdminBackup"), blueprints.BuiltInFor("NonAdminRestore"), blueprints.BuiltInFor("NonAdminBackupStorageLocation"), blueprints.BuiltInFor("NonAdminDownloadRequest")} {
		bp, err := blueprints.BuiltIn(name)
		c.Assert(err, IsNil)
		c.Check(bp.Name, Equals, name)
		c.Assert(bp.Spec.Actions, Not(HasLen), 0)
		for action := range bp.Spec.Actions {
			spec, err := blueprints.Action(bp, action)
			c.Assert(err, IsNil)
			_, err = engine.Compile(engine.ResolvedAction{Name: action, Blueprint: name, Spec: spec}, reg, time.Now())
			c.Check(err, IsNil, Commentf("%s/%s", name, action))
		}
	}
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	c.Check(bp.Spec.Kind, Equals, "NonAdminBackup")
	backup := bp.Spec.Actions["backup"]
	var funcs []string
	for _, p := range backup.Phases {
		funcs = append(funcs, p.Func)
	}
	c.Check(funcs, DeepEquals, []string{"ValidateBackupSpec", "CheckQuota", "WaitForTurn", "CreateVeleroBackup", "WaitFor", "SyncStatus", "VerifyBackupContents", "TestRestore"})
	c.Check(backup.Phases[1].Args, HasLen, 0, Commentf("no quota unless an admin sets one"))
	test := backup.Phases[7]
	c.Check(string(test.Args["every"].Raw), Equals, "0", Commentf("restore tests are the admin's opt-in: off in the built-in"))
	c.Check(test.OnTimeout, Equals, v1alpha1.OnTimeoutContinue, Commentf("a restore test never fails the backup"))
	c.Check(backup.Phases[2].Timeout.Duration, Equals, 168*time.Hour, Commentf("a burst's last backup waits for all the earlier ones"))
	c.Check(backup.Phases[4].Timeout.Duration, Equals, 4*time.Hour, Commentf("at least Velero's itemOperationTimeout"))
	c.Check(backup.DeferPhase, NotNil)

	_, err = blueprints.BuiltIn("nope")
	c.Check(err, ErrorMatches, `no built-in blueprint "nope"`)
	_, err = blueprints.Action(bp, "restore")
	c.Check(err, ErrorMatches, `blueprint "nonadminbackup" has no action "restore"`)
}

// TestEveryFuncIsDocumented: the reference (nac funcs, docs/functions.md)
// covers every registered function and every argument.
func (s *BuiltInSuite) TestEveryFuncIsDocumented(c *C) {
	reg, err := phases.NewRegistry(phases.Clients{}, phases.Options{})
	c.Assert(err, IsNil)
	for _, name := range reg.Names() {
		fn, _ := reg.Get(name)
		d, ok := fn.(engine.Documented)
		c.Assert(ok, Equals, true, Commentf(name))
		c.Check(d.Doc().Summary, Not(Equals), "", Commentf(name))
		for _, a := range engine.Args(fn) {
			c.Check(a.Doc, Not(Equals), "", Commentf("%s.%s", name, a.Name))
		}
	}
}
