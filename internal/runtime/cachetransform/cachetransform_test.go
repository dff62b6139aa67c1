package cachetransform_test

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/cachetransform"
)

type CacheTransformSuite struct{}

var _ = Suite(&CacheTransformSuite{})

func planned(name, generation, action string, phases ...string) *v1alpha1.NonAdminBackup {
	spec := &v1alpha1.BlueprintAction{}
	for _, p := range phases {
		spec.Phases = append(spec.Phases, v1alpha1.BlueprintPhase{Name: p, Func: "WaitFor"})
	}
	return &v1alpha1.NonAdminBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Status: v1alpha1.NonAdminBackupStatus{Plan: &v1alpha1.PlanStatus{
			Blueprint: "nonadminbackup", BlueprintGeneration: generation, Action: action, Spec: spec}},
	}
}

// The cache keeps one copy of equal plan snapshots: objects of the same
// blueprint generation and action share it; a different snapshot under the
// same key, another action or generation keeps its own; objects without a
// plan pass; managedFields are dropped from all.
func (s *CacheTransformSuite) TestPlanSnapshotsShared(c *C) {
	tr := cachetransform.New()
	in := func(o *v1alpha1.NonAdminBackup) *v1alpha1.NonAdminBackup {
		out, err := tr(o)
		c.Assert(err, IsNil)
		return out.(*v1alpha1.NonAdminBackup)
	}
	a := in(planned("a", "1", "backup", "validate", "wait"))
	b := in(planned("b", "1", "backup", "validate", "wait"))
	c.Check(b.Status.Plan.Spec == a.Status.Plan.Spec, Equals, true, Commentf("equal snapshots are one copy"))
	c.Check(a.ManagedFields, IsNil)

	edited := in(planned("c", "1", "backup", "validate", "verify"))
	c.Check(edited.Status.Plan.Spec == a.Status.Plan.Spec, Equals, false)
	c.Check(edited.Status.Plan.Spec.Phases[1].Name, Equals, "verify")
	again := in(planned("d", "1", "backup", "validate", "verify"))
	c.Check(again.Status.Plan.Spec == edited.Status.Plan.Spec, Equals, true, Commentf("a second variant is shared too"))

	c.Check(in(planned("e", "2", "backup", "validate", "wait")).Status.Plan.Spec == a.Status.Plan.Spec, Equals, false)
	c.Check(in(planned("f", "1", "delete", "validate", "wait")).Status.Plan.Spec == a.Status.Plan.Spec, Equals, false)

	bare := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	c.Check(in(bare).Status.Plan, IsNil)
}

// Strings and lists that repeat across objects are kept once: label keys,
// phase names, Velero's excluded resources (in the Velero Backup and in the
// NAB's mirror). Values are unchanged.
func (s *CacheTransformSuite) TestRepeatedStringsShared(c *C) {
	tr := cachetransform.New()
	mk := func(name string) (*velerov1.Backup, *v1alpha1.NonAdminBackup) {
		excluded := []string{"nonadminbackups.oadp.openshift.io", "clusterroles"}
		b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{string([]byte("openshift.io/oadp-nab-origin-nacuuid")): name + "-uuid-0123456789012345678901234567890"}},
			Spec: velerov1.BackupSpec{ExcludedResources: append([]string(nil), excluded...)}}
		nab := planned(name, "1", "backup", "validate")
		nab.Status.Plan.Phases = []v1alpha1.PhaseStatus{{Name: string([]byte("validate")), Func: "ValidateBackupSpec", State: v1alpha1.PhaseComplete}}
		nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{Spec: &velerov1.BackupSpec{ExcludedResources: append([]string(nil), excluded...)}}
		_, err := tr(b)
		c.Assert(err, IsNil)
		_, err = tr(nab)
		c.Assert(err, IsNil)
		return b, nab
	}
	b1, n1 := mk("one")
	b2, n2 := mk("two")
	c.Check(&b2.Spec.ExcludedResources[0] == &b1.Spec.ExcludedResources[0], Equals, true, Commentf("one list for all Velero Backups"))
	c.Check(&n1.Status.VeleroBackup.Spec.ExcludedResources[0] == &b1.Spec.ExcludedResources[0], Equals, true, Commentf("and the NABs' mirrors"))
	c.Check(b2.Spec.ExcludedResources, DeepEquals, []string{"nonadminbackups.oadp.openshift.io", "clusterroles"})
	c.Check(unsafe.StringData(n2.Status.Plan.Phases[0].Name) == unsafe.StringData(n1.Status.Plan.Phases[0].Name), Equals, true)
	var k1, k2 string
	for k := range b1.Labels {
		k1 = k
	}
	for k := range b2.Labels {
		k2 = k
	}
	c.Check(unsafe.StringData(k1) == unsafe.StringData(k2), Equals, true, Commentf("label keys shared"))
	c.Check(b2.Labels["openshift.io/oadp-nab-origin-nacuuid"], Equals, "two-uuid-0123456789012345678901234567890")
}

