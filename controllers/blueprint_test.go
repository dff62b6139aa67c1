package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/phases"
)

// loadBlueprints reads the Blueprints of a YAML file (several documents).
func loadBlueprints(c *C, path string) []*v1alpha1.Blueprint {
	data, err := os.ReadFile(path)
	c.Assert(err, IsNil)
	var out []*v1alpha1.Blueprint
	for _, doc := range strings.Split(string(data), "\n---\n") {
		bp := &v1alpha1.Blueprint{}
		c.Assert(yaml.UnmarshalStrict([]byte(doc), bp), IsNil, Commentf(path))
		out = append(out, bp)
	}
	return out
}

// applyBlueprints creates bps in oadp and waits until each is validated; it
// returns a function that deletes them.
func applyBlueprints(c *C, oadp string, bps ...*v1alpha1.Blueprint) func() {
	ctx := context.Background()
	for _, bp := range bps {
		bp.Namespace = oadp
		c.Assert(testClient.Create(ctx, bp), IsNil)
	}
	for _, bp := range bps {
		eventually(c, 10*time.Second, func() (bool, string) {
			got := &v1alpha1.Blueprint{}
			c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
			cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionValid)
			return cond != nil && cond.ObservedGeneration == got.Generation, fmt.Sprintf("%s: %+v", bp.Name, got.Status)
		})
	}
	return func() {
		for _, bp := range bps {
			c.Check(client.IgnoreNotFound(testClient.Delete(ctx, bp)), IsNil)
		}
	}
}

// labelledNamespace creates a namespace with labels.
func labelledNamespace(c *C, labels map[string]string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Labels: labels}}
	c.Assert(testClient.Create(context.Background(), ns), IsNil)
	return ns.Name
}

// backupOf creates a NAB and returns it with its Velero Backup once created.
func (s *ControllerSuite) backupOf(c *C, ns, name string) (*v1alpha1.NonAdminBackup, *velerov1.Backup) {
	nab := newNAB(ns, name, velerov1.BackupSpec{})
	c.Assert(testClient.Create(context.Background(), nab), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", got.Status.Plan)
	})
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKey{Namespace: s.oadp, Name: got.Status.VeleroBackup.Name}, b), IsNil)
	return got, b
}

func examplesDir() string { return filepath.Join("..", "examples", "blueprints") }

func (s *ControllerSuite) TestExampleBlueprintsValidate(c *C) {
	reg, err := phases.NewRegistry(phases.Clients{}, phases.Options{})
	c.Assert(err, IsNil)
	files, err := filepath.Glob(filepath.Join(examplesDir(), "*.yaml"))
	c.Assert(err, IsNil)
	c.Assert(len(files) >= 4, Equals, true)
	for _, f := range files {
		for _, bp := range loadBlueprints(c, f) {
			c.Check(blueprints.Validate(bp, reg), HasLen, 0, Commentf("%s: %s", f, bp.Name))
		}
	}
}

func (s *ControllerSuite) TestOverrideAppliesToNewOperationsOnly(c *C) {
	ctx := context.Background()
	ns := labelledNamespace(c, map[string]string{"cost-centre": "cc-7"})
	inFlight, inFlightBackup := s.backupOf(c, ns, "in-flight")
	c.Check(inFlight.Status.Plan.BlueprintGeneration, Equals, v1alpha1.BuiltInGeneration)

	remove := applyBlueprints(c, s.oadp, loadBlueprints(c, filepath.Join(examplesDir(), "nonadminbackup-tenant-labels.yaml"))...)
	defer remove()

	// A new operation uses the override.
	var fresh *v1alpha1.NonAdminBackup
	var freshBackup *velerov1.Backup
	eventually(c, 10*time.Second, func() (bool, string) {
		fresh, freshBackup = s.backupOf(c, ns, fmt.Sprintf("fresh-%d", time.Now().UnixNano()))
		return fresh.Status.Plan.BlueprintGeneration == "1", fresh.Status.Plan.BlueprintGeneration
	})
	c.Check(freshBackup.Labels["tenant"], Equals, ns)
	c.Check(freshBackup.Labels["cost-centre"], Equals, "cc-7")
	c.Check(fresh.Status.Plan.Phase("tellTenant"), NotNil)
	eventually(c, 5*time.Second, func() (bool, string) {
		evs := eventReasons(c, ns, fresh.Name)
		return containsInOrder(evs, []string{"Normal CostCentre"}), joined(evs)
	})

	// The operation in flight keeps its snapshot and completes with it.
	completeBackup(c, s.oadp, inFlightBackup.Name, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, inFlight)
		return got.Status.Plan.State == v1alpha1.PlanComplete, string(got.Status.Plan.State)
	})
	got := getNAB(c, inFlight)
	c.Check(got.Status.Plan.BlueprintGeneration, Equals, v1alpha1.BuiltInGeneration)
	c.Check(got.Status.Plan.Phase("tellTenant"), IsNil)
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(inFlightBackup), b), IsNil)
	c.Check(b.Labels["tenant"], Equals, "")
}

