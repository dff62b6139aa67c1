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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/phases"
)

// Field indexes Turns reads the cache by (IndexTurns registers them).
const (
	// turnsBackupIndex indexes the unfinished Velero Backups nacflow made
	// for a tenant — a NonAdminBackup's or a NonAdminSchedule's run — by
	// their origin namespace.
	turnsBackupIndex = "nacflow.turns.unfinishedOriginNamespace"
	// turnsWaitingIndex indexes the NonAdminBackups whose plan waits in
	// WaitForTurn, by namespace and under turnsAll.
	turnsWaitingIndex = "nacflow.turns.waiting"
	// turnsAll is the turnsWaitingIndex value every waiter has (no
	// namespace is called "*").
	turnsAll = "*"
	// waitForTurnFunc is the phase function whose waiters take turns.
	waitForTurnFunc = "WaitForTurn"
)

// admittedTTL is how long an admission counts while the cache does not show
// its Velero Backup: long enough for the Backup, created in the same
// reconcile, to reach the cache (milliseconds normally); once it has
// passed, an admission whose Backup was never created (the create failed
// for good) stops holding its namespace's place.
const admittedTTL = time.Minute

// turnsIndex is one cache index Turns reads.
type turnsIndex struct {
	obj   client.Object
	field string
	value client.IndexerFunc
}

// turnsIndexes are the cache indexes Turns reads: Velero Backups by
// the namespace they were made for while unfinished, and NonAdminBackups
// waiting in WaitForTurn.
var turnsIndexes = []turnsIndex{
	{&velerov1.Backup{}, turnsBackupIndex, func(obj client.Object) []string {
		if ns := UnfinishedOrigin(obj.(*velerov1.Backup)); ns != "" {
			return []string{ns}
		}
		return nil
	}},
	{&v1alpha1.NonAdminBackup{}, turnsWaitingIndex, func(obj client.Object) []string {
		if waitingTurn(obj.(*v1alpha1.NonAdminBackup)) != nil {
			return []string{turnsAll, obj.GetNamespace()}
		}
		return nil
	}},
}

