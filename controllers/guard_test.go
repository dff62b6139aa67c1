package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// The engine's safety rule against hostile blueprints, on a real API
// server: a blueprint that fills a name from what a
// tenant writes (here its annotations) can never make a phase use, read or
// write another operation's object or the admin's.

// adminCredentials creates the admin's Velero credentials in oadp (no NAC
// labels) and returns a function that deletes them.
func adminCredentials(c *C, oadp string) (*corev1.Secret, func()) {
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "cloud-credentials"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=ADMIN\n")}}
	c.Assert(testClient.Create(ctx, s), IsNil)
	return s, func() { c.Check(client.IgnoreNotFound(testClient.Delete(ctx, s)), IsNil) }
}

// approveRequest approves the request of the location with nacuuid once it
// exists.
func (s *ControllerSuite) approveRequest(c *C, nacuuid string) {
	var req *v1alpha1.NonAdminBackupStorageLocationRequest
	eventually(c, 10*time.Second, func() (bool, string) {
		req, _, _ = bslObjects(c, s.oadp, nacuuid)
		return req != nil, "no request yet"
	})
	decide(c, req, v1alpha1.ApprovalApprove)
}

// bslCredentialsAreOwnCopies checks that every tenant Velero BSL of the
// cluster references, as its credential, a Secret of its own namespace that
// carries its own NACUUID label: its operation's own copy.
func bslCredentialsAreOwnCopies(c *C) int {
	ctx := context.Background()
	bsls := &velerov1.BackupStorageLocationList{}
	c.Assert(testClient.List(ctx, bsls, client.HasLabels{v1alpha1.NabslOriginNACUUIDLabel}), IsNil)
	for _, b := range bsls.Items {
		id := b.Labels[v1alpha1.NabslOriginNACUUIDLabel]
		if !c.Check(b.Spec.Credential, NotNil, Commentf("%s/%s", b.Namespace, b.Name)) {
			continue
		}
		sec := &corev1.Secret{}
		c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Credential.Name}, sec), IsNil)
		c.Check(sec.Labels[v1alpha1.NabslOriginNACUUIDLabel], Equals, id,
			Commentf("Velero BSL %s/%s references Secret %s, not its own copy", b.Namespace, b.Name, sec.Name))
	}
	return len(bsls.Items)
}

// TestSafetyRuleHostileSecretName: a blueprint whose CreateVeleroBSL takes
// secretName from the tenant's annotations, the tenant naming the admin's
// cloud-credentials or another tenant's copy: refused with an error naming
// the rule, no Velero BSL made, and no Velero BSL anywhere references a
// Secret that is not its operation's own copy.
func (s *ControllerSuite) TestSafetyRuleHostileSecretName(c *C) {
	ctx := context.Background()
	admin, removeAdmin := adminCredentials(c, s.oadp)
	defer removeAdmin()

	// Another tenant's location, with its own copy of its credentials.
	victimNS := tenantWithCreds(c)
	victim := nabslOn(victimNS, "victim", "guard-victim", "")
	c.Assert(testClient.Create(ctx, victim), IsNil)
	defer func() { c.Check(testClient.Delete(ctx, victim), IsNil) }()
	s.approveAndAvailable(c, victim)
	_, victimBSL, victimCopy := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(getNABSL(c, victim)))
	c.Assert(victimCopy, NotNil)

	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackupStorageLocation"))
	c.Assert(err, IsNil)
	bp.Name = "steal-credentials"
	bp.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"safety": "steal-secret"}}
	create := bp.Spec.Actions["create"]
	c.Assert(create.Phases[3].Func, Equals, "CreateVeleroBSL")
	create.Phases[3].Args = map[string]apiextensionsv1.JSON{"secretName": {Raw: []byte(`"{{ index .Object.metadata.annotations \"steal\" }}"`)}}
	bp.Spec.Actions = map[string]v1alpha1.BlueprintAction{"create": create}
	defer applyBlueprints(c, s.oadp, bp)()

	ns := labelledNamespace(c, map[string]string{"safety": "steal-secret"})
	c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=tenant\naws_secret_access_key=tenant-secret\n")}}), IsNil)
	for i, target := range []string{admin.Name, victimCopy.Name} {
		thief := nabslOn(ns, fmt.Sprintf("thief-%d", i), fmt.Sprintf("guard-thief-%d", i), "")
		thief.Annotations = map[string]string{"steal": target}
		c.Assert(testClient.Create(ctx, thief), IsNil)
		nacuuid := v1alpha1.DerivedNACUUID(getNABSL(c, thief))
		s.approveRequest(c, nacuuid)
		var got *v1alpha1.NonAdminBackupStorageLocation
		eventually(c, 10*time.Second, func() (bool, string) {
			got = getNABSL(c, thief)
			return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%+v", got.Status.Plan)
		})
		c.Check(got.Status.Plan.Blueprint, Equals, "steal-credentials")
		// A location's NACUUID is its Velero objects' name (OADP NAC's).
		name := nacuuid
		c.Check(got.Status.Plan.Phase("createBSL").Message, Equals, fmt.Sprintf(
			`creating Velero BackupStorageLocation %[1]s/%[2]s: safety rule "references only this operation's objects": `+
				`phase createBSL (CreateVeleroBSL) may not create BackupStorageLocation %[1]s/%[2]s: `+
				`spec.credential names Secret %[1]s/%[3]s, which is not this operation's own copy: it does not carry the label %[4]s=%[5]s`,
			s.oadp, name, target, v1alpha1.NabslOriginNACUUIDLabel, nacuuid))
		_, bsl, copied := bslObjects(c, s.oadp, nacuuid)
		c.Check(bsl, IsNil, Commentf("no Velero BSL for %s", target))
		c.Check(copied, NotNil, Commentf("its own copy was made, and is the only Secret it may use"))
		c.Check(testClient.Delete(ctx, thief), IsNil)
	}
	c.Check(bslCredentialsAreOwnCopies(c) >= 1, Equals, true)

	// The admin's Secret and the victim's objects are as they were.
	stillAdmin := &corev1.Secret{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(admin), stillAdmin), IsNil)
	c.Check(stillAdmin.Labels, HasLen, 0)
	c.Check(stillAdmin.ResourceVersion, Equals, admin.ResourceVersion)
	_, bsl, copied := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(getNABSL(c, victim)))
	c.Assert(bsl, NotNil)
	c.Check(bsl.Spec.Credential.Name, Equals, victimCopy.Name)
	c.Check(bsl.Spec.Credential.Name, Equals, victimBSL.Spec.Credential.Name)
	c.Check(copied.ResourceVersion, Equals, victimCopy.ResourceVersion)
}

