package blueprints_test

import (
	"slices"
	"strings"
	"testing"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
)

func Test(t *testing.T) { TestingT(t) }

type SafetySuite struct{}

var _ = Suite(&SafetySuite{})

// backup returns a copy of the built-in backup action with edit applied.
func backup(c *C, edit func(*v1alpha1.BlueprintAction)) *v1alpha1.BlueprintAction {
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	a := bp.Spec.Actions["backup"]
	edit(&a)
	return &a
}

// verify returns the built-in verify phase of a (found by func: other
// phases may come before it).
func verify(c *C, a *v1alpha1.BlueprintAction) *v1alpha1.BlueprintPhase {
	for i := range a.Phases {
		if a.Phases[i].Func == "VerifyBackupContents" {
			return &a.Phases[i]
		}
	}
	c.Fatalf("the built-in backup action has no VerifyBackupContents phase")
	return nil
}

// without returns phases without the one running fn.
func without(phases []v1alpha1.BlueprintPhase, fn string) []v1alpha1.BlueprintPhase {
	var out []v1alpha1.BlueprintPhase
	for _, p := range phases {
		if p.Func != fn {
			out = append(out, p)
		}
	}
	return out
}

func (s *SafetySuite) TestBuiltInsMarkTheirChecks(c *C) {
	for _, tc := range []struct {
		kind, action string
		want         []string
	}{
		{"NonAdminBackup", "backup", []string{"ValidateBackupSpec", "VerifyBackupContents"}},
		{"NonAdminRestore", "restore", []string{"ValidateRestoreSpec", "CheckRestoreItems"}},
		{"NonAdminBackupStorageLocation", "create", []string{"ValidateBSLSpec"}},
		{"NonAdminDownloadRequest", "download", []string{"ValidateDownloadRequest"}},
		{"NonAdminSchedule", "create", []string{"ValidateScheduleSpec", "SyncScheduleRuns"}},
		{"NonAdminBackup", "finalize", nil},
		{"NonAdminBackup", "explode", nil},
		{"Nothing", "backup", nil},
	} {
		c.Check(blueprints.SafetyFuncs(tc.kind, tc.action), DeepEquals, tc.want, Commentf("%s %s", tc.kind, tc.action))
	}
}

// Every built-in action passes its own check: the built-ins are what an
// override is held to.
func (s *SafetySuite) TestBuiltInsKeepTheirOwn(c *C) {
	for _, kind := range []string{"NonAdminBackup", "NonAdminRestore", "NonAdminBackupStorageLocation", "NonAdminDownloadRequest", "NonAdminSchedule"} {
		bp, err := blueprints.BuiltIn(blueprints.BuiltInFor(kind))
		c.Assert(err, IsNil)
		for name, a := range bp.Spec.Actions {
			c.Check(blueprints.SafetyErrors(kind, name, &a), HasLen, 0, Commentf("%s %s", kind, name))
		}
	}
}