func (s *ControllerSuite) TestPerTenantBlueprints(c *C) {
	remove := applyBlueprints(c, s.oadp, loadBlueprints(c, filepath.Join(examplesDir(), "nonadminbackup-gold-silver.yaml"))...)
	defer remove()
	gold := labelledNamespace(c, map[string]string{"tier": "gold"})
	silver := labelledNamespace(c, map[string]string{"tier": "silver"})
	plain := labelledNamespace(c, nil)
	for _, tc := range []struct {
		ns, blueprint, tier string
		ttl                 time.Duration
	}{
		{gold, "nonadminbackup-gold", "gold", 2160 * time.Hour},
		{silver, "nonadminbackup-silver", "silver", 168 * time.Hour},
		{plain, "nonadminbackup", "", 0},
	} {
		nab, b := s.backupOf(c, tc.ns, "tiered")
		c.Check(nab.Status.Plan.Blueprint, Equals, tc.blueprint, Commentf(tc.ns))
		c.Check(b.Spec.TTL.Duration, Equals, tc.ttl, Commentf(tc.ns))
		c.Check(b.Labels["tier"], Equals, tc.tier, Commentf(tc.ns))
	}
}

func (s *ControllerSuite) TestLargeNamespaceLimitAndDeadline(c *C) {
	remove := applyBlueprints(c, s.oadp, loadBlueprints(c, filepath.Join(examplesDir(), "nonadminbackup-large-namespaces.yaml"))...)
	defer remove()
	ns := labelledNamespace(c, map[string]string{"size": "large"})
	one, _ := s.backupOf(c, ns, "one")
	c.Check(one.Status.Plan.Blueprint, Equals, "nonadminbackup-large")
	c.Check(one.Status.Plan.Spec.Deadline.Duration, Equals, 30*time.Hour)
	c.Check(one.Status.Plan.Spec.Phases[4].Timeout.Duration, Equals, 24*time.Hour)
	s.backupOf(c, ns, "two")
	third := newNAB(ns, "three", velerov1.BackupSpec{})
	c.Assert(testClient.Create(context.Background(), third), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNAB(c, third)
		return g.Status.Plan != nil && g.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%+v", g.Status.Plan)
	})
	c.Check(getNAB(c, third).Status.Plan.Phase("limit").Message, Equals,
		fmt.Sprintf("namespace %s already has 2 active NonAdminBackups (the admin's limit is 2): try again when one has finished", ns))
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(getNAB(c, third).UID)), HasLen, 0)
	// Refused like every refusal: Accepted=False with the reason, BackingOff.
	g := getNAB(c, third)
	c.Check(g.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	cond := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonActiveOperationsLimit)
}

// brokenBlueprint returns the built-in with five mistakes.
func brokenBlueprint(c *C, name string) *v1alpha1.Blueprint {
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	bp.Name = name
	a := bp.Spec.Actions["backup"]
	a.Phases[phaseIndex(c, &a, "validate")].Args = map[string]apiextensionsv1.JSON{"enforce": {Raw: []byte(`{"includedNamespaces": ["kube-system"]}`)}}
	a.Phases[phaseIndex(c, &a, "createBackup")].Args = map[string]apiextensionsv1.JSON{"lables": {Raw: []byte(`{"a": "b"}`)}}
	a.Phases[phaseIndex(c, &a, "waitForBackup")].Args["name"] = apiextensionsv1.JSON{Raw: []byte(`"{{ .Phases.syncStatus.Output.name }}"`)}
	a.Phases[phaseIndex(c, &a, "syncStatus")].Func = "Nope"
	bp.Spec.Actions["backup"] = a
	bp.Spec.Actions["explode"] = a
	return bp
}