// TestSafetyRuleHostileNames: a NonAdminBackup blueprint whose WaitFor and
// SyncStatus take the Velero Backup's name from the tenant's annotations,
// naming another tenant's backup: refused with an error naming the rule;
// nothing of the other backup reaches this tenant's status, and the other
// tenant's objects are untouched.
func (s *ControllerSuite) TestSafetyRuleHostileNames(c *C) {
	ctx := context.Background()
	victimNS := createNamespace(c, "victim")
	victimNAB, victimBackup := s.backupOf(c, victimNS, "private")

	stolen := `"{{ index .Object.metadata.annotations \"steal\" }}"`
	bp := perTenantBackup(c, "steal-names", "safety", "steal-names", func(a *v1alpha1.BlueprintAction) {
		wait := phaseIndex(c, a, "waitForBackup")
		c.Assert(a.Phases[wait].Func, Equals, "WaitFor")
		a.Phases[wait].Args["name"] = apiextensionsv1.JSON{Raw: []byte(stolen)}
		c.Assert(a.DeferPhase.Func, Equals, "SyncStatus")
		a.DeferPhase.Args["name"] = apiextensionsv1.JSON{Raw: []byte(stolen)}
	})
	defer applyBlueprints(c, s.oadp, bp)()

	ns := labelledNamespace(c, map[string]string{"safety": "steal-names"})
	thief := newNAB(ns, "thief", velerov1.BackupSpec{})
	thief.Annotations = map[string]string{"steal": victimBackup.Name}
	c.Assert(testClient.Create(ctx, thief), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, thief)
		return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%+v", got.Status.Plan)
	})
	c.Check(got.Status.Plan.Blueprint, Equals, "steal-names")
	nacuuid := v1alpha1.NACUUIDOf(got.UID)
	rule := `safety rule "references only this operation's objects": phase %s (%s) may not %s Velero Backup %s/%s: ` +
		`it does not carry this operation's label ` + v1alpha1.NabOriginNACUUIDLabel + `=` + nacuuid
	c.Check(got.Status.Plan.Phase("waitForBackup").Message, Equals, fmt.Sprintf(rule, "waitForBackup", "WaitFor", "wait for", s.oadp, victimBackup.Name))
	c.Check(got.Status.Plan.Phase("syncStatus").State, Equals, v1alpha1.PhaseSkipped)
	c.Check(got.Status.Plan.DeferPhase.Message, Equals, fmt.Sprintf(rule, "finalStatus", "SyncStatus", "mirror", s.oadp, victimBackup.Name))

	// Its status holds its own backup, nothing of the other one.
	c.Assert(got.Status.VeleroBackup, NotNil)
	c.Check(got.Status.VeleroBackup.Name, Equals, v1alpha1.NACObjectName(ns, thief.Name, nacuuid))
	c.Check(got.Status.VeleroBackup.Spec.IncludedNamespaces, DeepEquals, []string{ns})
	// The other tenant's objects are untouched.
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(victimBackup), b), IsNil)
	c.Check(b.ResourceVersion, Equals, victimBackup.ResourceVersion)
	c.Check(getNAB(c, victimNAB).Status.VeleroBackup.Name, Equals, victimBackup.Name)
}

