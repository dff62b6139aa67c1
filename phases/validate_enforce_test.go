package phases_test

import (
	"context"
	"encoding/json"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

type EnforceSuite struct{}

var _ = Suite(&EnforceSuite{})

// validate runs ValidateBackupSpec on a NAB with user spec under the enforce
// args given as JSON, as a blueprint would give them.
func validate(c *C, user velerov1.BackupSpec, enforce string) (*v1alpha1.NonAdminBackup, error) {
	fn := phases.AsFunc(&phases.ValidateBackupSpec{})
	args := fn.NewArgs()
	c.Assert(engine.DecodeArgs(map[string]any{"enforce": json.RawMessage(enforce)}, args), IsNil)
	nab := &v1alpha1.NonAdminBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nab", Namespace: "team"},
		Spec:       v1alpha1.NonAdminBackupSpec{BackupSpec: &user},
	}
	_, err := fn.Run(context.Background(), &engine.Operation{Object: nab}, args)
	return nab, err
}

func (s *EnforceSuite) TestFillIn(c *C) {
	nab, err := validate(c, velerov1.BackupSpec{IncludedResources: []string{"configmaps"}},
		`{"ttl": "72h", "snapshotVolumes": false, "labelSelector": {"matchLabels": {"backup": "yes"}}, "excludedResources": [], "includedResources": ["configmaps"]}`)
	c.Assert(err, IsNil)
	got := nab.Status.VeleroBackup.Spec
	c.Assert(got, NotNil)
	c.Check(got.TTL.Duration, Equals, 72*time.Hour)
	c.Assert(got.SnapshotVolumes, NotNil, Commentf("falsy enforced values fill too"))
	c.Check(*got.SnapshotVolumes, Equals, false)
	c.Check(got.LabelSelector, DeepEquals, &metav1.LabelSelector{MatchLabels: map[string]string{"backup": "yes"}}, Commentf("a second-level field is enforced whole"))
	c.Check(got.IncludedResources, DeepEquals, []string{"configmaps"}, Commentf("the same value as enforced is accepted"))
	c.Check(got.ExcludedResources, DeepEquals, []string{})
	c.Check(nab.Spec.BackupSpec.TTL.Duration, Equals, time.Duration(0), Commentf("the NAB's spec is never written"))
	c.Check(meta.IsStatusConditionTrue(nab.Status.Conditions, v1alpha1.ConditionAccepted), Equals, true)
}

func (s *EnforceSuite) TestRefusals(c *C) {
	yes := true
	for _, tc := range []struct {
		user    velerov1.BackupSpec
		enforce string
		err     string
	}{
		{velerov1.BackupSpec{SnapshotVolumes: &yes}, `{"snapshotVolumes": false}`,
			"spec.backupSpec.snapshotVolumes field value is enforced by admin user, can not override it"},
		{velerov1.BackupSpec{TTL: metav1.Duration{Duration: time.Hour}}, `{"ttl": "72h"}`,
			"spec.backupSpec.ttl field value is enforced by admin user, can not override it"},
		{velerov1.BackupSpec{ExcludedResources: []string{"secrets"}}, `{"excludedResources": []}`,
			"spec.backupSpec.excludedResources field value is enforced by admin user, can not override it"},
		{velerov1.BackupSpec{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}, `{"labelSelector": {"matchLabels": {"backup": "yes"}}}`,
			"spec.backupSpec.labelSelector field value is enforced by admin user, can not override it"},
	} {
		nab, err := validate(c, tc.user, tc.enforce)
		c.Check(err, ErrorMatches, tc.err)
		c.Check(engine.IsTerminal(err), Equals, true)
		cond := meta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionAccepted)
		c.Assert(cond, NotNil)
		c.Check(cond.Message, Equals, tc.err)
		c.Check(cond.Reason, Equals, v1alpha1.ReasonInvalidBackupSpec)
		c.Check(nab.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	}
}

func (s *EnforceSuite) TestBadEnforceArgs(c *C) {
	fn := phases.AsFunc(&phases.ValidateBackupSpec{})
	for enforce, want := range map[string]string{
		`{"includedNamespaces": ["x"], "storageLocation": "y"}`: `args: enforce.includedNamespaces, enforce.storageLocation can not be enforced: it would break tenant isolation`,
		`{"snapshotVolume": false}`:                             `args: json: unknown field "snapshotVolume"`,
		`{"ttl": 5}`:                                            `args: .*`,
	} {
		err := engine.DecodeArgs(map[string]any{"enforce": json.RawMessage(enforce)}, fn.NewArgs())
		c.Check(err, ErrorMatches, want, Commentf(enforce))
	}
}
