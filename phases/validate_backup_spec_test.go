package phases_test

import (
	"context"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

func Test(t *testing.T) { TestingT(t) }

type ValidateSuite struct{}

var _ = Suite(&ValidateSuite{})

func yes() *bool { t := true; return &t }
func no() *bool  { f := false; return &f }

func (s *ValidateSuite) TestTenantRules(c *C) {
	for _, tc := range []struct {
		about string
		spec  velerov1.BackupSpec
		err   string // "" when accepted
	}{
		{"empty spec", velerov1.BackupSpec{}, ""},
		{"own namespace", velerov1.BackupSpec{IncludedNamespaces: []string{"team"}}, ""},
		{"cluster resources false", velerov1.BackupSpec{IncludeClusterResources: no()}, ""},
		{"other namespace", velerov1.BackupSpec{IncludedNamespaces: []string{"team", "other"}},
			`spec.backupSpec.includedNamespaces can not contain namespaces other than: team \(found "other"\)`},
		{"wildcard namespace", velerov1.BackupSpec{IncludedNamespaces: []string{"*"}},
			`spec.backupSpec.includedNamespaces can not contain namespaces other than: team \(found "\*"\)`},
		{"excluded namespaces", velerov1.BackupSpec{ExcludedNamespaces: []string{"a", "b"}},
			`spec.backupSpec.excludedNamespaces is restricted: found a, b`},
		{"cluster resources", velerov1.BackupSpec{IncludeClusterResources: yes()},
			`spec.backupSpec.includeClusterResources can not be true.*`},
		{"cluster-scoped", velerov1.BackupSpec{IncludedClusterScopedResources: []string{"nodes"}},
			`spec.backupSpec.includedClusterScopedResources is restricted: found nodes`},
		{"snapshot locations", velerov1.BackupSpec{VolumeSnapshotLocations: []string{"vsl"}},
			`spec.backupSpec.volumeSnapshotLocations is restricted: found vsl`},
	} {
		spec := tc.spec
		nab := &v1alpha1.NonAdminBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "nab", Namespace: "team", Generation: 2},
			Spec:       v1alpha1.NonAdminBackupSpec{BackupSpec: &spec},
		}
		fn := phases.AsFunc(&phases.ValidateBackupSpec{})
		_, err := fn.Run(context.Background(), &engine.Operation{Object: nab}, fn.NewArgs())
		cond := meta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionAccepted)
		c.Assert(cond, NotNil, Commentf(tc.about))
		c.Check(cond.ObservedGeneration, Equals, int64(2))
		if tc.err == "" {
			c.Check(err, IsNil, Commentf(tc.about))
			c.Check(cond.Status, Equals, metav1.ConditionTrue)
			c.Check(cond.Reason, Equals, v1alpha1.ReasonBackupAccepted)
			continue
		}
		c.Check(err, ErrorMatches, tc.err, Commentf(tc.about))
		c.Check(engine.IsTerminal(err), Equals, true, Commentf(tc.about))
		c.Check(cond.Status, Equals, metav1.ConditionFalse)
		c.Check(cond.Reason, Equals, v1alpha1.ReasonInvalidBackupSpec)
		c.Check(cond.Message, Equals, err.Error())
		c.Check(nab.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	}
}

func (s *ValidateSuite) TestWrongKindIsTerminal(c *C) {
	fn := phases.AsFunc(&phases.ValidateBackupSpec{})
	_, err := fn.Run(context.Background(), &engine.Operation{Object: &fakeObject{}}, fn.NewArgs())
	c.Check(err, ErrorMatches, `ValidateBackupSpec serves NonAdminBackup, not \*phases_test.fakeObject`)
	c.Check(engine.IsTerminal(err), Equals, true)
}

// fakeObject is a NAC object of another kind.
type fakeObject struct{ v1alpha1.Blueprint }

func (*fakeObject) GetPlan() *v1alpha1.PlanStatus     { return nil }
func (*fakeObject) SetPlan(*v1alpha1.PlanStatus)      {}
func (*fakeObject) GetConditions() []metav1.Condition { return nil }
func (*fakeObject) SetConditions([]metav1.Condition)  {}
func (*fakeObject) SetObservedGeneration(int64)       {}
func (*fakeObject) OriginKeys() v1alpha1.Origin       { return v1alpha1.Origin{} }
func (*fakeObject) GetPhase() v1alpha1.NonAdminPhase  { return "" }
func (*fakeObject) SetPhase(v1alpha1.NonAdminPhase)   {}
