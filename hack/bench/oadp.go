package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// OADPRun is OADP NAC's part of a scale run (-oadp): its manager on a
// control plane of its own, the same NAB spec, the same NABs per
// namespace, Velero played the same way (every Backup patched as
// completedPatch says, once all had appeared).
type OADPRun struct {
	NABs, Namespaces int
	// Completed are its NABs whose status.veleroBackup.status.phase is
	// Completed (OADP NAC's status.phase stays Created).
	Completed int
	// Seconds from the first NAB's creation until every NAB was Completed
	// and the API server had had no write for 3 s; WaveSeconds until every
	// Velero Backup had appeared.
	Seconds, WaveSeconds float64
	// ControllerPeakRSSMiB is the manager's VmHWM.
	ControllerPeakRSSMiB float64
	Etcd                 *EtcdGrowth
}

// oadpDiffers says what differs between the two runs' figures.
const oadpDiffers = "OADP NAC: fewer NABs (-oadp-n), its own CRDs and a DPA (spec.nonAdmin.enable), no verification " +
	"(no DownloadRequests), no plan store, no scraper; nacflow: the plan, verification and queue fields in status, events"

// oadpNAB is the number of OADP NAC's NABs: -oadp-n, or min(n, 2000).
func (cfg config) oadpNAB() int {
	if cfg.oadpN > 0 {
		return cfg.oadpN
	}
	return min(cfg.n, 2000)
}

var (
	nabGVK = schema.GroupVersionKind{Group: "oadp.openshift.io", Version: "v1alpha1", Kind: "NonAdminBackup"}
	dpaGVK = schema.GroupVersionKind{Group: "oadp.openshift.io", Version: "v1alpha1", Kind: "DataProtectionApplication"}
)

// runOADP runs OADP NAC's manager (cfg.oadp) on a control plane of its own
// with its CRDs (cfg.oadpCRDs) and OADP's DataProtectionApplication CRD
// (test/crds), a DPA enabling the non-admin feature, K NABs over as many
// namespaces as keep nacflow's NABs per namespace, and measures etcd's
// growth until every NAB is Completed. The plane is stopped on return.
func runOADP(ctx context.Context, cfg config) (*OADPRun, error) {
	k := cfg.oadpNAB()
	o := &OADPRun{NABs: k, Namespaces: max(1, int(math.Round(float64(k)*float64(cfg.m)/float64(cfg.n))))}
	p, err := startPlane(cfg.assets, []string{cfg.oadpCRDs, "test/crds"})
	if err != nil {
		return nil, err
	}
	defer p.stop()
	nss, err := p.createNamespaces(ctx, o.Namespaces)
	if err != nil {
		return nil, err
	}
	if err := createDPA(ctx, p.c); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	mgr, err := startOADP(ctx, cfg.oadp, p, stop)
	if err != nil {
		return nil, err
	}
	defer mgr.stop()
	debugf("OADP NAC ready")
	if err := measureOADP(ctx, p, o, nss, mgr); err != nil {
		return nil, errors.Join(err, context.Cause(ctx))
	}
	return o, nil
}

// measureOADP creates o.NABs NABs over the tenants of nss, completes
// their Velero Backups, waits until all are Completed and measures etcd.
func measureOADP(ctx context.Context, p *plane, o *OADPRun, nss []string, mgr *nacProc) error {
	etcd0, err := readEtcd(ctx, p.etcdURL(), oadpNS)
	if err != nil {
		return err
	}
	start := time.Now()
	name := func(i int) (string, string) { return nss[1+i%o.Namespaces], fmt.Sprintf("nab-%06d", i) }
	wt, err := wave(ctx, p.c, o.NABs, 10, func(i int) string { ns, n := name(i); return ns + "/" + n }, func(i int) error {
		ns, n := name(i)
		return p.c.Create(ctx, scaleNAB(ns, n))
	})
	if err != nil {
		return err
	}
	o.WaveSeconds = wt.last.Sub(wt.start).Seconds()
	debugf("OADP NAC: all Velero Backups seen")
	backups, err := tenantBackups(ctx, p.c)
	if err != nil {
		return err
	}
	if err := patchAll(ctx, p.c, backups, completedPatch()); err != nil {
		return err
	}
	if err := waitOADPCompleted(ctx, p.c, o); err != nil {
		return err
	}
	if err := settle(ctx, p.cs, 3*time.Second); err != nil {
		return err
	}
	o.Seconds = time.Since(start).Seconds()
	debugf("OADP NAC: %d Completed in %.1f s", o.Completed, o.Seconds)
	etcd1, err := readEtcd(ctx, p.etcdURL(), oadpNS)
	if err != nil {
		return err
	}
	o.Etcd = etcdGrowth(etcd0, etcd1, o.NABs)
	o.ControllerPeakRSSMiB = procPeakRSS(mgr.pid())
	return nil
}

