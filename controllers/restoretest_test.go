package controllers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
)

// RestoreTestSuite runs restore tests (TestRestore) against the real API
// server with Velero played (playVelero, veleroDownloads).
type RestoreTestSuite struct{}

var _ = Suite(&RestoreTestSuite{})

// restoreTestBlueprint creates in oadp a per-tenant Blueprint for the
// Namespaces labelled restore-tests=<selector>: the built-in backup action
// with its TestRestore phase's args.every set to every.
func restoreTestBlueprint(c *C, oadp, selector string, every int) {
	builtin, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	backup := builtin.Spec.Actions["backup"]
	for i := range backup.Phases {
		if backup.Phases[i].Func == "TestRestore" {
			backup.Phases[i].Args["every"] = apiextensionsv1.JSON{Raw: fmt.Appendf(nil, "%d", every)}
		}
	}
	bp := &v1alpha1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "restore-tests"},
		Spec: v1alpha1.BlueprintSpec{Kind: "NonAdminBackup",
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"restore-tests": selector}},
			Actions:           map[string]v1alpha1.BlueprintAction{"backup": backup}}}
	c.Assert(testClient.Create(context.Background(), bp), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		got := &v1alpha1.Blueprint{}
		c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(bp), got), IsNil)
		return meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionValid), fmt.Sprintf("%+v", got.Status)
	})
}

