// Package cachetransform makes the manager's cache hold less: every cached
// object goes through New's transform, which drops what is never read and
// keeps once what repeats from object to object.
package cachetransform

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Bounds of the plan-spec interner: distinct specs kept per (blueprint,
// generation, action), and in all. Past them a spec is simply not shared.
const (
	maxSpecsPerKey = 4
	maxSpecs       = 256
)

// planSpecInterner makes the cached NAC objects whose status.plan.spec is
// the same snapshot share one copy of it. Every NonAdminBackup of a
// blueprint generation snapshots the same action (the plan is frozen when
// the operation starts), so the cache would hold one equal copy per NAB.
// Sharing is safe because the cache never hands out
// its objects (controller-runtime deep-copies every Get and List, and the
// two lists that do not — backup sync, metrics — only read).
type planSpecInterner struct {
	mu    sync.Mutex
	byKey map[string][]*v1alpha1.BlueprintAction
	n     int
}

// intern replaces p.Spec with the shared copy equal to it, registering it
// as the shared copy when it is new.
func (in *planSpecInterner) intern(p *v1alpha1.PlanStatus) {
	if p == nil || p.Spec == nil {
		return
	}
	key := p.Blueprint + "\x00" + p.BlueprintGeneration + "\x00" + p.Action
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, shared := range in.byKey[key] {
		if shared == p.Spec {
			return
		}
		if equality.Semantic.DeepEqual(shared, p.Spec) {
			p.Spec = shared
			return
		}
	}
	if in.n < maxSpecs && len(in.byKey[key]) < maxSpecsPerKey {
		if in.byKey == nil {
			in.byKey = map[string][]*v1alpha1.BlueprintAction{}
		}
		in.byKey[key] = append(in.byKey[key], p.Spec)
		in.n++
	}
}

// planHolder is a NAC kind with a plan (engine.Object without the import).
type planHolder interface {
	GetPlan() *v1alpha1.PlanStatus
}

// New returns the transform every cached object goes through:
// managedFields are dropped (never read), an ended plan that was compacted
// is kept as its summary (v1alpha1.PlanStatus.Summarize: the controller
// reads nothing of its phases, and its status writes leave the stored plan
// alone), and what repeats from object to
// object is kept once: NAC objects' plan snapshots, NABs' BackupSpecs (their
// own and their Velero Backup's mirror), timestamps, and strings (label and
// annotation keys, phase and condition names, Velero's resource lists, the
// spec hashes of NABs and NARs). Decoded phase and condition lists are cut to their length. A cached NAB
// takes about a third less memory (docs/performance.md).
func New() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	specs := &planSpecInterner{}
	strs := &stringTable{}
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		if h, ok := obj.(planHolder); ok {
			// An ended, compacted plan is kept as its summary: nothing the
			// controller reads from the cache is in its phases, and every
			// NAC object keeps its last plan for its life.
			h.GetPlan().Summarize()
			specs.intern(h.GetPlan())
		}
		strs.object(obj)
		return obj, nil
	}
}

// Bounds of the string table: entries, and the length of a string or of a
// list's joined form that is interned (longer ones are rarely shared:
// messages, UIDs).
const (
	maxInternedStrings = 8192
	maxInternedLen     = 40
	maxInternedList    = 2048
)

// stringTable shares equal strings and string lists among cached objects.
// A decoded object owns a fresh copy of every string: across NABs and
// their Velero Backups the same label keys, phase names and Velero's list
// of excluded resources would be held once per object. The table is bounded;
// once full, strings not in it stay as they are.
type stringTable struct {
	mu    sync.Mutex
	strs  map[string]string
	lists map[string][]string
	maps  map[string]map[string]string
	times map[int64]*metav1.Time
	specs map[string][]*velerov1.BackupSpec
	nspec int
	// statuses are the shared phase-only Velero statuses, by phase.
	statuses map[velerov1.BackupPhase]*velerov1.BackupStatus
}

// Bounds of the shared BackupSpecs: distinct specs kept per key (the
// included namespaces and the location), and in all before the table
// starts afresh.
const (
	maxBackupSpecsPerKey = 4
	maxBackupSpecs       = 4096
)