func (s *ControllerSuite) TestInvalidBlueprintReportedAndNeverUsed(c *C) {
	ctx := context.Background()
	bp := brokenBlueprint(c, "nonadminbackup")
	remove := applyBlueprints(c, s.oadp, bp)
	defer remove()
	got := &v1alpha1.Blueprint{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
	c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionValid), Equals, false)
	all := strings.Join(got.Status.Errors, "\n")
	a := bp.Spec.Actions["backup"]
	at := func(phase string) int { return phaseIndex(c, &a, phase) }
	for _, want := range []string{
		fmt.Sprintf(`spec.actions.backup.phases[%d] (validate): ValidateBackupSpec args: enforce.includedNamespaces can not be enforced`, at("validate")),
		fmt.Sprintf(`spec.actions.backup.phases[%d] (createBackup): CreateVeleroBackup takes no arg "lables"`, at("createBackup")),
		fmt.Sprintf(`spec.actions.backup.phases[%d] (waitForBackup): args.name refers to phase "syncStatus", which does not come before it`, at("waitForBackup")),
		fmt.Sprintf(`spec.actions.backup.phases[%d] (syncStatus): unknown func "Nope"`, at("syncStatus")),
		`spec.actions.explode: NonAdminBackup has no action "explode"`,
	} {
		c.Check(strings.Contains(all, want), Equals, true, Commentf("missing %q in:\n%s", want, all))
	}
	c.Check(got.Status.LastValid, IsNil)
	eventually(c, 5*time.Second, func() (bool, string) {
		evs := eventReasons(c, s.oadp, bp.Name)
		return containsInOrder(evs, []string{"Warning BlueprintInvalid"}), joined(evs)
	})

	// Never used: NABs run the built-in and say why.
	ns := createNamespace(c, "tenant")
	nab, _ := s.backupOf(c, ns, "safe")
	c.Check(nab.Status.Plan.BlueprintGeneration, Equals, v1alpha1.BuiltInGeneration)
	c.Check(nab.Status.Plan.BlueprintMessage, Equals, "Blueprint nonadminbackup generation 1 is not valid and never was: not used")

	// Fixed, then broken again: the last valid generation stays in use.
	fixed, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
	got.Spec = fixed.Spec
	c.Assert(testClient.Update(ctx, got), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
		return got.Status.LastValid != nil && got.Status.LastValid.Generation == 2, fmt.Sprintf("%+v", got.Status.LastValid)
	})
	got.Spec = brokenBlueprint(c, "nonadminbackup").Spec
	c.Assert(testClient.Update(ctx, got), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionValid)
		return cond.ObservedGeneration == 3 && cond.Status == metav1.ConditionFalse, fmt.Sprintf("%+v", cond)
	})
	eventually(c, 10*time.Second, func() (bool, string) {
		nab, _ = s.backupOf(c, ns, fmt.Sprintf("later-%d", time.Now().UnixNano()))
		return nab.Status.Plan.BlueprintGeneration == "2", nab.Status.Plan.BlueprintGeneration
	})
	c.Check(nab.Status.Plan.BlueprintMessage, Equals, "Blueprint nonadminbackup generation 3 is not valid; using its last valid generation 2")
}

// perTenantBackup returns the built-in backup action as a per-tenant
// blueprint for namespaces labelled key=value.
func perTenantBackup(c *C, name, key, value string, edit func(*v1alpha1.BlueprintAction)) *v1alpha1.Blueprint {
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	bp.Name = name
	bp.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	a := bp.Spec.Actions["backup"]
	edit(&a)
	bp.Spec.Actions = map[string]v1alpha1.BlueprintAction{"backup": a}
	return bp
}

