package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nacflow/nacflow/api/v1alpha1"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// metricValue sums the samples of the metric family name (a counter, or a
// histogram's sample count) whose labels include want.
func metricValue(c *C, name string, want map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	c.Assert(err, IsNil)
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			if h := m.GetHistogram(); h != nil {
				total += float64(h.GetSampleCount())
			} else {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// A backup's start and end, and its phases, show in the operation and phase
// metrics; the state collector reports running operations and Velero's
// queue depth from the cache.
func (s *ControllerSuite) TestMetrics(c *C) {
	started := map[string]string{"kind": "NonAdminBackup", "action": "backup"}
	finished := map[string]string{"kind": "NonAdminBackup", "action": "backup", "result": "complete"}
	create := map[string]string{"kind": "NonAdminBackup", "func": "CreateVeleroBackup", "result": "complete"}
	s0, f0, p0 := metricValue(c, "nacflow_operations_started_total", started),
		metricValue(c, "nacflow_operations_finished_total", finished), metricValue(c, "nacflow_phase_duration_seconds", create)

	ns := createNamespace(c, "metrics")
	nab := newNAB(ns, "counted", velerov1.BackupSpec{})
	c.Assert(testClient.Create(context.Background(), nab), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", "no Velero Backup yet"
	})
	c.Check(metricValue(c, "nacflow_operations_started_total", started)-s0, Equals, 1.0)
	c.Check(metricValue(c, "nacflow_phase_duration_seconds", create)-p0, Equals, 1.0)

	// While it runs: counted as active, its Backup in Velero's queue.
	queue := veleroqueue.NewBackupQueue()
	b := &velerov1.Backup{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKey{Namespace: s.oadp, Name: got.Status.VeleroBackup.Name}, b), IsNil)
	queue.Observe(b)
	collector := &nacmetrics.StateCollector{Reader: testClient, Queue: queue}
	expected := fmt.Sprintf("# HELP nacflow_velero_backup_queue_depth Unfinished Velero Backups in the OADP namespace: Velero's queue, tenants' and the admin's.\n"+
		"# TYPE nacflow_velero_backup_queue_depth gauge\nnacflow_velero_backup_queue_depth %d\n", 1)
	c.Check(testutil.CollectAndCompare(collector, strings.NewReader(expected), "nacflow_velero_backup_queue_depth"), IsNil)
	c.Check(testutil.CollectAndCount(collector, "nacflow_active_operations"), Equals, 5) // one sample per kind
	active := activeOperations(c, collector, "NonAdminBackup")
	c.Check(active >= 1, Equals, true, Commentf("%v active", active))

	// As the controller runs it: the informers' stores read in place (no
	// Reader to fall back on).
	informers, err := cache.New(testCfg, cache.Options{Scheme: testScheme})
	c.Assert(err, IsNil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = informers.Start(ctx) }()
	inPlace := &nacmetrics.StateCollector{Informers: informers, Queue: queue}
	c.Check(testutil.CollectAndCount(inPlace, "nacflow_active_operations"), Equals, 5)
	active = activeOperations(c, inPlace, "NonAdminBackup")
	c.Check(active >= 1, Equals, true, Commentf("%v active, read in place", active))

	completeBackup(c, s.oadp, got.Status.VeleroBackup.Name, velerov1.BackupPhaseCompleted)
	eventually(c, 10*time.Second, func() (bool, string) {
		return metricValue(c, "nacflow_operations_finished_total", finished)-f0 == 1, "not finished yet"
	})
}

// activeOperations is the nacflow_active_operations sample of kind.
func activeOperations(c *C, collector *nacmetrics.StateCollector, kind string) float64 {
	return gaugeSample(c, collector, "nacflow_active_operations", "kind", kind)
}

// gaugeSample is the value of collector's gauge name whose label is value.
func gaugeSample(c *C, collector *nacmetrics.StateCollector, name, label, value string) float64 {
	reg := prometheus.NewPedanticRegistry()
	c.Assert(reg.Register(collector), IsNil)
	families, err := reg.Gather()
	c.Assert(err, IsNil)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	c.Fatalf("no %s sample for %s=%s", name, label, value)
	return 0
}
