package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/dpa"
)

// newDPA returns OADP's DataProtectionApplication named name in oadp with
// spec.nonAdmin set to nonAdmin.
func newDPA(oadp, name string, nonAdmin map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"nonAdmin": nonAdmin,
			// The rest of a DPA: nacflow does not read it.
			"configuration": map[string]any{"velero": map[string]any{"defaultPlugins": []any{"aws"}}},
		},
	}}
	u.SetGroupVersionKind(dpa.GroupVersionKind)
	u.SetNamespace(oadp)
	u.SetName(name)
	return u
}

// DPASuite runs a controller of its own, on an OADP namespace of its own, so
// that the DataProtectionApplication it creates there changes no other
// suite's settings.
type DPASuite struct {
	oadp       string
	stop       func()
	stopVelero context.CancelFunc
}

var _ = Suite(&DPASuite{})

func (s *DPASuite) SetUpSuite(c *C) {
	s.oadp = createNamespace(c, "dpa-oadp")
	var ctx context.Context
	ctx, s.stopVelero = context.WithCancel(context.Background())
	go playVelero(ctx, s.oadp)
	s.stop = startController(c, controllerOptions{oadp: s.oadp, restart: true})
}

// TearDownTest removes the test's DPAs and waits until the controller can
// no longer have read them.
func (s *DPASuite) TearDownTest(c *C) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(dpa.GroupVersionKind.GroupVersion().WithKind("DataProtectionApplicationList"))
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(s.oadp)), IsNil)
	for i := range list.Items {
		c.Check(testClient.Delete(context.Background(), &list.Items[i]), IsNil)
	}
	settle()
}

func (s *DPASuite) TearDownSuite(c *C) {
	s.stop()
	s.stopVelero()
}

// settle waits until what the controller read of the DPAs is fresh: it
// reads them at most once per dpa.DefaultMaxAge.
func settle() { time.Sleep(dpa.DefaultMaxAge + 200*time.Millisecond) }

// ttlOfBackupFor waits for the Velero Backup of nab, recorded in its plan,
// and returns its ttl.
func ttlOfBackupFor(c *C, oadp string, nab *v1alpha1.NonAdminBackup) string {
	var ttl string
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		if got.Status.Plan == nil || got.Status.Plan.Phase("createBackup").State != v1alpha1.PhaseComplete {
			return false, fmt.Sprintf("plan %+v", got.Status.Plan)
		}
		backups := veleroBackupsOf(c, oadp, v1alpha1.NACUUIDOf(got.UID))
		if len(backups) != 1 {
			return false, fmt.Sprintf("%d Velero Backups; plan %+v", len(backups), got.Status.Plan)
		}
		ttl = backups[0].Spec.TTL.Duration.String()
		return true, ""
	})
	return ttl
}