// Spec hashes (64 hex characters, past the length of other shared strings)
// are kept once per spec: equal ones shared between NABs and NARs, unequal
// ones kept apart, values unchanged.
func (s *CacheTransformSuite) TestSpecHashesShared(c *C) {
	tr := cachetransform.New()
	hash := func(seed string) string { return strings.Repeat(seed, 64/len(seed)) }
	nab := func(h string) *v1alpha1.NonAdminBackup {
		o := planned("n", "1", "backup", "validate")
		o.Status.SpecHash = string([]byte(h))
		_, err := tr(o)
		c.Assert(err, IsNil)
		return o
	}
	a, b, other := nab(hash("ab")), nab(hash("ab")), nab(hash("cd"))
	c.Check(unsafe.StringData(a.Status.SpecHash) == unsafe.StringData(b.Status.SpecHash), Equals, true)
	c.Check(unsafe.StringData(other.Status.SpecHash) == unsafe.StringData(a.Status.SpecHash), Equals, false)
	c.Check(other.Status.SpecHash, Equals, hash("cd"))
	nar := &v1alpha1.NonAdminRestore{Status: v1alpha1.NonAdminRestoreStatus{SpecHash: string([]byte(hash("ab")))}}
	_, err := tr(nar)
	c.Assert(err, IsNil)
	c.Check(unsafe.StringData(nar.Status.SpecHash) == unsafe.StringData(a.Status.SpecHash), Equals, true)
	c.Check(nar.Status.SpecHash, Equals, hash("ab"))
}

// Equal timestamps are kept once (the plan's, its phases', Velero's and its
// mirror's), unequal ones are not merged, and decoded lists lose the room
// JSON decoding left at their end.
func (s *CacheTransformSuite) TestTimesSharedListsExact(c *C) {
	tr := cachetransform.New()
	at := func(sec int64) *metav1.Time { t := metav1.Unix(sec, 0); return &t }
	nab := func(name string, start, end int64) *v1alpha1.NonAdminBackup {
		o := planned(name, "1", "backup", "validate", "createBackup")
		o.Status.Plan.StartTime = at(start)
		o.Status.Plan.Phases = make([]v1alpha1.PhaseStatus, 2, 8)
		o.Status.Plan.Phases[0] = v1alpha1.PhaseStatus{Name: "validate", StartTime: at(start), CompletionTime: at(end)}
		o.Status.Plan.Phases[1] = v1alpha1.PhaseStatus{Name: "createBackup", StartTime: at(end)}
		o.Status.Conditions = make([]metav1.Condition, 1, 4)
		o.Status.VeleroBackup = &v1alpha1.VeleroBackup{Status: &velerov1.BackupStatus{StartTimestamp: at(end)}}
		out, err := tr(o)
		c.Assert(err, IsNil)
		return out.(*v1alpha1.NonAdminBackup)
	}
	a, b, other := nab("a", 100, 101), nab("b", 100, 101), nab("c", 200, 201)
	c.Check(a.Status.Plan.StartTime == b.Status.Plan.StartTime, Equals, true)
	c.Check(a.Status.Plan.Phases[0].StartTime == a.Status.Plan.StartTime, Equals, true)
	c.Check(b.Status.Plan.Phases[0].CompletionTime == a.Status.Plan.Phases[1].StartTime, Equals, true)
	c.Check(b.Status.VeleroBackup.Status.StartTimestamp == a.Status.Plan.Phases[0].CompletionTime, Equals, true)
	c.Check(other.Status.Plan.StartTime == a.Status.Plan.StartTime, Equals, false)
	c.Check(other.Status.Plan.StartTime.Unix(), Equals, int64(200))
	c.Check(b.Status.Plan.Phases[1].StartTime.Unix(), Equals, int64(101))
	c.Check([]int{len(a.Status.Plan.Phases), cap(a.Status.Plan.Phases)}, DeepEquals, []int{2, 2})
	c.Check(a.Status.Plan.Phases[1].Name, Equals, "createBackup")
	c.Check(cap(a.Status.Conditions), Equals, 1)

	backup := &velerov1.Backup{Status: velerov1.BackupStatus{CompletionTimestamp: at(101)}}
	out, err := tr(backup)
	c.Assert(err, IsNil)
	c.Check(out.(*velerov1.Backup).Status.CompletionTimestamp == a.Status.Plan.Phases[1].StartTime, Equals, true)
}