// deleteNamedArgs are the args of deleteNamed.
type deleteNamedArgs struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// deleteNamed stands for a phase function that writes whatever a blueprint
// names (a bug, or tomorrow's function): it deletes or patches the named
// Secret or Velero BSL in the OADP namespace, through the clients the engine
// gives it.
type deleteNamed struct{}

func (*deleteNamed) Name() string { return "DeleteNamed" }
func (*deleteNamed) NewArgs() any { return &deleteNamedArgs{} }
func (*deleteNamed) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	a := args.(*deleteNamedArgs)
	var obj client.Object = &corev1.Secret{}
	if a.Kind == "BackupStorageLocation" {
		obj = &velerov1.BackupStorageLocation{}
	}
	obj.SetNamespace(op.OADPNamespace)
	obj.SetName(a.Name)
	if err := op.Client.Delete(ctx, obj); err != nil {
		return engine.Result{}, fmt.Errorf("deleting %s %s: %w", a.Kind, a.Name, err)
	}
	return engine.Done("deleted "+a.Name, nil), nil
}

// TestSafetyRuleHostileWrite: a phase pointed, by the tenant's annotations,
// at another operation's object or the admin's (the engine and a real API
// server, with a function that writes whatever it is told): refused with an
// error naming the rule, and the object is untouched.
func (s *ControllerSuite) TestSafetyRuleHostileWrite(c *C) {
	ctx := context.Background()
	admin, removeAdmin := adminCredentials(c, s.oadp)
	defer removeAdmin()
	victimNS := tenantWithCreds(c)
	victim := nabslOn(victimNS, "victim", "guard-write-victim", "")
	c.Assert(testClient.Create(ctx, victim), IsNil)
	defer func() { c.Check(testClient.Delete(ctx, victim), IsNil) }()
	victimBSL := s.approveAndAvailable(c, victim)
	_, _, victimCopy := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(getNABSL(c, victim)))

	reg, err := engine.NewGuardedRegistry(testClient, testClient, phases.VeleroReferences{}, &deleteNamed{})
	c.Assert(err, IsNil)
	runner := &engine.Runner{Registry: reg}
	ns := createNamespace(c, "thief")
	for i, target := range []struct{ kind, name string }{
		{"Secret", admin.Name}, {"Secret", victimCopy.Name}, {"BackupStorageLocation", victimBSL.Name},
	} {
		thief := nabslOn(ns, fmt.Sprintf("thief-%d", i), "unused", "")
		thief.Annotations = map[string]string{"steal": target.name}
		thief.UID = "thief-uid"
		spec := &v1alpha1.BlueprintAction{Phases: []v1alpha1.BlueprintPhase{{Name: "cleanup", Func: "DeleteNamed",
			Args: map[string]apiextensionsv1.JSON{"kind": {Raw: []byte(`"` + target.kind + `"`)},
				"name": {Raw: []byte(`"{{ index .Object.metadata.annotations \"steal\" }}"`)}}}}}
		out, err := runner.Run(ctx, engine.Request{Object: thief, UUID: "thief-uuid", OADPNamespace: s.oadp,
			Action: engine.ResolvedAction{Name: "create", Blueprint: "hostile", BlueprintGeneration: "1", Spec: spec}})
		c.Assert(err, IsNil)
		c.Check(out.Finished, Equals, true)
		c.Check(thief.Status.Plan.State, Equals, v1alpha1.PlanFailed)
		c.Check(thief.Status.Plan.Phase("cleanup").Message, Matches, regexp.QuoteMeta(fmt.Sprintf(
			`deleting %[1]s %[2]s: safety rule "writes only this operation's objects": phase cleanup (DeleteNamed) may not delete %[1]s %[3]s/%[2]s: `+
				`it does not carry this operation's label %[4]s=thief-uuid`, target.kind, target.name, s.oadp, v1alpha1.NabslOriginNACUUIDLabel)))
	}
	for _, obj := range []client.Object{admin, victimCopy, victimBSL} {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		c.Check(apierrors.IsNotFound(err), Equals, false, Commentf("%s still exists", obj.GetName()))
		c.Check(obj.GetDeletionTimestamp(), IsNil)
	}
}