// backupSpecPtr returns the shared copy of s, equal to it (the caller
// holds mu). A NAB holds two BackupSpecs (spec.backupSpec and its Velero
// Backup's mirror in status), 416 bytes of struct each before any value;
// a tenant's NABs mostly ask the same (a schedule's always do), so most of
// them would be copies.
func (t *stringTable) backupSpecPtr(s *velerov1.BackupSpec) *velerov1.BackupSpec {
	if s == nil {
		return nil
	}
	t.backupSpec(s)
	key := strings.Join(s.IncludedNamespaces, ",") + "\x00" + s.StorageLocation
	for _, shared := range t.specs[key] {
		// Exactly equal, not semantically: the cache must show what the
		// API server holds.
		if shared == s || reflect.DeepEqual(shared, s) {
			return shared
		}
	}
	if t.specs == nil || t.nspec >= maxBackupSpecs {
		t.specs, t.nspec = map[string][]*velerov1.BackupSpec{}, 0
	}
	if len(t.specs[key]) < maxBackupSpecsPerKey {
		t.specs[key] = append(t.specs[key], s)
		t.nspec++
	}
	return s
}

// maxInternedTimes bounds the table of shared timestamps. Timestamps are
// recent ones (a wave's NABs start and end their phases in the same
// seconds), so a full table starts afresh rather than freezing.
const maxInternedTimes = 4096

// time returns the shared copy of t (the caller holds mu). The plan's and
// Velero's timestamps are pointers, one 24-byte allocation each, about
// eight per NAB, most equal to the second.
func (t *stringTable) time(tm *metav1.Time) *metav1.Time {
	if tm == nil {
		return nil
	}
	key := tm.UnixNano()
	if shared, ok := t.times[key]; ok && shared.Location() == tm.Location() {
		return shared
	}
	if t.times == nil || len(t.times) >= maxInternedTimes {
		t.times = make(map[int64]*metav1.Time, 256)
	}
	t.times[key] = tm
	return tm
}

// str returns the shared copy of s (the caller holds mu).
func (t *stringTable) str(s string) string {
	return t.strUpTo(s, maxInternedLen)
}

// specHashLen is the length of a status.specHash (hex SHA-256,
// v1alpha1.SpecHash): equal for every operation of the same spec (a
// schedule's runs, a tenant's repeated backups), 80 bytes each unshared.
const specHashLen = 64

// strUpTo returns the shared copy of s when s is no longer than n bytes
// (the caller holds mu).
func (t *stringTable) strUpTo(s string, n int) string {
	if s == "" || len(s) > n {
		return s
	}
	if shared, ok := t.strs[s]; ok {
		return shared
	}
	if t.strs == nil {
		t.strs = map[string]string{}
	}
	if len(t.strs) < maxInternedStrings {
		t.strs[s] = s
	}
	return s
}

// list returns the shared copy of l (the caller holds mu).
func (t *stringTable) list(l []string) []string {
	if len(l) == 0 {
		return l
	}
	key := strings.Join(l, "\x00")
	if len(key) > maxInternedList {
		return l
	}
	if shared, ok := t.lists[key]; ok {
		return shared
	}
	if t.lists == nil {
		t.lists = map[string][]string{}
	}
	if len(t.lists) < maxInternedStrings {
		t.lists[key] = l
	}
	return l
}

// Bounds of the shared small maps: distinct maps kept, and the length of
// a map's joined keys and values that is shared.
const (
	maxSharedMaps   = 1024
	maxSharedMapLen = 40
)

// smallMap returns the shared copy of m, equal to it, when m is short (a
// phase's output such as {limit: 2} or {phase: Completed}, the same in
// thousands of running plans; a map is 300 bytes however few its entries);
// otherwise m with its strings shared. The caller holds mu.
func (t *stringTable) smallMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	var key strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if key.Len()+len(k)+len(m[k])+2 > maxSharedMapLen {
			return t.strMap(m)
		}
		key.WriteString(k)
		key.WriteByte(0)
		key.WriteString(m[k])
		key.WriteByte(0)
	}
	if shared, ok := t.maps[key.String()]; ok {
		return shared
	}
	m = t.strMap(m)
	if t.maps == nil {
		t.maps = map[string]map[string]string{}
	}
	if len(t.maps) < maxSharedMaps {
		t.maps[key.String()] = m
	}
	return m
}

// strMap returns m with its keys, and its short values, shared.
func (t *stringTable) strMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[t.str(k)] = t.str(v)
	}
	return out
}

func (t *stringTable) backupSpec(s *velerov1.BackupSpec) {
	if s == nil {
		return
	}
	s.IncludedNamespaces = t.list(s.IncludedNamespaces)
	s.ExcludedNamespaces = t.list(s.ExcludedNamespaces)
	s.IncludedResources = t.list(s.IncludedResources)
	s.ExcludedResources = t.list(s.ExcludedResources)
	s.StorageLocation = t.str(s.StorageLocation)
	s.VolumeGroupSnapshotLabelKey = t.str(s.VolumeGroupSnapshotLabelKey)
}