// NABs asking the same backup share one BackupSpec (their spec's, and the
// mirror of their Velero Backup's); a spec that differs in any field keeps
// its own, and every object still reads its own values.
func (s *CacheTransformSuite) TestBackupSpecsShared(c *C) {
	tr := cachetransform.New()
	nab := func(name string, spec velerov1.BackupSpec) *v1alpha1.NonAdminBackup {
		o := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}}
		o.Spec.BackupSpec = spec.DeepCopy()
		mirror := spec.DeepCopy()
		mirror.IncludedNamespaces = []string{"demo"}
		o.Status.VeleroBackup = &v1alpha1.VeleroBackup{Name: "demo-" + name, Spec: mirror}
		out, err := tr(o)
		c.Assert(err, IsNil)
		return out.(*v1alpha1.NonAdminBackup)
	}
	spec := velerov1.BackupSpec{IncludedResources: []string{"configmaps"}, TTL: metav1.Duration{Duration: time.Hour}}
	a, b := nab("a", spec), nab("b", spec)
	longer := spec
	longer.TTL = metav1.Duration{Duration: 2 * time.Hour}
	other := nab("c", longer)
	c.Check(a.Spec.BackupSpec == b.Spec.BackupSpec, Equals, true)
	c.Check(a.Status.VeleroBackup.Spec == b.Status.VeleroBackup.Spec, Equals, true)
	c.Check(a.Spec.BackupSpec == a.Status.VeleroBackup.Spec, Equals, false) // the mirror names the namespace
	c.Check(other.Spec.BackupSpec == a.Spec.BackupSpec, Equals, false)
	c.Check(other.Status.VeleroBackup.Spec == a.Status.VeleroBackup.Spec, Equals, false)
	c.Check(other.Spec.BackupSpec.TTL.Duration, Equals, 2*time.Hour)
	c.Check(b.Spec.BackupSpec.TTL.Duration, Equals, time.Hour)
	c.Check(b.Status.VeleroBackup.Spec.IncludedNamespaces, DeepEquals, []string{"demo"})
	c.Check(b.Status.VeleroBackup.Name, Equals, "demo-b")
}

// The mirror of a backup waiting in Velero's queue holds only a phase: NABs
// whose mirrors are equal share one; a mirror with anything more keeps its
// own.
func (s *CacheTransformSuite) TestPhaseOnlyStatusesShared(c *C) {
	tr := cachetransform.New()
	nab := func(name string, status *velerov1.BackupStatus) *v1alpha1.VeleroBackup {
		o := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}}
		o.Status.VeleroBackup = &v1alpha1.VeleroBackup{Name: "demo-" + name, Status: status}
		out, err := tr(o)
		c.Assert(err, IsNil)
		return out.(*v1alpha1.NonAdminBackup).Status.VeleroBackup
	}
	empty1, empty2 := nab("a", &velerov1.BackupStatus{}), nab("b", &velerov1.BackupStatus{})
	new1, new2 := nab("c", &velerov1.BackupStatus{Phase: velerov1.BackupPhaseNew}), nab("d", &velerov1.BackupStatus{Phase: velerov1.BackupPhaseNew})
	running := nab("e", &velerov1.BackupStatus{Phase: velerov1.BackupPhaseNew, Version: 1})
	c.Check(empty1.Status == empty2.Status, Equals, true)
	c.Check(new1.Status == new2.Status, Equals, true)
	c.Check(new1.Status == empty1.Status, Equals, false)
	c.Check(new2.Status.Phase, Equals, velerov1.BackupPhaseNew)
	c.Check(running.Status == new1.Status, Equals, false)
	c.Check(running.Status.Version, Equals, 1)
	c.Check(nab("f", nil).Status == nil, Equals, true)
}