func (s *ControllerSuite) TestOnTimeoutAsDocumented(c *C) {
	short := func(onTimeout v1alpha1.OnTimeout) func(*v1alpha1.BlueprintAction) {
		return func(a *v1alpha1.BlueprintAction) {
			wait := phaseIndex(c, a, "waitForBackup")
			a.Phases[wait].Timeout = &metav1.Duration{Duration: time.Second}
			a.Phases[wait].OnTimeout = onTimeout
		}
	}
	remove := applyBlueprints(c, s.oadp,
		perTenantBackup(c, "short-continue", "timeout", "continue", short(v1alpha1.OnTimeoutContinue)),
		perTenantBackup(c, "short-fail", "timeout", "fail", short(v1alpha1.OnTimeoutFail)))
	defer remove()
	for _, tc := range []struct {
		mode  string
		state v1alpha1.PlanState
		phase v1alpha1.PhaseState
		msg   string
	}{
		{"continue", v1alpha1.PlanComplete, v1alpha1.PhaseComplete, `timed out after 1s: Velero Backup .* is not started; continued \(onTimeout: continue\)`},
		{"fail", v1alpha1.PlanFailed, v1alpha1.PhaseFailed, `timed out after 1s: Velero Backup .* is not started`},
	} {
		ns := labelledNamespace(c, map[string]string{"timeout": tc.mode})
		nab := newNAB(ns, "slow", velerov1.BackupSpec{})
		c.Assert(testClient.Create(context.Background(), nab), IsNil)
		var got *v1alpha1.NonAdminBackup
		eventually(c, 15*time.Second, func() (bool, string) {
			got = getNAB(c, nab)
			return got.Status.Plan != nil && got.Status.Plan.State == tc.state, fmt.Sprintf("%+v", got.Status.Plan)
		})
		c.Check(got.Status.Plan.Blueprint, Equals, "short-"+tc.mode)
		c.Check(got.Status.Plan.Phase("waitForBackup").State, Equals, tc.phase)
		c.Check(got.Status.Plan.Phase("waitForBackup").Message, Matches, tc.msg)
	}
}

func (s *ControllerSuite) TestSafetyRuleHolds(c *C) {
	// A literal reserved key makes the blueprint invalid...
	literal := perTenantBackup(c, "steal-literal", "safety", "literal", func(a *v1alpha1.BlueprintAction) {
		a.Phases[phaseIndex(c, a, "createBackup")].Args = map[string]apiextensionsv1.JSON{"labels": {Raw: []byte(`{"openshift.io/oadp-nab-origin-nacuuid": "someone-else"}`)}}
	})
	// ...a templated one fails the phase when it runs, creating nothing.
	templated := perTenantBackup(c, "steal-templated", "safety", "templated", func(a *v1alpha1.BlueprintAction) {
		a.Phases[phaseIndex(c, a, "createBackup")].Args = map[string]apiextensionsv1.JSON{"labels": {Raw: []byte(`{"openshift.io/oadp-nab-origin-nacuuid": "{{ .Name }}"}`)}}
	})
	remove := applyBlueprints(c, s.oadp, literal, templated)
	defer remove()
	got := &v1alpha1.Blueprint{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(literal), got), IsNil)
	c.Check(strings.Join(got.Status.Errors, "\n"), Matches, `(?s).*labels.openshift.io/oadp-nab-origin-nacuuid: key is reserved for nacflow and Velero.*`)

	ns := labelledNamespace(c, map[string]string{"safety": "templated"})
	nab := newNAB(ns, "victim", velerov1.BackupSpec{})
	c.Assert(testClient.Create(context.Background(), nab), IsNil)
	var g *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		g = getNAB(c, nab)
		return g.Status.Plan != nil && g.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%+v", g.Status.Plan)
	})
	c.Check(g.Status.Plan.Blueprint, Equals, "steal-templated")
	c.Check(g.Status.Plan.Phase("createBackup").Message, Matches, `CreateVeleroBackup args: labels.openshift.io/oadp-nab-origin-nacuuid: key is reserved for nacflow and Velero.*`)
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(g.UID)), HasLen, 0)
	c.Check(veleroBackupsOf(c, s.oadp, "victim"), HasLen, 0)
}

// withoutVerify returns the built-in nonadminbackup with its verify phase
// left out of the backup action, as the admin guide's enforcement example
// used to be written.
func withoutVerify(c *C, name string) *v1alpha1.Blueprint {
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	bp.Name = name
	a := bp.Spec.Actions["backup"]
	var kept []v1alpha1.BlueprintPhase
	for _, p := range a.Phases {
		if p.Func != "VerifyBackupContents" {
			kept = append(kept, p)
		}
	}
	a.Phases = kept
	bp.Spec.Actions = map[string]v1alpha1.BlueprintAction{"backup": a}
	return bp
}

