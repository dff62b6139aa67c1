package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
)

// setEnforce sets the validate phase's args.enforce of the backup action.
func setEnforce(c *C, bp *v1alpha1.Blueprint, enforce string) {
	a := bp.Spec.Actions["backup"]
	c.Assert(a.Phases[0].Func, Equals, "ValidateBackupSpec")
	a.Phases[0].Args = map[string]apiextensionsv1.JSON{"enforce": {Raw: json.RawMessage(enforce)}}
	bp.Spec.Actions["backup"] = a
}

// veleroSpecOf waits for nab's Velero Backup and returns its spec.
func (s *ControllerSuite) veleroSpecOf(c *C, nab *v1alpha1.NonAdminBackup) (velerov1.BackupSpec, *v1alpha1.NonAdminBackup) {
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Phase == v1alpha1.NonAdminPhaseCreated, fmt.Sprintf("%+v", got.Status.Conditions)
	})
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKey{Namespace: s.oadp, Name: got.Status.VeleroBackup.Name}, b), IsNil)
	return b.Spec, got
}

func (s *ControllerSuite) TestEnforcementAndLiveBlueprintEdit(c *C) {
	ctx := context.Background()
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	bp.Namespace = s.oadp
	setEnforce(c, bp, `{"ttl": "72h", "snapshotVolumes": false, "labelSelector": {"matchLabels": {"backup": "yes"}}}`)
	c.Assert(testClient.Create(ctx, bp), IsNil)
	defer func() {
		c.Check(testClient.Delete(ctx, bp), IsNil)
	}()
	ns := createNamespace(c, "tenant")

	// Fill-in, falsy fill-in and a second-level field, as the admin set them.
	var spec velerov1.BackupSpec
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		// The override reaches the cache a moment after it is created.
		nab := newNAB(ns, fmt.Sprintf("filled-%d", time.Now().UnixNano()), velerov1.BackupSpec{})
		c.Assert(testClient.Create(ctx, nab), IsNil)
		spec, got = s.veleroSpecOf(c, nab)
		return got.Status.Plan.BlueprintGeneration == "1", got.Status.Plan.BlueprintGeneration
	})
	c.Check(got.Status.Plan.Blueprint, Equals, "nonadminbackup")
	c.Check(spec.TTL.Duration, Equals, 72*time.Hour)
	c.Assert(spec.SnapshotVolumes, NotNil)
	c.Check(*spec.SnapshotVolumes, Equals, false)
	c.Check(spec.LabelSelector.MatchLabels, DeepEquals, map[string]string{"backup": "yes"})
	c.Check(spec.IncludedNamespaces, DeepEquals, []string{ns})
	// The tenant sees the enforced values in its NAB.
	c.Check(got.Status.VeleroBackup.Spec.TTL.Duration, Equals, 72*time.Hour)

	// A user value that differs is refused, verbatim.
	refused := newNAB(ns, "override", velerov1.BackupSpec{SnapshotVolumes: ptr(true)})
	c.Assert(testClient.Create(ctx, refused), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, refused)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
		return cond != nil && cond.Status == "False", fmt.Sprintf("%+v", got.Status.Conditions)
	})
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted).Message, Equals,
		"spec.backupSpec.snapshotVolumes field value is enforced by admin user, can not override it")
	eventually(c, 5*time.Second, func() (bool, string) {
		evs := eventReasons(c, ns, "override")
		return containsInOrder(evs, []string{"Warning PhaseFailed"}), joined(evs)
	})

	// The admin edits the blueprint: the next NAB follows, no restart.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(bp), bp), IsNil)
	setEnforce(c, bp, `{"ttl": "24h"}`)
	c.Assert(testClient.Update(ctx, bp), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		nab := newNAB(ns, fmt.Sprintf("edited-%d", time.Now().UnixNano()), velerov1.BackupSpec{})
		c.Assert(testClient.Create(ctx, nab), IsNil)
		spec, got = s.veleroSpecOf(c, nab)
		return got.Status.Plan.BlueprintGeneration == "2", got.Status.Plan.BlueprintGeneration
	})
	c.Check(spec.TTL.Duration, Equals, 24*time.Hour)
	c.Check(spec.SnapshotVolumes, IsNil)
}

// TestInvalidOverrideIsNotUsed: an override that tries to enforce a tenancy
// field is reported and the built-in runs instead.
func (s *ControllerSuite) TestInvalidOverrideIsNotUsed(c *C) {
	ctx := context.Background()
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	bp.Namespace = s.oadp
	setEnforce(c, bp, `{"includedNamespaces": ["kube-system"]}`)
	c.Assert(testClient.Create(ctx, bp), IsNil)
	defer func() { c.Check(testClient.Delete(ctx, bp), IsNil) }()
	ns := createNamespace(c, "tenant")

	eventually(c, 10*time.Second, func() (bool, string) {
		nab := newNAB(ns, fmt.Sprintf("n-%d", time.Now().UnixNano()), velerov1.BackupSpec{})
		c.Assert(testClient.Create(ctx, nab), IsNil)
		var evs []string
		eventually(c, 5*time.Second, func() (bool, string) {
			evs = eventStory(c, ns, nab.Name)
			return strings.Contains(joined(evs), "Started action"), joined(evs)
		})
		got := getNAB(c, nab)
		c.Check(got.Status.Plan.BlueprintGeneration, Equals, v1alpha1.BuiltInGeneration)
		return containsInOrder(eventReasons(c, ns, nab.Name), []string{"Warning BlueprintInvalid"}), joined(evs)
	})
}