func (t *stringTable) conditions(cs []metav1.Condition) {
	for i := range cs {
		cs[i].Type = t.str(cs[i].Type)
		cs[i].Reason = t.str(cs[i].Reason)
		cs[i].Status = metav1.ConditionStatus(t.str(string(cs[i].Status)))
	}
}

func (t *stringTable) phase(p *v1alpha1.PhaseStatus) {
	if p == nil {
		return
	}
	p.Output = t.smallMap(p.Output)
	p.Name = t.str(p.Name)
	p.Func = t.str(p.Func)
	p.State = v1alpha1.PhaseState(t.str(string(p.State)))
	p.StartTime = t.time(p.StartTime)
	p.CompletionTime = t.time(p.CompletionTime)
}

// backupStatus shares the timestamps of Velero's BackupStatus (Velero's
// own object, or its mirror in a NAB).
func (t *stringTable) backupStatus(s *velerov1.BackupStatus) {
	if s == nil {
		return
	}
	s.StartTimestamp = t.time(s.StartTimestamp)
	s.CompletionTimestamp = t.time(s.CompletionTimestamp)
	s.Expiration = t.time(s.Expiration)
}

// Bound of the shared phase-only BackupStatuses (Velero's phases are a
// short enum; anything past the bound is simply not shared).
const maxPhaseOnlyStatuses = 16

// phaseOnlyStatus returns the shared copy of s when s holds nothing but its
// phase (the caller holds mu): the mirror of a backup still waiting in
// Velero's queue ("" or New). A BackupStatus is 200 bytes, and every
// waiting NAB would hold an equal copy.
func (t *stringTable) phaseOnlyStatus(s *velerov1.BackupStatus) *velerov1.BackupStatus {
	if s == nil || !reflect.DeepEqual(*s, velerov1.BackupStatus{Phase: s.Phase}) {
		return s
	}
	if shared, ok := t.statuses[s.Phase]; ok {
		return shared
	}
	if t.statuses == nil {
		t.statuses = map[velerov1.BackupPhase]*velerov1.BackupStatus{}
	}
	if len(t.statuses) < maxPhaseOnlyStatuses {
		t.statuses[s.Phase] = s
	}
	return s
}

// exact returns l in an array of its own length: JSON decoding grows a
// slice by doubling, so a plan's 5 phases held room for 8 (96 bytes each).
func exact[T any](l []T) []T {
	if cap(l) == len(l) {
		return l
	}
	return append(make([]T, 0, len(l)), l...)
}

// object shares the strings of obj that repeat across objects.
func (t *stringTable) object(obj any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m, ok := obj.(metav1.Object); ok {
		m.SetLabels(t.strMap(m.GetLabels()))
		m.SetAnnotations(t.strMap(m.GetAnnotations()))
		m.SetFinalizers(t.list(m.GetFinalizers()))
	}
	if h, ok := obj.(planHolder); ok {
		if p := h.GetPlan(); p != nil {
			p.Blueprint = t.str(p.Blueprint)
			p.Action = t.str(p.Action)
			p.Current = t.str(p.Current)
			p.StartTime = t.time(p.StartTime)
			p.CompletionTime = t.time(p.CompletionTime)
			p.Phases = exact(p.Phases)
			for i := range p.Phases {
				t.phase(&p.Phases[i])
			}
			t.phase(p.DeferPhase)
		}
	}
	if o, ok := obj.(v1alpha1.Object); ok {
		o.SetConditions(exact(o.GetConditions()))
		t.conditions(o.GetConditions())
	}
	if o, ok := obj.(*velerov1.Backup); ok {
		t.backupSpec(&o.Spec)
		t.backupStatus(&o.Status)
	}
	if o, ok := obj.(*v1alpha1.NonAdminRestore); ok {
		o.Status.SpecHash = t.strUpTo(o.Status.SpecHash, specHashLen)
	}
	if o, ok := obj.(*v1alpha1.NonAdminBackup); ok {
		o.Status.SpecHash = t.strUpTo(o.Status.SpecHash, specHashLen)
		o.Spec.BackupSpec = t.backupSpecPtr(o.Spec.BackupSpec)
		if vb := o.Status.VeleroBackup; vb != nil {
			vb.Namespace = t.str(vb.Namespace)
			vb.Spec = t.backupSpecPtr(vb.Spec)
			vb.Status = t.phaseOnlyStatus(vb.Status)
			t.backupStatus(vb.Status)
		}
	}
}