// scaleNAB is a NAB of namespace ns named name with the scale run's spec
// (scaleSpec) as its only field, the same object for nacflow and OADP NAC
// (both serve oadp.openshift.io/v1alpha1 NonAdminBackups), sent as
// kubectl sends it: unstructured, so that no zero-valued field of Velero's
// Go types (ttl "0s", hooks {}, …) is written that a user's YAML would not
// have. OADP NAC's API is not a dependency of the bench.
func scaleNAB(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(nabGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	var spec map[string]any
	_ = yaml.Unmarshal([]byte(scaleSpec), &spec)
	u.Object["spec"] = spec
	return u
}

// createDPA creates the DataProtectionApplication OADP NAC reads: the
// non-admin feature on.
func createDPA(ctx context.Context, c client.Client) error {
	dpa := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
metadata: {name: dpa, namespace: `+oadpNS+`}
spec:
  nonAdmin: {enable: true}
  configuration: {velero: {defaultPlugins: [aws]}}
`), &dpa.Object); err != nil {
		return err
	}
	dpa.SetGroupVersionKind(dpaGVK)
	if err := c.Create(ctx, dpa); err != nil {
		return fmt.Errorf("creating the DataProtectionApplication: %w", err)
	}
	return nil
}

// startOADP starts OADP NAC's manager bin on plane p, watching the OADP
// namespace (WATCH_NAMESPACE), and waits until its /readyz answers. Its
// exiting on its own calls stop.
func startOADP(ctx context.Context, bin string, p *plane, stop context.CancelCauseFunc) (*nacProc, error) {
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "WATCH_NAMESPACE="+oadpNS, "KUBECONFIG="+p.kcPath)
	mgr, err := startNac(bin, []string{"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probeAddr},
		env, filepath.Join(p.dir, "oadp-nac.log"), stop)
	if err != nil {
		return nil, err
	}
	if _, err := mgr.waitReady(ctx, probeAddr); err != nil {
		mgr.stop()
		return nil, err
	}
	return mgr, nil
}

// waitOADPCompleted waits until every NAB's status.veleroBackup.status.phase
// is Completed, listing them every 2 s, and records how many are.
func waitOADPCompleted(ctx context.Context, c client.Client, o *OADPRun) error {
	for {
		n, err := countOADPCompleted(ctx, c)
		if err != nil {
			return err
		}
		o.Completed = n
		if n >= o.NABs {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("OADP NAC: %d of %d NABs Completed: %w", n, o.NABs, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// countOADPCompleted counts the NABs whose Velero Backup's phase, as
// their status mirrors it, is Completed, listing them 500 a page.
func countOADPCompleted(ctx context.Context, c client.Client) (int, error) {
	n, cont := 0, ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(nabGVK.GroupVersion().WithKind("NonAdminBackupList"))
		if err := c.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return 0, err
		}
		for _, u := range list.Items {
			if p, _, _ := unstructured.NestedString(u.Object, "status", "veleroBackup", "status", "phase"); p == string(velerov1.BackupPhaseCompleted) {
				n++
			}
		}
		if cont = list.GetContinue(); cont == "" {
			return n, nil
		}
	}
}
