package veleroqueue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/phases"
)

// waitForTurnFunc is the phase function whose waiters take turns.
const waitForTurnFunc = "WaitForTurn"

// turnsAll is the waiting index value every waiter has (no namespace is
// called "*").
const turnsAll = "*"

// admittedTTL is how long an admission counts while the cache does not show
// its Velero object: long enough for the object, created in the same
// reconcile, to reach the cache (milliseconds normally); once it has
// passed, an admission whose object was never created (the create failed
// for good) stops holding its namespace's place.
const admittedTTL = time.Minute

// runAdmittedTTL is how long an admitted scheduled run counts while the
// cache shows no Backup of its Velero Schedule made since: Velero takes a
// resumed, due schedule's run at once (a spec change wakes its schedule
// controller) and looks at every schedule once a minute, so three minutes
// cover a busy Velero; past them the run stops holding its namespace's place
// and its schedule asks again.
const runAdmittedTTL = 3 * time.Minute

// lane is one of Velero's queues that Turns shares between namespaces:
// Velero runs its backups one at a time, and its restores one at a time,
// each in creation order.
type lane struct {
	// kind is the NAC kind whose operations wait for this queue.
	kind string
	// velero names the queue's Velero objects in messages and errors.
	velero string
	// veleroIndex indexes the unfinished Velero objects nacflow made for a
	// tenant by their origin namespace; waitingIndex the NAC objects whose
	// plan waits in WaitForTurn, by namespace and under turnsAll.
	veleroIndex, waitingIndex string
	newVelero                 func() client.Object
	newVeleroList             func() client.ObjectList
	newWaitingList            func() client.ObjectList
	newWaiting                func() client.Object
	// origin is UnfinishedOrigin or UnfinishedRestoreOrigin.
	origin func(client.Object) string
}

// Lanes: Velero's backup queue, which NonAdminBackups (and schedules' runs)
// wait for, and its restore queue, which NonAdminRestores wait for.
var (
	backupLane = &lane{kind: "NonAdminBackup", velero: "Velero Backup",
		veleroIndex: "nacflow.turns.unfinishedOriginNamespace", waitingIndex: "nacflow.turns.waiting",
		newVelero: func() client.Object { return &velerov1.Backup{} }, newVeleroList: func() client.ObjectList { return &velerov1.BackupList{} },
		newWaiting: func() client.Object { return &v1alpha1.NonAdminBackup{} }, newWaitingList: func() client.ObjectList { return &v1alpha1.NonAdminBackupList{} },
		origin: func(o client.Object) string { return UnfinishedOrigin(o.(*velerov1.Backup)) }}
	restoreLane = &lane{kind: "NonAdminRestore", velero: "Velero Restore",
		veleroIndex: "nacflow.turns.unfinishedRestoreOriginNamespace", waitingIndex: "nacflow.turns.waitingRestores",
		newVelero: func() client.Object { return &velerov1.Restore{} }, newVeleroList: func() client.ObjectList { return &velerov1.RestoreList{} },
		newWaiting: func() client.Object { return &v1alpha1.NonAdminRestore{} }, newWaitingList: func() client.ObjectList { return &v1alpha1.NonAdminRestoreList{} },
		origin: func(o client.Object) string { return UnfinishedRestoreOrigin(o.(*velerov1.Restore)) }}
	lanes = []*lane{backupLane, restoreLane}
)

// laneOf returns the lane of NAC kind ("" is NonAdminBackup's), nil for a
// kind that waits for no turn.
func laneOf(kind string) *lane {
	if kind == "" {
		return backupLane
	}
	for _, l := range lanes {
		if l.kind == kind {
			return l
		}
	}
	return nil
}