// IndexTurns registers the cache indexes Turns reads (turnsIndexes)
// with indexer. Call it before the cache starts.
func IndexTurns(ctx context.Context, indexer client.FieldIndexer) error {
	for _, i := range turnsIndexes {
		if err := indexer.IndexField(ctx, i.obj, i.field, i.value); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
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

// waitingTurn returns the WaitForTurn phase nab's running backup plan waits
// in, nil when it does not wait for a turn.
func waitingTurn(nab *v1alpha1.NonAdminBackup) *v1alpha1.PhaseStatus {
	p := nab.Status.Plan
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

// TurnState is what a NonAdminBackup shows of its turn: 0 none, 1 waiting,
// 2 admitted (its WaitForTurn phase complete in a running plan, with a
// limit: an unlimited one took no turn, and waking anyone for it would only
// cost a wave of unlimited NABs a cache read each).
func TurnState(nab *v1alpha1.NonAdminBackup) int {
	if waitingTurn(nab) != nil {
		return 1
	}
	p := nab.Status.Plan
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

// Turns shares Velero's queue fairly between tenant namespaces: it
// implements phases.TurnKeeper for WaitForTurn, and tells the NonAdminBackup
// controller whom to wake (Wake).
//
// Everything it decides follows from the cache (IndexTurns), so a restart
// rebuilds it:
//   - in Velero: a namespace's unfinished Velero Backups nacflow made for it
//     (its NonAdminBackups' and its schedules' runs);
//   - waiting: the NonAdminBackups whose plan waits in WaitForTurn, in
//     (creation time, name) order within a namespace;
//   - a namespace has room while it has fewer in Velero than its limit
//     (the one its first waiter follows);
//   - round-robin: of the namespaces with room and waiters, the one with the
//     fewest in Velero goes first, then the one whose first waiter was
//     created first, then by name. Only that namespace's first waiter is
//     admitted; the next decision counts it.
//
// The one thing the cache cannot show yet is an admission made a moment
// ago: its Velero Backup is created in the same reconcile, but reaches the
// cache later. Turns keeps those admissions in memory until the cache
// shows the Backup (or admittedTTL passes), and decides under one lock for
// every namespace, so two workers deciding at once — in one namespace or in
// two — never both take the last place or both go first. A restart loses
// only this ledger, and by then the Backups it held are in the cache.
//
// It is safe for concurrent use.
type Turns struct {
	// Reader reads the manager's cache, indexed by IndexTurns.
	Reader client.Reader
	// OADPNamespace is where the Velero Backups are.
	OADPNamespace string
	// Now returns the current time (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
	// admitted maps namespace to the names of the Velero Backups admitted
	// and not yet seen in the cache, with the admission time.
	admitted map[string]map[string]time.Time
}

// NewTurns returns a Turns reading the cache r (indexed by
// IndexTurns) for the Velero Backups of oadpNamespace.
func NewTurns(r client.Reader, oadpNamespace string) *Turns {
	return &Turns{Reader: r, OADPNamespace: oadpNamespace}
}

func (t *Turns) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// waiter is one NonAdminBackup waiting for its turn.
type waiter struct {
	key     types.NamespacedName
	created time.Time
	// backup is the Velero Backup it creates once admitted.
	backup string
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

// nsTurns is what Turns knows of one namespace.
type nsTurns struct {
	name string
	// inVelero is how many unfinished Velero Backups it has, admissions
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

// Turn implements phases.TurnKeeper.
func (t *Turns) Turn(ctx context.Context, req phases.TurnRequest) (phases.TurnDecision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	// Admitted before — its Backup is made or on its way — when a status
	// write failed after the admission, or the controller restarted.
	if _, ok := t.admitted[req.Namespace][req.Backup]; ok {
		return phases.TurnDecision{Admitted: true}, nil
	}
	err := t.Reader.Get(ctx, client.ObjectKey{Namespace: t.OADPNamespace, Name: req.Backup}, &velerov1.Backup{})
	switch {
	case err == nil:
		return phases.TurnDecision{Admitted: true}, nil
	case !apierrors.IsNotFound(err):
		return phases.TurnDecision{}, fmt.Errorf("reading Velero Backup %s/%s: %w", t.OADPNamespace, req.Backup, err)
	}
	// The namespace alone first: while it is full, or an earlier waiter of
	// its own goes first, no other namespace matters.
	all, err := t.snapshot(ctx, now, req.Namespace, false)
	if err != nil {
		return phases.TurnDecision{}, err
	}
	own := all[req.Namespace]
	me := waiter{key: types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, created: req.Created, backup: req.Backup, limit: req.Max}
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
	if all, err = t.snapshot(ctx, now, req.Namespace, true); err != nil {
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
		t.admitted = map[string]map[string]time.Time{}
	}
	if t.admitted[req.Namespace] == nil {
		t.admitted[req.Namespace] = map[string]time.Time{}
	}
	t.admitted[req.Namespace][req.Backup] = now
	return phases.TurnDecision{Admitted: true, InVelero: own.inVelero}, nil
}

// Wake returns the NonAdminBackups to reconcile after a change to the turns
// (a Velero Backup of a tenant finished or went, a waiter came, went or was
// admitted): the first waiter of the namespace whose turn comes next, if
// any has room, and the waiters of namespace ns (the one that changed; ""
// for none) whose shown position went stale (phases.PositionStale), so that
// their message is rewritten. Errors are the cache's.
func (t *Turns) Wake(ctx context.Context, ns string) ([]types.NamespacedName, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	all, err := t.snapshot(ctx, t.now(), ns, true)
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

// snapshot reads, under t.mu, namespace also and — with every — every
// namespace with waiters from the cache: its unfinished Velero Backups,
// admissions not yet in the cache included, and its waiters in turn order,
// the admitted ones left out. Admissions the cache now shows, or older than
// admittedTTL, are forgotten.
func (t *Turns) snapshot(ctx context.Context, now time.Time, also string, every bool) (map[string]*nsTurns, error) {
	for ns, names := range t.admitted {
		for name, at := range names {
			err := t.Reader.Get(ctx, client.ObjectKey{Namespace: t.OADPNamespace, Name: name}, &velerov1.Backup{})
			switch {
			case err == nil || now.Sub(at) > admittedTTL:
				delete(names, name)
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading Velero Backup %s/%s: %w", t.OADPNamespace, name, err)
			}
		}
		if len(names) == 0 {
			delete(t.admitted, ns)
		}
	}
	list := &v1alpha1.NonAdminBackupList{}
	which := turnsAll
	if !every {
		which = also
	}
	if err := t.Reader.List(ctx, list, client.MatchingFields{turnsWaitingIndex: which}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the NonAdminBackups waiting for a turn: %w", err)
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
	for i := range list.Items {
		nab := &list.Items[i]
		ps := waitingTurn(nab)
		if ps == nil {
			continue
		}
		w := waiter{key: types.NamespacedName{Namespace: nab.Namespace, Name: nab.Name}, created: nab.CreationTimestamp.Time,
			backup: v1alpha1.NACObjectName(nab.Namespace, nab.Name, nacuuidOf(nab))}
		// WaitForTurn's outputs (phases.TurnOutputLimit, TurnOutputPosition).
		w.limit, _ = strconv.Atoi(ps.Output["limit"])
		w.shown, _ = strconv.Atoi(ps.Output["position"])
		n := get(nab.Namespace)
		n.waiting = append(n.waiting, w)
	}
	for ns, n := range all {
		backups := &velerov1.BackupList{}
		if err := t.Reader.List(ctx, backups, client.InNamespace(t.OADPNamespace), client.MatchingFields{turnsBackupIndex: ns},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the Velero Backups of namespace %s: %w", ns, err)
		}
		seen := make(map[string]bool, len(backups.Items)+len(t.admitted[ns]))
		for i := range backups.Items {
			seen[backups.Items[i].Name] = true
		}
		for name := range t.admitted[ns] {
			seen[name] = true
		}
		n.inVelero = len(seen)
		n.waiting = slices.DeleteFunc(n.waiting, func(w waiter) bool { return seen[w.backup] })
		slices.SortFunc(n.waiting, waiter.compare)
	}
	return all, nil
}

// nacuuidOf returns the NACUUID of a waiting nab's operation: derived from
// its UID, never read from status (operationIdentity). Only the adopt
// action keeps a recorded NACUUID, and it never waits for a turn.
func nacuuidOf(nab *v1alpha1.NonAdminBackup) string {
	return v1alpha1.NACUUIDOf(nab.UID)
}
