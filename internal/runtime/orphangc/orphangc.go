// Package orphangc is nacflow's garbage collector (OADP NAC's): a periodic
// pass (cmd/nac, --garbage-collection-period) that deletes what nacflow
// made in the OADP namespace for NAC objects that no longer exist — Velero
// Backups (objects only: the data stays), Restores, BackupStorageLocations,
// DeleteBackupRequests, copied Secrets, NonAdminBackupStorageLocation
// Requests, whatever each kind's v1alpha1.Kind.GarbageCollected lists — and
// the restore-test sandboxes whose test no longer runs, and the plan
// Secrets (planstore.Collect) whose object is gone. An object is judged by
// its origin annotations; one without them is not nacflow's to judge. What
// it deletes is counted in nacflow_garbage_collected_total{kind}. A pass
// ends at the first API error, with what it deleted until then.
package orphangc

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/runtime/planstore"
)

// DefaultGarbageCollectionPeriod is --garbage-collection-period's default.
const DefaultGarbageCollectionPeriod = 24 * time.Hour

// gcDeleted counts the orphans the garbage collector deleted, by kind.
var gcDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "nacflow_garbage_collected_total",
	Help: "Objects in the OADP namespace deleted by nacflow's garbage collector because the NAC object they were made for no longer exists, by kind.",
}, []string{"kind"})

func init() { metrics.Registry.MustRegister(gcDeleted) }

// GarbageCollector deletes NAC-labelled objects of the OADP namespace whose
// origin NAC object no longer exists (OADP NAC's garbage collector): Velero
// Backups (objects only: the data stays), Restores, BackupStorageLocations,
// DeleteBackupRequests, copied Secrets and NonAdminBackupStorageLocation
// Requests. A finished Velero Backup that backup sync would bring back as a
// NAB (its origin namespace exists) is left alone: sync, not GC, owns it.
type GarbageCollector struct {
	// Client reads the cache and deletes.
	Client client.Client
	// APIReader lists the copied Secrets (no Secret cache).
	APIReader client.Reader
	// OADPNamespace is where Velero runs.
	OADPNamespace string
	// Off holds the NAC kinds (v1alpha1.Kind.Kind) whose objects are not
	// collected: their CRD is not installed (Capabilities), so nacflow made
	// nothing for them, and listing what they would make may be forbidden
	// (OADP's RBAC has no Velero Schedules) — a list the cache would wait
	// on forever.
	Off map[string]bool
	// SandboxAge is how old a restore test's sandbox must be before the
	// collector judges it (0: staleSandboxAge, 10 minutes).
	SandboxAge time.Duration
}

// gcKind describes one kind the collector looks at.
type gcKind struct {
	name   string
	list   client.ObjectList
	origin v1alpha1.Kind
	keys   v1alpha1.Origin
	// uncached is true for Secrets: the manager caches none.
	uncached bool
}

// kinds returns what the collector looks at, from the kind registry: for
// each NAC kind, the objects it makes in the OADP namespace that outlive it
// (v1alpha1.Kind.GarbageCollected), named by their kind (Backup, Secret,
// ...).
func (g *GarbageCollector) kinds() []gcKind {
	var out []gcKind
	for _, k := range v1alpha1.Kinds() {
		if g.Off[k.Kind] {
			continue
		}
		keys := k.New().OriginKeys()
		for _, list := range k.GarbageCollected() {
			_, secrets := list.(*corev1.SecretList)
			name := strings.TrimSuffix(reflect.TypeOf(list).Elem().Name(), "List")
			out = append(out, gcKind{name: name, list: list, origin: k, keys: keys, uncached: secrets})
		}
	}
	return out
}

// CollectOnce does one pass and returns how many objects of each kind it
// deleted. It lists only the OADP namespace (label-selected) and reads the
// origin NAC objects and Namespaces it needs.
func (g *GarbageCollector) CollectOnce(ctx context.Context) (map[string]int, error) {
	deleted := map[string]int{}
	logger := log.FromContext(ctx)
	for _, k := range g.kinds() {
		reader := client.Reader(g.Client)
		if k.uncached {
			reader = g.APIReader
		}
		// The pass only reads what it lists and deletes by name: no deep
		// copy of every cached Velero object (the API reader ignores this).
		if err := reader.List(ctx, k.list, client.InNamespace(g.OADPNamespace), client.HasLabels{k.keys.Label}, client.UnsafeDisableDeepCopy); err != nil {
			return deleted, fmt.Errorf("listing %s: %w", k.name, err)
		}
		objs, err := metaItems(k.list)
		if err != nil {
			return deleted, err
		}
		for _, obj := range objs {
			orphan, err := g.orphan(ctx, k, obj)
			if err != nil {
				return deleted, err
			}
			if !orphan {
				continue
			}
			if err := g.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return deleted, fmt.Errorf("deleting %s %s/%s: %w", k.name, obj.GetNamespace(), obj.GetName(), err)
			}
			deleted[k.name]++
			gcDeleted.WithLabelValues(k.name).Inc()
			logger.Info("garbage collected an orphan", "kind", k.name, "name", obj.GetName(),
				"originNamespace", obj.GetAnnotations()[k.keys.NamespaceAnnotation], "originName", obj.GetAnnotations()[k.keys.NameAnnotation])
		}
	}
	// Restore tests' sandboxes their test no longer runs for.
	if n, err := g.collectSandboxes(ctx); n > 0 || err != nil {
		if n > 0 {
			deleted["Namespace"] += n
			gcDeleted.WithLabelValues("Namespace").Add(float64(n))
		}
		if err != nil {
			return deleted, err
		}
	}
	// The plans nacflow keeps in Secrets under CRDs without status.plan.
	n, err := planstore.Collect(ctx, g.Client, g.APIReader, g.OADPNamespace)
	if n > 0 {
		deleted["PlanSecret"] += n
		gcDeleted.WithLabelValues("PlanSecret").Add(float64(n))
		logger.Info("garbage collected orphan plans", "kind", "PlanSecret", "count", n)
	}
	return deleted, err
}