func (s *SafetySuite) TestDroppedByFunctionNotName(c *C) {
	for _, tc := range []struct {
		about string
		edit  func(*v1alpha1.BlueprintAction)
		want  []string // substrings of the errors, in order; nil: none
	}{
		{"unchanged", func(*v1alpha1.BlueprintAction) {}, nil},
		{"verify dropped (the admin guide's old example)", func(a *v1alpha1.BlueprintAction) {
			a.Phases = without(a.Phases, "VerifyBackupContents")
		}, []string{"phases: no phase runs the built-in backup action's safety phase VerifyBackupContents"}},
		{"verify renamed: kept", func(a *v1alpha1.BlueprintAction) {
			p := verify(c, a)
			p.Name = "checkItems"
			p.Safety = false // an admin's mark is not what counts
		}, nil},
		{"a phase named verify running something else", func(a *v1alpha1.BlueprintAction) {
			p := verify(c, a)
			p.Func = "SyncStatus"
			p.Safety = true
		}, []string{"safety phase VerifyBackupContents"}},
		{"validate and verify dropped", func(a *v1alpha1.BlueprintAction) {
			a.Phases = without(without(a.Phases, "VerifyBackupContents"), "ValidateBackupSpec")
		}, []string{"safety phase ValidateBackupSpec", "safety phase VerifyBackupContents"}},
		{"verify only as the deferPhase", func(a *v1alpha1.BlueprintAction) {
			p := verify(c, a)
			a.DeferPhase = p.DeepCopy()
			a.Phases = without(a.Phases, "VerifyBackupContents")
		}, []string{"safety phase VerifyBackupContents"}},
		{"verify skipped on a timeout", func(a *v1alpha1.BlueprintAction) {
			p := verify(c, a)
			p.OnTimeout = v1alpha1.OnTimeoutContinue
		}, []string{"(verify): safety phase VerifyBackupContents may not set onTimeout: continue"}},
		{"a second verify with continue next to a proper one", func(a *v1alpha1.BlueprintAction) {
			p := verify(c, a)
			extra := p.DeepCopy()
			extra.Name, extra.OnTimeout = "verifyAgain", v1alpha1.OnTimeoutContinue
			a.Phases = append(a.Phases, *extra)
		}, nil},
		{"opted out by name", func(a *v1alpha1.BlueprintAction) {
			a.Phases = without(a.Phases, "VerifyBackupContents")
			a.SafetyOptOut = []string{"VerifyBackupContents"}
		}, nil},
		{"opted out of one, dropped the other", func(a *v1alpha1.BlueprintAction) {
			a.Phases = without(without(a.Phases, "VerifyBackupContents"), "ValidateBackupSpec")
			a.SafetyOptOut = []string{"VerifyBackupContents"}
		}, []string{"safety phase ValidateBackupSpec"}},
		{"opt-out misspelt", func(a *v1alpha1.BlueprintAction) {
			a.Phases = without(a.Phases, "VerifyBackupContents")
			a.SafetyOptOut = []string{"VerifyBackup"}
		}, []string{`safetyOptOut[0]: "VerifyBackup" is not a safety phase func of the built-in backup action (it has ValidateBackupSpec, VerifyBackupContents)`,
			"safety phase VerifyBackupContents"}},
		{"opt-out of a func that is not a safety phase", func(a *v1alpha1.BlueprintAction) {
			a.SafetyOptOut = []string{"CreateVeleroBackup"}
		}, []string{`safetyOptOut[0]: "CreateVeleroBackup" is not a safety phase func`}},
	} {
		errs := blueprints.SafetyErrors("NonAdminBackup", "backup", backup(c, tc.edit))
		c.Check(errs, HasLen, len(tc.want), Commentf("%s: %q", tc.about, errs))
		for i, w := range tc.want {
			if i < len(errs) {
				c.Check(strings.Contains(errs[i], w), Equals, true, Commentf("%s: %q lacks %q", tc.about, errs[i], w))
			}
		}
	}
}

// An action the built-in does not have, or has without safety phases, has
// nothing to keep; an opt-out there is a mistake.
func (s *SafetySuite) TestActionsWithoutSafetyPhases(c *C) {
	a := &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "wait", Func: "WaitFor"}}}
	c.Check(blueprints.SafetyErrors("NonAdminBackup", "forceDelete", a), HasLen, 0)
	c.Check(blueprints.SafetyErrors("NonAdminBackup", "explode", a), HasLen, 0)
	a.SafetyOptOut = []string{"WaitFor"}
	c.Check(blueprints.SafetyErrors("NonAdminBackup", "finalize", a), DeepEquals,
		[]string{`safetyOptOut[0]: "WaitFor" is not a safety phase func of the built-in finalize action (it has none)`})
}

func (s *SafetySuite) TestOptOutsDescribed(c *C) {
	actions := map[string]v1alpha1.BlueprintAction{
		"restore":  {SafetyOptOut: []string{"ValidateRestoreSpec"}},
		"finalize": {SafetyOptOut: []string{"Nope"}},
	}
	c.Check(blueprints.SafetyOptOuts("NonAdminRestore", actions), Equals, "restore: ValidateRestoreSpec")
	c.Check(blueprints.SafetyOptOuts("NonAdminBackup", map[string]v1alpha1.BlueprintAction{
		"backup": {SafetyOptOut: []string{"VerifyBackupContents", "ValidateBackupSpec"}}, "delete": {}}),
		Equals, "backup: VerifyBackupContents, ValidateBackupSpec")
	c.Check(blueprints.SafetyOptOuts("NonAdminBackup", nil), Equals, "")
}

// Each kind of the registry has its built-in blueprint, serving that kind,
// with exactly the actions the registry says its controller runs.
func (s *SafetySuite) TestEveryKindHasItsBuiltIn(c *C) {
	for _, k := range v1alpha1.Kinds() {
		bp, err := blueprints.BuiltIn(k.Blueprint)
		c.Assert(err, IsNil, Commentf("%s", k.Kind))
		c.Check(bp.Spec.Kind, Equals, k.Kind)
		var actions []string
		for name := range bp.Spec.Actions {
			actions = append(actions, name)
		}
		slices.Sort(actions)
		c.Check(actions, DeepEquals, blueprints.KnownActions(k.Kind), Commentf("%s", k.Kind))
	}
	c.Check(blueprints.KnownActions("nab"), IsNil)
	c.Check(blueprints.BuiltInFor("Backup"), Equals, "")
}