// TestOverrideDroppingSafetyPhaseRefused: an override of the backup action
// without VerifyBackupContents is refused (Valid=False naming the func, a
// Warning event) and NABs keep running the built-in, verify included; the
// same Blueprint naming the func in safetyOptOut is valid, says it leaves
// the check out, and is used.
func (s *ControllerSuite) TestOverrideDroppingSafetyPhaseRefused(c *C) {
	ctx := context.Background()
	bp := withoutVerify(c, "nonadminbackup")
	remove := applyBlueprints(c, s.oadp, bp)
	defer remove()
	got := &v1alpha1.Blueprint{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionValid)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	const dropped = "spec.actions.backup.phases: no phase runs the built-in backup action's safety phase VerifyBackupContents"
	c.Check(got.Status.Errors, HasLen, 1)
	c.Check(strings.Join(got.Status.Errors, "\n"), Matches, regexp.QuoteMeta(dropped)+`.*safetyOptOut.*`)
	c.Check(got.Status.LastValid, IsNil)
	eventually(c, 5*time.Second, func() (bool, string) {
		evs := eventStory(c, s.oadp, bp.Name)
		return len(evs) > 0 && strings.HasPrefix(evs[len(evs)-1], "Warning BlueprintInvalid: 1 error(s): "+dropped), joined(evs)
	})

	// The built-in stays in force, verify and all.
	ns := labelledNamespace(c, nil)
	nab, _ := s.backupOf(c, ns, "checked")
	c.Check(nab.Status.Plan.BlueprintGeneration, Equals, v1alpha1.BuiltInGeneration)
	c.Check(nab.Status.Plan.BlueprintMessage, Equals, "Blueprint nonadminbackup generation 1 is not valid and never was: not used")
	c.Check(nab.Status.Plan.Phase("verify"), NotNil)

	// Opting out by name: valid, and it says so.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
	a := got.Spec.Actions["backup"]
	a.SafetyOptOut = []string{"VerifyBackupContents"}
	got.Spec.Actions["backup"] = a
	c.Assert(testClient.Update(ctx, got), IsNil)
	const optedOut = "it leaves out safety phases on purpose (safetyOptOut): backup: VerifyBackupContents"
	eventually(c, 10*time.Second, func() (bool, string) {
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionValid)
		return cond.ObservedGeneration == 2 && cond.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", cond)
	})
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionValid).Message, Equals, "blueprint is valid; "+optedOut)
	eventually(c, 5*time.Second, func() (bool, string) {
		evs := eventStory(c, s.oadp, bp.Name)
		return containsInOrder(evs, []string{"Normal BlueprintValid: Blueprint generation 2 is valid; " + optedOut}), joined(evs)
	})
	eventually(c, 10*time.Second, func() (bool, string) {
		nab, _ = s.backupOf(c, ns, fmt.Sprintf("unchecked-%d", time.Now().UnixNano()))
		return nab.Status.Plan.BlueprintGeneration == "2", nab.Status.Plan.BlueprintGeneration
	})
	c.Check(nab.Status.Plan.Phase("verify"), IsNil)
	c.Check(nab.Status.Plan.Spec.SafetyOptOut, DeepEquals, []string{"VerifyBackupContents"})
}

// TestSafetyDroppedByAnOlderValidationNotUsed: a per-tenant Blueprint whose
// status says Valid (as an older nacflow, which did not check safety
// phases, wrote it) but whose backup action drops verify is passed over:
// the tenant's NABs run the built-in and say why.
func (s *ControllerSuite) TestSafetyDroppedByAnOlderValidationNotUsed(c *C) {
	ctx := context.Background()
	bp := withoutVerify(c, "older-unverified")
	bp.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"validated-by": "older"}}
	remove := applyBlueprints(c, s.oadp, bp)
	defer remove()
	got := &v1alpha1.Blueprint{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), got), IsNil)
	c.Assert(meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionValid), Equals, true)
	// What an older controller wrote (a status write changes no generation:
	// the Blueprint controller does not look again).
	meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonValidationSucceeded, Message: "blueprint is valid", ObservedGeneration: got.Generation})
	got.Status.Errors = nil
	c.Assert(testClient.Status().Update(ctx, got), IsNil)

	ns := labelledNamespace(c, map[string]string{"validated-by": "older"})
	nab, _ := s.backupOf(c, ns, "older")
	c.Check(nab.Status.Plan.BlueprintGeneration, Equals, v1alpha1.BuiltInGeneration)
	c.Check(nab.Status.Plan.BlueprintMessage, Matches, `Blueprint older-unverified generation 1 drops a safety phase of action backup: not used \(phases: no phase runs the built-in backup action's safety phase VerifyBackupContents.*\)`)
	c.Check(nab.Status.Plan.Phase("verify"), NotNil)
}

// phaseIndex returns the index of the phase called name in a (the test
// fails without one).
func phaseIndex(c *C, a *v1alpha1.BlueprintAction, name string) int {
	for i := range a.Phases {
		if a.Phases[i].Name == name {
			return i
		}
	}
	c.Fatalf("no phase %s in %+v", name, a.Phases)
	return -1
}