// An ended, compacted plan is cached as its summary (no phases); a plan
// that runs, or one kept whole (a schedule's), is cached as it is.
func (s *CacheTransformSuite) TestEndedPlansSummarized(c *C) {
	transform := cachetransform.New()
	ended := planned("ended", "1", "backup", "a", "b")
	ended.Status.Plan.Spec = nil
	ended.Status.Plan.State, ended.Status.Plan.Compacted = v1alpha1.PlanComplete, true
	ended.Status.Plan.Phases = []v1alpha1.PhaseStatus{{Name: "a", State: v1alpha1.PhaseComplete}, {Name: "b", State: v1alpha1.PhaseComplete}}
	ended.Status.Plan.DeferPhase = &v1alpha1.PhaseStatus{Name: "d", State: v1alpha1.PhaseComplete}
	c.Check(ended.Status.Plan.IsSummary(), Equals, false)
	running := ended.DeepCopy()
	running.Status.Plan.State, running.Status.Plan.Compacted = v1alpha1.PlanRunning, false
	kept := ended.DeepCopy()
	kept.Status.Plan.Compacted = false
	for _, o := range []*v1alpha1.NonAdminBackup{ended, running, kept} {
		_, err := transform(o)
		c.Assert(err, IsNil)
	}
	c.Check(ended.Status.Plan.IsSummary(), Equals, true)
	c.Check(ended.Status.Plan.Phases, HasLen, 0)
	c.Check(ended.Status.Plan.DeferPhase, IsNil)
	c.Check(ended.Status.Plan.State, Equals, v1alpha1.PlanComplete)
	c.Check(ended.Status.Plan.Action, Equals, "backup")
	c.Check(running.Status.Plan.Phases, HasLen, 2)
	c.Check(kept.Status.Plan.Phases, HasLen, 2)
	c.Check(kept.Status.Plan.IsSummary(), Equals, false)
}

// Short phase outputs equal across objects are kept once; a long one, or
// one of a different content, is its own.
func (s *CacheTransformSuite) TestShortOutputsShared(c *C) {
	transform := cachetransform.New()
	var nabs []*v1alpha1.NonAdminBackup
	for i, out := range []map[string]string{{"limit": "2"}, {"limit": "2"}, {"limit": "3"},
		{"name": "a-long-velero-backup-name-0123456789-abcdef"}, {"name": "a-long-velero-backup-name-0123456789-abcdef"}} {
		n := planned(fmt.Sprintf("n%d", i), "1", "backup", "w")
		n.Status.Plan.Phases = []v1alpha1.PhaseStatus{{Name: "w", State: v1alpha1.PhaseComplete, Output: out}}
		_, err := transform(n)
		c.Assert(err, IsNil)
		nabs = append(nabs, n)
	}
	addr := func(i int) uintptr { return reflect.ValueOf(nabs[i].Status.Plan.Phases[0].Output).Pointer() }
	c.Check(addr(0), Equals, addr(1))
	c.Check(addr(0), Not(Equals), addr(2))
	c.Check(addr(3), Not(Equals), addr(4))
	c.Check(nabs[2].Status.Plan.Phases[0].Output, DeepEquals, map[string]string{"limit": "3"})
	c.Check(nabs[4].Status.Plan.Phases[0].Output, DeepEquals, map[string]string{"name": "a-long-velero-backup-name-0123456789-abcdef"})
}