// orphan reports whether obj's origin NAC object is gone (and, for a
// finished Velero Backup, whether backup sync could not bring it back).
func (g *GarbageCollector) orphan(ctx context.Context, k gcKind, obj client.Object) (bool, error) {
	ns, name := obj.GetAnnotations()[k.keys.NamespaceAnnotation], obj.GetAnnotations()[k.keys.NameAnnotation]
	if ns == "" || name == "" {
		return false, nil // not made by a NAC controller: not ours to judge
	}
	err := g.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, k.origin.New())
	if err == nil || !apierrors.IsNotFound(err) {
		return false, client.IgnoreNotFound(err)
	}
	if b, ok := obj.(*velerov1.Backup); ok && v1alpha1.BackupFinished(b.Status.Phase) {
		err := g.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if err == nil {
			return false, nil // backup sync's to recreate
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return true, nil
}

// metaItems returns the items of a typed list as client.Objects.
func metaItems(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("reading the items of %T: %w", list, err)
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		obj, ok := it.(client.Object)
		if !ok {
			return nil, fmt.Errorf("item %T of %T is not an object", it, list)
		}
		out = append(out, obj)
	}
	return out, nil
}

// staleSandboxAge is how old a restore test's sandbox must be before the
// collector may judge it: a test records that it runs in the same status
// write that follows the sandbox's creation.
const staleSandboxAge = 10 * time.Minute

// collectSandboxes deletes the restore-test sandboxes (Namespaces labelled
// v1alpha1.RestoreTestLabel, named v1alpha1.RestoreTestSandbox of their
// origin namespace) whose NonAdminBackup is gone or runs no plan, once older
// than staleSandboxAge: a test that timed out, or a crash between creating
// the sandbox and recording it. The test's Velero Restore (the same label)
// goes first; a sandbox whose Restore Velero still runs waits for the next
// pass, as Velero would create a deleted namespace again without its
// quota. It returns how many sandboxes it deleted.
func (g *GarbageCollector) collectSandboxes(ctx context.Context) (int, error) {
	list := &corev1.NamespaceList{}
	if err := g.APIReader.List(ctx, list, client.HasLabels{v1alpha1.RestoreTestLabel}); err != nil {
		return 0, fmt.Errorf("listing restore-test sandboxes: %w", err)
	}
	deleted := 0
	for i := range list.Items {
		ns := &list.Items[i]
		origin, name := ns.Annotations[v1alpha1.NabOriginNamespaceAnnotation], ns.Annotations[v1alpha1.NabOriginNameAnnotation]
		if origin == "" || ns.Name != v1alpha1.RestoreTestSandbox(origin) || !ns.DeletionTimestamp.IsZero() ||
			time.Since(ns.CreationTimestamp.Time) < cmp.Or(g.SandboxAge, staleSandboxAge) {
			continue // not a sandbox nacflow made, going already, or too young to judge
		}
		nab := &v1alpha1.NonAdminBackup{}
		err := g.APIReader.Get(ctx, client.ObjectKey{Namespace: origin, Name: name}, nab)
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, err
		}
		if err == nil && nab.Status.Plan != nil && (nab.Status.Plan.State == v1alpha1.PlanRunning || nab.Status.Plan.State == v1alpha1.PlanPending) {
			continue // its test may still run
		}
		restores := &velerov1.RestoreList{}
		if err := g.APIReader.List(ctx, restores, client.InNamespace(g.OADPNamespace),
			client.MatchingLabels{v1alpha1.RestoreTestLabel: ns.Labels[v1alpha1.RestoreTestLabel]}); err != nil {
			return deleted, fmt.Errorf("listing the Velero Restores of sandbox %s: %w", ns.Name, err)
		}
		running := false
		for j := range restores.Items {
			vr := &restores.Items[j]
			if vr.Annotations[v1alpha1.NabOriginNamespaceAnnotation] != origin {
				continue
			}
			switch vr.Status.Phase {
			case velerov1.RestorePhaseCompleted, velerov1.RestorePhasePartiallyFailed, velerov1.RestorePhaseFailed, velerov1.RestorePhaseFailedValidation:
				if err := g.Client.Delete(ctx, vr); client.IgnoreNotFound(err) != nil {
					return deleted, fmt.Errorf("deleting Velero Restore %s: %w", vr.Name, err)
				}
			default:
				running = true
			}
		}
		if running {
			continue
		}
		if err := g.Client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); client.IgnoreNotFound(err) != nil {
			return deleted, fmt.Errorf("deleting sandbox %s: %w", ns.Name, err)
		}
		deleted++
		log.FromContext(ctx).Info("garbage collected a restore-test sandbox", "namespace", ns.Name, "originNamespace", origin, "originName", name)
	}
	return deleted, nil
}
