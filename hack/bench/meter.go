package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Figures are what the controller did between two snapshots (a completion,
// a burst of them): time, CPU, NonAdminBackup reconciles and API writes,
// in total and per completion.
type Figures struct {
	// Completions are the Velero Backups the bench completed.
	Completions int
	// Seconds from the first snapshot to the second (the bench's Backup
	// patches, then waiting until the controller is quiet).
	Seconds float64
	// ControllerCPUSeconds are the controller's user+system CPU seconds.
	ControllerCPUSeconds float64
	// NABReconciles are controller_runtime_reconcile_total{controller="nonadminbackup"}'s rise.
	NABReconciles, ReconcilesPerCompletion float64
	// Writes are the controller's API writes without events (the bench's
	// Backup and DownloadRequest patches left out); EventWrites its events.
	Writes, EventWrites float64
	// WritesPerCompletion leaves events out; WritesPerCompletionInclEvents
	// counts them.
	WritesPerCompletion, WritesPerCompletionInclEvents float64
	// WritesByResource are the writes by "VERB resource[/subresource]",
	// events included, in total.
	WritesByResource map[string]float64
	// BenchDownloadPatches are the bench's own DownloadRequest patches
	// (playing Velero), left out of Writes.
	BenchDownloadPatches float64
	// NABsChanged are the NABs whose status, spec or metadata differ
	// between the two snapshots; FieldsChanged how many of them changed
	// each field ("status.<field>", "metadata.labels", ...): what the
	// status writes were for.
	NABsChanged   int
	FieldsChanged map[string]int
	// PlansEnded are the completed NABs whose plan ended (with
	// -burst-wait-verify).
	PlansEnded int `json:",omitempty"`
}

// meter takes the snapshots the figures come from.
type meter struct {
	ctx        context.Context
	c          client.Client
	cs         *kubernetes.Clientset
	nacMetrics func() (map[string]float64, error)
	downloads  *downloadService
	pid        func() int
	window     time.Duration
}

// snapshot is the API server's write counts, the controller's CPU, NAB
// reconciles and the bench's DownloadRequest patches at one time.
type snapshot struct {
	at           time.Time
	writes       map[string]float64
	cpu          float64
	reconciles   float64
	benchPatches float64
	nabs         nabFields
}

func (m *meter) take() (snapshot, error) {
	s := snapshot{at: time.Now(), benchPatches: m.downloads.Patches()}
	var err error
	if s.writes, err = scrape(m.ctx, m.cs); err != nil {
		return s, err
	}
	s.cpu, _ = procCPU(m.pid())
	nm, err := m.nacMetrics()
	if err != nil {
		return s, err
	}
	s.reconciles = nabReconciles(nm)
	if m.c != nil {
		if s.nabs, err = readNABs(m.ctx, m.c); err != nil {
			return s, err
		}
	}
	return s, nil
}

// nabReconciles sums controller_runtime_reconcile_total of the
// nonadminbackup controller over its results.
func nabReconciles(nm map[string]float64) float64 {
	n := 0.0
	for k, v := range nm {
		if strings.HasPrefix(k, `controller_runtime_reconcile_total{controller="nonadminbackup"`) {
			n += v
		}
	}
	return n
}

// quiet waits the queue refresh window, then until no write reaches the
// API server for 3 s (settle) and the controller's event queue is empty.
func (m *meter) quiet() error {
	select {
	case <-m.ctx.Done():
		return m.ctx.Err()
	case <-time.After(m.window):
	}
	if err := settle(m.ctx, m.cs, 3*time.Second); err != nil {
		return err
	}
	_, err := eventsDrained(m.ctx, m.nacMetrics)
	return err
}

// eventsDrained waits until nacflow_events_queued is 0, scraping once a
// second, and returns the last scrape.
func eventsDrained(ctx context.Context, nacMetrics func() (map[string]float64, error)) (map[string]float64, error) {
	for {
		nm, err := nacMetrics()
		if err != nil {
			return nil, err
		}
		if nm["nacflow_events_queued"] == 0 {
			return nm, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("events still queued: %v", nm["nacflow_events_queued"])
		case <-time.After(time.Second):
		}
	}
}

// figures returns what the controller did from a to b for completions
// completed Backups. The bench's writes are left out: its Backup patches
// (all of " backups", as before) and its DownloadRequest patches; and the
// API server's own lease renewals.
func (m *meter) figures(a, b snapshot, completions int) *Figures {
	f := &Figures{Completions: completions, Seconds: b.at.Sub(a.at).Seconds(), ControllerCPUSeconds: b.cpu - a.cpu,
		NABReconciles: b.reconciles - a.reconciles, BenchDownloadPatches: b.benchPatches - a.benchPatches}
	f.WritesByResource = controllerWriteDelta(a.writes, b.writes, f.BenchDownloadPatches)
	if a.nabs != nil && b.nabs != nil {
		f.NABsChanged, f.FieldsChanged = changedFields(a.nabs, b.nabs)
	}
	for k, v := range f.WritesByResource {
		if strings.HasSuffix(k, " events") {
			f.EventWrites += v
		} else {
			f.Writes += v
		}
	}
	if completions > 0 {
		n := float64(completions)
		f.ReconcilesPerCompletion = f.NABReconciles / n
		f.WritesPerCompletion = f.Writes / n
		f.WritesPerCompletionInclEvents = (f.Writes + f.EventWrites) / n
	}
	return f
}

// controllerWriteDelta returns the writes from a to b by "VERB resource",
// events included, without the bench's Velero Backup patches (every
// " backups" entry), benchPatches of "PATCH downloadrequests" and the API
// server's lease renewals; zero entries are dropped.
func controllerWriteDelta(a, b map[string]float64, benchPatches float64) map[string]float64 {
	d := diff(a, b)
	d["PATCH downloadrequests"] -= benchPatches
	out := map[string]float64{}
	for k, v := range d {
		if v == 0 || strings.HasSuffix(k, " backups") || strings.HasSuffix(k, " leases") {
			continue
		}
		out[k] = v
	}
	return out
}

// tenantBackups returns the Velero Backups of the tenants' NABs (not the
// probe's), by name, listing them 500 a page.
func tenantBackups(ctx context.Context, c client.Client) ([]velerov1.Backup, error) {
	var out []velerov1.Backup
	cont := ""
	for {
		list := &velerov1.BackupList{}
		if err := c.List(ctx, list, client.InNamespace(oadpNS), client.Limit(500), client.Continue(cont)); err != nil {
			return nil, err
		}
		for _, b := range list.Items {
			if strings.HasPrefix(b.Annotations[v1alpha1.NabOriginNamespaceAnnotation], "tenant-") {
				out = append(out, b)
			}
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// patchPhase sets the status.phase of bs as Velero would (a merge patch:
// Velero's CRDs have no status subresource), 20 at once.
func patchPhase(ctx context.Context, c client.Client, bs []velerov1.Backup, phase velerov1.BackupPhase) error {
	return patchAll(ctx, c, bs, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"status":{"phase":%q}}`, phase)))
}

// patchAll applies patch to every Backup of bs, 20 at a time; it returns
// the first error.
func patchAll(ctx context.Context, c client.Client, bs []velerov1.Backup, patch client.Patch) error {
	return parallel(ctx, len(bs), 20, func(i int) error {
		b := &velerov1.Backup{}
		b.Namespace, b.Name = bs[i].Namespace, bs[i].Name
		return c.Patch(ctx, b, patch)
	})
}

// nabKeys returns the namespace/name of the NAB of each Backup.
func nabKeys(bs []velerov1.Backup) []string {
	keys := make([]string, len(bs))
	for i, b := range bs {
		keys[i] = b.Annotations[v1alpha1.NabOriginNamespaceAnnotation] + "/" + b.Annotations[v1alpha1.NabOriginNameAnnotation]
	}
	return keys
}