// An admin moving from OADP keeps the DataProtectionApplication's
// spec.nonAdmin: enforceBackupSpec applies to the next NonAdminBackup as if
// written in the blueprint, an edit applies without a restart, and
// requireApprovalForBSL makes locations wait.
func (s *DPASuite) TestDataProtectionApplicationSettings(c *C) {
	ctx := context.Background()
	defer func() {
		c.Check(client.IgnoreNotFound(testClient.Delete(ctx, newDPA(s.oadp, "dpa-sample", nil))), IsNil)
	}()

	d := newDPA(s.oadp, "dpa-sample", map[string]any{
		"enable":                true,
		"enforceBackupSpec":     map[string]any{"ttl": "72h0m0s"},
		"requireApprovalForBSL": true,
	})
	c.Assert(testClient.Create(ctx, d), IsNil)
	settle()
	source := fmt.Sprintf("DataProtectionApplication %s/dpa-sample spec.nonAdmin", s.oadp)

	// The next NAB's Velero Backup has the enforced ttl; the plan says where
	// it came from.
	ns := createNamespace(c, "dpa-tenant")
	plain := newNAB(ns, "plain", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, plain), IsNil)
	c.Check(ttlOfBackupFor(c, s.oadp, plain), Equals, "72h0m0s")
	c.Check(getNAB(c, plain).Status.Plan.Phase("validate").Message, Equals,
		"backupSpec accepted; enforced by the admin ("+source+".enforceBackupSpec): ttl")
	c.Check(getNAB(c, plain).Status.VeleroBackup.Spec.TTL.Duration, Equals, 72*time.Hour)

	// Asking for another ttl is refused with the enforcement message.
	short := newNAB(ns, "short", velerov1.BackupSpec{TTL: metav1.Duration{Duration: time.Hour}})
	c.Assert(testClient.Create(ctx, short), IsNil)
	c.Check(refusedWithStatus(c, short, "a NAB asking for ttl 1h"), Equals,
		"spec.backupSpec.ttl field value is enforced by admin user, can not override it")
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(getNAB(c, short).UID)), HasLen, 0)

	// The admin edits the DPA: the next NAB follows, no restart.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, "24h0m0s", "spec", "nonAdmin", "enforceBackupSpec", "ttl"), IsNil)
	c.Assert(testClient.Update(ctx, d), IsNil)
	settle()
	later := newNAB(ns, "later", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, later), IsNil)
	c.Check(ttlOfBackupFor(c, s.oadp, later), Equals, "24h0m0s")

	// requireApprovalForBSL: a location waits, naming the DPA as the reason.
	tenant := tenantWithCreds(c)
	loc := nabslOn(tenant, "own", "dpa-bucket", "")
	c.Assert(testClient.Create(ctx, loc), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNABSL(c, loc)
		if got.Status.Plan == nil {
			return false, "no plan"
		}
		msg := got.Status.Plan.Phase("approval").Message
		return strings.HasSuffix(msg, "(approval required by "+source+".requireApprovalForBSL)"), msg
	})
	nacuuid := v1alpha1.DerivedNACUUID(getNABSL(c, loc))
	req, bsl, _ := bslObjects(c, s.oadp, nacuuid)
	c.Assert(req, NotNil)
	c.Check(req.Spec.ApprovalDecision, Equals, v1alpha1.ApprovalPending)
	c.Check(bsl, IsNil)

	// The admin drops the requirement in the DPA: the waiting request is
	// approved (OADP NAC's behaviour) and the location goes on.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, false, "spec", "nonAdmin", "requireApprovalForBSL"), IsNil)
	c.Assert(testClient.Update(ctx, d), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		req, bsl, _ = bslObjects(c, s.oadp, nacuuid)
		// status.phase follows the decision in the request's next write.
		return req != nil && req.Spec.ApprovalDecision == v1alpha1.ApprovalApprove && bsl != nil &&
				req.Status.Phase == v1alpha1.NonAdminBSLRequestPhaseApproved,
			fmt.Sprintf("request %+v, BSL %v", req, bsl != nil)
	})

	// Without the DPA, nothing is enforced any more.
	c.Assert(testClient.Delete(ctx, d), IsNil)
	settle()
	free := newNAB(ns, "free", velerov1.BackupSpec{TTL: metav1.Duration{Duration: time.Hour}})
	c.Assert(testClient.Create(ctx, free), IsNil)
	c.Check(ttlOfBackupFor(c, s.oadp, free), Equals, "1h0m0s")
	// Nothing enforced: a plain acceptance (its plan waits for Velero,
	// which nothing plays here).
	validate := getNAB(c, free).Status.Plan.Phase("validate")
	c.Assert(validate, NotNil)
	c.Check(validate.Message, Equals, "backupSpec accepted")
}

// A blueprint's own args.enforce wins over the DPA's, and an invalid DPA
// setting makes operations wait for the admin instead of running
// unenforced.
func (s *DPASuite) TestDataProtectionApplicationPrecedence(c *C) {
	ctx := context.Background()

	d := newDPA(s.oadp, "dpa", map[string]any{"enforceBackupSpec": map[string]any{"includedNamespaces": []any{"other"}}})
	c.Assert(testClient.Create(ctx, d), IsNil)
	settle()

	ns := createNamespace(c, "dpa-tenant")
	nab := newNAB(ns, "waits", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		if got.Status.Plan == nil {
			return false, "no plan"
		}
		ps := got.Status.Plan.Phase("validate")
		return ps.State == v1alpha1.PhaseWaiting && strings.Contains(ps.Message,
			"DataProtectionApplication "+s.oadp+"/dpa spec.nonAdmin.enforceBackupSpec is invalid (the admin must fix it; nothing is enforced until then, so the operation waits): "+
				"enforce.includedNamespaces can not be enforced: it would break tenant isolation"), ps.Message
	})
	c.Check(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(getNAB(c, nab).UID)), HasLen, 0)

	// The admin fixes the DPA: the waiting NAB goes on with it.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(d), d), IsNil)
	c.Assert(unstructured.SetNestedField(d.Object, map[string]any{"ttl": "72h0m0s"}, "spec", "nonAdmin", "enforceBackupSpec"), IsNil)
	c.Assert(testClient.Update(ctx, d), IsNil)
	c.Check(ttlOfBackupFor(c, s.oadp, nab), Equals, "72h0m0s")

	// A blueprint override with its own args.enforce wins over the DPA.
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	setEnforce(c, bp, `{"ttl": "5h0m0s"}`)
	defer applyBlueprints(c, s.oadp, bp)()
	over := newNAB(ns, "overridden", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, over), IsNil)
	c.Check(ttlOfBackupFor(c, s.oadp, over), Equals, "5h0m0s")
	c.Check(getNAB(c, over).Status.Plan.Phase("validate").Message, Equals,
		"backupSpec accepted; enforced by the admin (blueprint args.enforce): ttl")
}