// IndexTurns registers the cache indexes Turns reads with indexer, for
// every lane: the unfinished Velero Backups and Restores nacflow made for a
// tenant by origin namespace, and the NonAdminBackups and NonAdminRestores
// waiting in WaitForTurn. Call it once, before the cache starts.
func IndexTurns(ctx context.Context, indexer client.FieldIndexer) error {
	for _, l := range lanes {
		if err := indexer.IndexField(ctx, l.newVelero(), l.veleroIndex, func(obj client.Object) []string {
			if ns := l.origin(obj); ns != "" {
				return []string{ns}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("indexing %s by %s: %w", l.velero, l.veleroIndex, err)
		}
		if err := indexer.IndexField(ctx, l.newWaiting(), l.waitingIndex, func(obj client.Object) []string {
			if o, ok := obj.(v1alpha1.Object); ok && WaitingTurn(o) != nil {
				return []string{turnsAll, obj.GetNamespace()}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("indexing %s by %s: %w", l.kind, l.waitingIndex, err)
		}
	}
	return nil
}

// UnfinishedOrigin returns the tenant namespace an unfinished Velero Backup
// was made for: the origin namespace nacflow wrote on a NonAdminBackup's
// Backup, or on a NonAdminSchedule's Velero Schedule (Velero copies it onto
// every run). Only nacflow and the admin write objects of the OADP
// namespace, so a tenant cannot move a Backup to another's count. "" for a
// finished Backup or the admin's own.
func UnfinishedOrigin(b *velerov1.Backup) string {
	if v1alpha1.BackupFinished(b.Status.Phase) || b.Labels[v1alpha1.OADPLabel] != v1alpha1.OADPLabelValue {
		return ""
	}
	if ns := b.Annotations[v1alpha1.NabOriginNamespaceAnnotation]; ns != "" {
		return ns
	}
	return b.Annotations[v1alpha1.NasOriginNamespaceAnnotation]
}

// UnfinishedRestoreOrigin returns the tenant namespace an unfinished Velero
// Restore was made for (the origin namespace nacflow wrote on a
// NonAdminRestore's Restore), "" for a finished Restore or the admin's own.
func UnfinishedRestoreOrigin(r *velerov1.Restore) string {
	if v1alpha1.RestoreFinished(r.Status.Phase) || r.Labels[v1alpha1.OADPLabel] != v1alpha1.OADPLabelValue {
		return ""
	}
	return r.Annotations[v1alpha1.NarOriginNamespaceAnnotation]
}

// WaitingTurn returns the WaitForTurn phase obj's running plan waits in, nil
// when it does not wait for a turn.
func WaitingTurn(obj v1alpha1.Object) *v1alpha1.PhaseStatus {
	p := obj.GetPlan()
	if p == nil || (p.State != v1alpha1.PlanRunning && p.State != v1alpha1.PlanPending) {
		return nil
	}
	for i := range p.Phases {
		if p.Phases[i].Func == waitForTurnFunc && p.Phases[i].State == v1alpha1.PhaseWaiting {
			return &p.Phases[i]
		}
	}
	return nil
}

// TurnState is what a NonAdminBackup or NonAdminRestore shows of its turn:
// 0 none, 1 waiting, 2 admitted (its WaitForTurn phase complete in a running
// plan, with a limit: an unlimited one took no turn, and waking anyone for
// it would only cost a wave of unlimited operations a cache read each).
func TurnState(obj v1alpha1.Object) int {
	if WaitingTurn(obj) != nil {
		return 1
	}
	p := obj.GetPlan()
	if p == nil || (p.State != v1alpha1.PlanRunning && p.State != v1alpha1.PlanPending) {
		return 0
	}
	for i := range p.Phases {
		ps := &p.Phases[i]
		if ps.Func == waitForTurnFunc && ps.State == v1alpha1.PhaseComplete && ps.Output["limit"] != "0" {
			return 2
		}
	}
	return 0
}

// Turns shares Velero's queues fairly between tenant namespaces — its
// backup queue (NonAdminBackups, schedules' runs counted) and its restore
// queue (NonAdminRestores), each a lane of its own: it implements
// phases.TurnKeeper for WaitForTurn, and tells the controllers whom to wake
// (Wake).
//
// Everything it decides follows from the cache (IndexTurns), so a restart
// rebuilds it. In each lane:
//   - in Velero: a namespace's unfinished Velero objects of the lane that
//     nacflow made for it (for backups, its NonAdminBackups' and its
//     schedules' runs);
//   - waiting: the NAC objects whose plan waits in WaitForTurn, in
//     (creation time, name) order within a namespace;
//   - a namespace has room while it has fewer in Velero than its limit
//     (the one its first waiter follows);
//   - round-robin: of the namespaces with room and waiters, the one with the
//     fewest in Velero goes first, then the one whose first waiter was
//     created first, then by name. Only that namespace's first waiter is
//     admitted; the next decision counts it.
//
// The one thing the cache cannot show yet is an admission made a moment
// ago: its Velero object is created in the same reconcile, but reaches the
// cache later. Turns keeps those admissions in memory until the cache
// shows the object (or admittedTTL passes), and decides under one lock for
// every namespace and lane, so two workers deciding at once — in one
// namespace or in two — never both take the last place or both go first. A
// restart loses only this ledger, and by then the objects it held are in
// the cache.
//
// It is safe for concurrent use.
type Turns struct {
	// Reader reads the manager's cache, indexed by IndexTurns.
	Reader client.Reader
	// OADPNamespace is where the Velero objects are.
	OADPNamespace string
	// Now returns the current time (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
	// admitted maps lane kind and namespace to the names of the Velero
	// objects admitted and not yet seen in the cache, with the admission
	// time.
	admitted map[string]map[string]map[string]time.Time
	// runs maps namespace to the Velero Schedules whose due run was
	// admitted (RunTurn) and not yet taken by Velero, with the admission
	// time: each counts as one of the namespace's Backups in Velero.
	runs map[string]map[string]time.Time
}

// NewTurns returns a Turns reading the cache r (indexed by
// IndexTurns) for the Velero objects of oadpNamespace.
func NewTurns(r client.Reader, oadpNamespace string) *Turns {
	return &Turns{Reader: r, OADPNamespace: oadpNamespace}
}

func (t *Turns) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// waiter is one operation waiting for its turn.
type waiter struct {
	key     types.NamespacedName
	created time.Time
	// velero is the Velero object it creates once admitted.
	velero string
	// limit, shown: what its WaitForTurn phase recorded (limit; position
	// as last written, 0 when none).
	limit, shown int
}

// compare orders waiters: by creation time, then name.
func (w waiter) compare(o waiter) int {
	if c := w.created.Compare(o.created); c != 0 {
		return c
	}
	return strings.Compare(w.key.Name, o.key.Name)
}

// nsTurns is what Turns knows of one namespace in one lane.
type nsTurns struct {
	name string
	// inVelero is how many unfinished Velero objects it has, admissions
	// not yet in the cache included.
	inVelero int
	// waiting are its waiters in turn order, those already admitted left
	// out.
	waiting []waiter
}

// ready reports whether the namespace has a waiter and room for it.
func (n *nsTurns) ready() bool {
	return len(n.waiting) > 0 && n.inVelero < n.waiting[0].limit
}

// goesBefore reports whether n's first waiter goes before o's in the
// round-robin: fewer in Velero, then the older first waiter, then by name.
func (n *nsTurns) goesBefore(o *nsTurns) bool {
	if n.inVelero != o.inVelero {
		return n.inVelero < o.inVelero
	}
	if c := n.waiting[0].created.Compare(o.waiting[0].created); c != 0 {
		return c < 0
	}
	return n.name < o.name
}

// Turn implements phases.TurnKeeper. Errors: a kind that waits for no turn,
// and the cache's.
func (t *Turns) Turn(ctx context.Context, req phases.TurnRequest) (phases.TurnDecision, error) {
	l := laneOf(req.Kind)
	if l == nil {
		return phases.TurnDecision{}, fmt.Errorf("%s operations wait for no turn in Velero's queues", req.Kind)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	// Admitted before — its object is made or on its way — when a status
	// write failed after the admission, or the controller restarted.
	if _, ok := t.admitted[l.kind][req.Namespace][req.Velero]; ok {
		return phases.TurnDecision{Admitted: true}, nil
	}
	err := t.Reader.Get(ctx, client.ObjectKey{Namespace: t.OADPNamespace, Name: req.Velero}, l.newVelero())
	switch {
	case err == nil:
		return phases.TurnDecision{Admitted: true}, nil
	case !apierrors.IsNotFound(err):
		return phases.TurnDecision{}, fmt.Errorf("reading %s %s/%s: %w", l.velero, t.OADPNamespace, req.Velero, err)
	}
	// The namespace alone first: while it is full, or an earlier waiter of
	// its own goes first, no other namespace matters.
	all, err := t.snapshot(ctx, l, now, req.Namespace, false)
	if err != nil {
		return phases.TurnDecision{}, err
	}
	own := all[req.Namespace]
	me := waiter{key: types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, created: req.Created, velero: req.Velero, limit: req.Max}
	i := slices.IndexFunc(own.waiting, func(w waiter) bool { return w.key == me.key })
	if i < 0 {
		// Not waiting in the cache yet (its first run): in its place.
		i, _ = slices.BinarySearchFunc(own.waiting, me, waiter.compare)
		own.waiting = slices.Insert(own.waiting, i, me)
	} else {
		own.waiting[i].limit = req.Max // its own plan's limit, not what it recorded
	}
	d := phases.TurnDecision{InVelero: own.inVelero, Position: i + 1, Waiting: len(own.waiting)}
	if i > 0 || own.inVelero >= req.Max {
		return d, nil
	}
	if all, err = t.snapshot(ctx, l, now, req.Namespace, true); err != nil {
		return phases.TurnDecision{}, err
	}
	all[req.Namespace] = own // with this waiter in its place
	for _, o := range all {
		if o != own && o.ready() && o.goesBefore(own) {
			d.OtherFirst = true
			return d, nil
		}
	}
	if t.admitted == nil {
		t.admitted = map[string]map[string]map[string]time.Time{}
	}
	if t.admitted[l.kind] == nil {
		t.admitted[l.kind] = map[string]map[string]time.Time{}
	}
	if t.admitted[l.kind][req.Namespace] == nil {
		t.admitted[l.kind][req.Namespace] = map[string]time.Time{}
	}
	t.admitted[l.kind][req.Namespace][req.Velero] = now
	return phases.TurnDecision{Admitted: true, InVelero: own.inVelero}, nil
}

// RunTurn implements phases.TurnKeeper for a schedule's due run: the run
// takes its turn in the backup lane as a NonAdminBackup created when the
// run fell due (req.Created) would — after the namespace's operations that
// waited since before then, only while the namespace has fewer than req.Max
// Backups in Velero, and after another namespace's waiting operation that
// goes first in the round-robin. Once admitted, the run counts as one of the
// namespace's Backups in Velero (for every decision, NonAdminBackups' too)
// until the cache shows a Backup of Velero Schedule req.Velero made since
// the admission, or runAdmittedTTL passes. Schedules waiting for their turn
// are not themselves seen by other namespaces' decisions: a namespace's due
// runs never pass its share, but may go after other namespaces' backups
// that came later. Errors: the cache's.
func (t *Turns) RunTurn(ctx context.Context, req phases.TurnRequest) (phases.TurnDecision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if err := t.forgetTakenRuns(ctx, now); err != nil {
		return phases.TurnDecision{}, err
	}
	if _, ok := t.runs[req.Namespace][req.Velero]; ok {
		return phases.TurnDecision{Admitted: true}, nil
	}
	all, err := t.snapshot(ctx, backupLane, now, req.Namespace, true)
	if err != nil {
		return phases.TurnDecision{}, err
	}
	own := all[req.Namespace]
	run := waiter{key: types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, created: req.Created, limit: req.Max}
	ahead := 0
	for _, w := range own.waiting {
		if w.compare(run) < 0 {
			ahead++
		}
	}
	d := phases.TurnDecision{InVelero: own.inVelero, Position: ahead + 1, Waiting: len(own.waiting) + 1}
	if ahead > 0 || own.inVelero >= req.Max {
		return d, nil
	}
	me := &nsTurns{name: req.Namespace, inVelero: own.inVelero, waiting: []waiter{run}}
	for _, o := range all {
		if o.name != req.Namespace && o.ready() && o.goesBefore(me) {
			d.OtherFirst = true
			return d, nil
		}
	}
	if t.runs == nil {
		t.runs = map[string]map[string]time.Time{}
	}
	if t.runs[req.Namespace] == nil {
		t.runs[req.Namespace] = map[string]time.Time{}
	}
	t.runs[req.Namespace][req.Velero] = now
	return phases.TurnDecision{Admitted: true, InVelero: own.inVelero}, nil
}

// forgetTakenRuns drops, under t.mu, the admitted runs Velero has taken
// (the cache shows a Backup labelled with their Velero Schedule's name,
// made no earlier than the second of the admission: creation timestamps
// have whole seconds) and those older than runAdmittedTTL. Errors: the
// cache's.
func (t *Turns) forgetTakenRuns(ctx context.Context, now time.Time) error {
	for ns, scheds := range t.runs {
		for sched, at := range scheds {
			if now.Sub(at) > runAdmittedTTL {
				delete(scheds, sched)
				continue
			}
			list := &velerov1.BackupList{}
			if err := t.Reader.List(ctx, list, client.InNamespace(t.OADPNamespace), client.MatchingLabels{velerov1.ScheduleNameLabel: sched},
				client.UnsafeDisableDeepCopy); err != nil {
				return fmt.Errorf("listing the Velero Backups of Velero Schedule %s: %w", sched, err)
			}
			for i := range list.Items {
				if !list.Items[i].CreationTimestamp.Time.Before(at.Truncate(time.Second)) {
					delete(scheds, sched)
					break
				}
			}
		}
		if len(scheds) == 0 {
			delete(t.runs, ns)
		}
	}
	return nil
}

// Wake returns the operations of NAC kind (NonAdminBackup or
// NonAdminRestore) to reconcile after a change to their lane's turns (a
// tenant's Velero object finished or went, a waiter came, went or was
// admitted): the first waiter of the namespace whose turn comes next, if
// any has room, and the waiters of namespace ns (the one that changed; ""
// for none) whose shown position went stale (phases.PositionStale), so that
// their message is rewritten. Errors: a kind that waits for no turn, and
// the cache's.
func (t *Turns) Wake(ctx context.Context, kind, ns string) ([]types.NamespacedName, error) {
	l := laneOf(kind)
	if l == nil {
		return nil, fmt.Errorf("%s operations wait for no turn in Velero's queues", kind)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	all, err := t.snapshot(ctx, l, t.now(), ns, true)
	if err != nil {
		return nil, err
	}
	var next *nsTurns
	for _, n := range all {
		if n.ready() && (next == nil || n.goesBefore(next)) {
			next = n
		}
	}
	var out []types.NamespacedName
	if next != nil {
		out = append(out, next.waiting[0].key)
	}
	if n := all[ns]; n != nil {
		for i, w := range n.waiting {
			if phases.PositionStale(w.shown, i+1) && (next == nil || w.key != next.waiting[0].key) {
				out = append(out, w.key)
			}
		}
	}
	return out, nil
}

// snapshot reads, under t.mu, lane l of namespace also and — with every —
// of every namespace with waiters from the cache: its unfinished Velero
// objects, admissions not yet in the cache included (for backups, admitted
// scheduled runs Velero has not taken too), and its waiters in
// turn order, the admitted ones left out. Admissions the cache now shows, or
// older than admittedTTL, are forgotten.
func (t *Turns) snapshot(ctx context.Context, l *lane, now time.Time, also string, every bool) (map[string]*nsTurns, error) {
	if l == backupLane {
		if err := t.forgetTakenRuns(ctx, now); err != nil {
			return nil, err
		}
	}
	admitted := t.admitted[l.kind]
	for ns, names := range admitted {
		for name, at := range names {
			err := t.Reader.Get(ctx, client.ObjectKey{Namespace: t.OADPNamespace, Name: name}, l.newVelero())
			switch {
			case err == nil || now.Sub(at) > admittedTTL:
				delete(names, name)
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading %s %s/%s: %w", l.velero, t.OADPNamespace, name, err)
			}
		}
		if len(names) == 0 {
			delete(admitted, ns)
		}
	}
	list := l.newWaitingList()
	which := turnsAll
	if !every {
		which = also
	}
	if err := t.Reader.List(ctx, list, client.MatchingFields{l.waitingIndex: which}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the %ss waiting for a turn: %w", l.kind, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("reading the %ss waiting for a turn: %w", l.kind, err)
	}
	all := map[string]*nsTurns{}
	get := func(ns string) *nsTurns {
		if all[ns] == nil {
			all[ns] = &nsTurns{name: ns}
		}
		return all[ns]
	}
	if also != "" {
		get(also)
	}
	for _, item := range items {
		obj, ok := item.(v1alpha1.Object)
		if !ok {
			continue
		}
		ps := WaitingTurn(obj)
		if ps == nil {
			continue
		}
		// The NACUUID of a waiting operation is derived from its UID, never
		// read from status (operationIdentity); only adopt actions keep a
		// recorded one, and they never wait for a turn.
		w := waiter{key: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, created: obj.GetCreationTimestamp().Time,
			velero: v1alpha1.NACObjectName(obj.GetNamespace(), obj.GetName(), v1alpha1.NACUUIDOf(obj.GetUID()))}
		// WaitForTurn's outputs (phases.TurnOutputLimit, TurnOutputPosition).
		w.limit, _ = strconv.Atoi(ps.Output["limit"])
		w.shown, _ = strconv.Atoi(ps.Output["position"])
		n := get(obj.GetNamespace())
		n.waiting = append(n.waiting, w)
	}
	for ns, n := range all {
		objs := l.newVeleroList()
		if err := t.Reader.List(ctx, objs, client.InNamespace(t.OADPNamespace), client.MatchingFields{l.veleroIndex: ns},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the %ss of namespace %s: %w", l.velero, ns, err)
		}
		seen := map[string]bool{}
		if err := meta.EachListItem(objs, func(o runtime.Object) error {
			if mo, ok := o.(metav1.Object); ok {
				seen[mo.GetName()] = true
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("reading the %ss of namespace %s: %w", l.velero, ns, err)
		}
		for name := range admitted[ns] {
			seen[name] = true
		}
		n.inVelero = len(seen)
		if l == backupLane {
			// Admitted scheduled runs Velero has not taken yet.
			n.inVelero += len(t.runs[ns])
		}
		n.waiting = slices.DeleteFunc(n.waiting, func(w waiter) bool { return seen[w.velero] })
		slices.SortFunc(n.waiting, waiter.compare)
	}
	return all, nil
}