// TestRestoreTestsSurviveCrashes: with restore tests on, the controller is
// killed at random and right after creates in the OADP namespace (the
// Velero Backup, DownloadRequests, the test's Velero Restore) before their
// status writes; every backup is still tested once — one Velero Restore
// created per test, adopted after a crash — recorded Succeeded with
// RestoreTested=True, its every-2nd neighbour not tested, and no sandbox or
// Restore left behind.
func (s *RestoreTestSuite) TestRestoreTestsSurviveCrashes(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	c.Logf("seed %d", seed)
	var rngMu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 7))
	random := func() float64 { rngMu.Lock(); defer rngMu.Unlock(); return rng.Float64() }

	oadp := createNamespace(c, "rt-oadp")
	run := strings.TrimPrefix(oadp, "rt-oadp-")
	sel := labels.SelectorFromSet(labels.Set{chaosRunLabel: run})

	// Every test Velero Restore the API server creates, seen by a watch (a
	// create whose answer a kill cut off counts too).
	var restoreCreates sync.Map // NACUUID → *atomic.Int64
	w, err := testClient.Watch(ctx, &velerov1.RestoreList{}, client.InNamespace(oadp), client.HasLabels{v1alpha1.RestoreTestLabel})
	c.Assert(err, IsNil)
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			if r, ok := ev.Object.(*velerov1.Restore); ok && ev.Type == watch.Added {
				n, _ := restoreCreates.LoadOrStore(r.Labels[v1alpha1.RestoreTestLabel], &atomic.Int64{})
				n.(*atomic.Int64).Add(1)
			}
		}
	}()
	// The blueprint first, validated by a controller that stays up.
	stop := startController(c, controllerOptions{oadp: oadp, selector: sel, restart: true})
	restoreTestBlueprint(c, oadp, run, 2)
	stop()
	ch := startChaos(c, controllerOptions{oadp: oadp, selector: sel, restart: true}, 0.3, 900*time.Millisecond, 100, random)
	defer ch.stop()

	veleroCtx, stopVelero := context.WithCancel(ctx)
	defer stopVelero()
	go playVelero(veleroCtx, oadp)

	const tenants, backups = 3, 4
	var nabs []*v1alpha1.NonAdminBackup
	for range tenants {
		ns := createNamespace(c, "rt-tenant")
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"restore-tests":%q}}}`, run))
		c.Assert(testClient.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch("application/merge-patch+json", patch)), IsNil)
		for i := range backups {
			nab := newNAB(ns, fmt.Sprintf("b%d", i), velerov1.BackupSpec{})
			nab.Labels = map[string]string{chaosRunLabel: run}
			c.Assert(testClient.Create(ctx, nab), IsNil)
			nabs = append(nabs, nab)
			// In order: every second completed backup of a namespace is tested.
			eventually(c, 60*time.Second, func() (bool, string) {
				got := &v1alpha1.NonAdminBackup{}
				if err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), got); err != nil {
					return false, err.Error()
				}
				vb := got.Status.VeleroBackup
				return vb != nil && vb.Status != nil && vb.Status.Phase == velerov1.BackupPhaseCompleted, "backup " + nab.Name + " not completed"
			})
		}
	}

	// The chaos goes on a little, then a controller that stays up.
	time.Sleep(3 * time.Second)
	_, crashes := ch.stop()
	stop = startController(c, controllerOptions{oadp: oadp, selector: sel, restart: true})
	defer stop()
	c.Check(crashes > 0, Equals, true, Commentf("the controller died between a create and its status write"))

	tested := 0
	eventually(c, 90*time.Second, func() (bool, string) {
		tested = 0
		for _, nab := range nabs {
			got := &v1alpha1.NonAdminBackup{}
			if err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), got); err != nil {
				return false, err.Error()
			}
			if p := got.Status.Plan; p == nil || p.State != v1alpha1.PlanComplete {
				return false, fmt.Sprintf("%s/%s plan %+v", got.Namespace, got.Name, p)
			}
			rt := got.Status.RestoreTest
			wantTest := nab.Name == "b1" || nab.Name == "b3"
			if !wantTest {
				if rt != nil {
					return false, fmt.Sprintf("%s/%s is not due for a test: %+v", got.Namespace, got.Name, rt)
				}
				continue
			}
			if rt == nil || rt.Result != v1alpha1.RestoreTestSucceeded {
				return false, fmt.Sprintf("%s/%s restore test %+v", got.Namespace, got.Name, rt)
			}
			if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionRestoreTested) {
				return false, fmt.Sprintf("%s/%s RestoreTested: %+v", got.Namespace, got.Name, got.Status.Conditions)
			}
			if rt.ItemsExpected != 1 || rt.ItemsRestored != 1 {
				return false, fmt.Sprintf("%s/%s counts %+v", got.Namespace, got.Name, rt)
			}
			n, _ := restoreCreates.Load(v1alpha1.NACUUIDOf(got.UID))
			if n == nil || n.(*atomic.Int64).Load() != 1 {
				return false, fmt.Sprintf("%s/%s: its Velero Restore was created %v times", got.Namespace, got.Name, n)
			}
			tested++
		}
		return true, ""
	})
	c.Check(tested, Equals, tenants*backups/2)
	stopVelero()

	// The gauges, read from the NonAdminBackups: each tenant's newest test
	// succeeded, with its RTO and time.
	collector := &nacmetrics.StateCollector{Reader: testClient}
	for _, nab := range nabs[:1] {
		c.Check(gaugeSample(c, collector, "nacflow_restore_test_failing", "namespace", nab.Namespace), Equals, 0.0)
		c.Check(gaugeSample(c, collector, "nacflow_restore_test_rto_seconds", "namespace", nab.Namespace) >= 0, Equals, true)
		last := gaugeSample(c, collector, "nacflow_restore_test_last_success_timestamp_seconds", "namespace", nab.Namespace)
		c.Check(time.Since(time.Unix(int64(last), 0)) < 5*time.Minute, Equals, true, Commentf("%v", last))
	}

	// Nothing left: no sandbox (deleted or going) and no test Restore.
	eventually(c, 30*time.Second, func() (bool, string) {
		list := &corev1.NamespaceList{}
		c.Assert(testClient.List(ctx, list, client.HasLabels{v1alpha1.RestoreTestLabel}), IsNil)
		for _, ns := range list.Items {
			if ns.Annotations[v1alpha1.NabOriginNamespaceAnnotation] != "" && strings.HasPrefix(ns.Name, "rt-tenant-") && ns.DeletionTimestamp.IsZero() {
				return false, "sandbox left: " + ns.Name
			}
		}
		restores := &velerov1.RestoreList{}
		c.Assert(testClient.List(ctx, restores, client.InNamespace(oadp), client.HasLabels{v1alpha1.RestoreTestLabel}), IsNil)
		return len(restores.Items) == 0, fmt.Sprintf("%d test Restores left", len(restores.Items))
	})
}
