package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
)

func Test(t *testing.T) { TestingT(t) }

type TenantSuite struct{}

var _ = Suite(&TenantSuite{})

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func at(min int) *metav1.Time {
	t := metav1.NewTime(t0.Add(time.Duration(min) * time.Minute))
	return &t
}

// nab is a NonAdminBackup of ns whose plan (action) ended in state at
// minute end, its Velero Backup in phase.
func nab(ns, name, action string, state v1alpha1.PlanState, end int, phase velerov1.BackupPhase) *v1alpha1.NonAdminBackup {
	n := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	n.Status.Plan = &v1alpha1.PlanStatus{Action: action, State: state, CompletionTime: at(end)}
	if phase != "" {
		n.Status.VeleroBackup = &v1alpha1.VeleroBackup{Name: name, Status: &velerov1.BackupStatus{Phase: phase}}
	}
	return n
}

// samples returns the collector's samples of family name, by their labels
// joined as "k=v,k=v".
func samples(c *C, col prometheus.Collector, name string) map[string]float64 {
	reg := prometheus.NewPedanticRegistry()
	c.Assert(reg.Register(col), IsNil)
	families, err := reg.Gather()
	c.Assert(err, IsNil)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(ls, ",")] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestTenantGauges: failures in a row since the newest success per
// namespace and kind (PartiallyFailed and a failed plan count; deletions
// do not), the newest success's time, locations by state with every state
// reported, and the operations waiting for their turn with the longest
// wait.
func (s *TenantSuite) TestTenantGauges(c *C) {
	scheme := runtime.NewScheme()
	c.Assert(v1alpha1.AddToScheme(scheme), IsNil)
	waiting := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "waiting"}}
	waiting.Status.Plan = &v1alpha1.PlanStatus{Action: "backup", State: v1alpha1.PlanRunning, Phases: []v1alpha1.PhaseStatus{
		{Name: "validate", Func: "ValidateBackupSpec", State: v1alpha1.PhaseComplete},
		{Name: "waitForTurn", Func: "WaitForTurn", State: v1alpha1.PhaseWaiting, StartTime: at(50)},
	}}
	waiting2 := waiting.DeepCopy()
	waiting2.Name, waiting2.Status.Plan.Phases[1].StartTime = "waiting2", at(55)
	failedNAR := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "r"}}
	failedNAR.Status.Plan = &v1alpha1.PlanStatus{Action: "restore", State: v1alpha1.PlanFailed, CompletionTime: at(9)}
	loc := func(name string, phase v1alpha1.NonAdminPhase, bsl velerov1.BackupStorageLocationPhase) client.Object {
		l := &v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
		l.Status.Phase = phase
		if bsl != "" {
			l.Status.VeleroBackupStorageLocation = &v1alpha1.VeleroBackupStorageLocation{Status: &velerov1.BackupStorageLocationStatus{Phase: bsl}}
		}
		return l
	}
	objs := []client.Object{
		nab("a", "ok", "backup", v1alpha1.PlanComplete, 1, velerov1.BackupPhaseCompleted),
		nab("a", "partial", "backup", v1alpha1.PlanComplete, 2, velerov1.BackupPhasePartiallyFailed),
		nab("a", "failed", "backup", v1alpha1.PlanFailed, 3, ""),
		nab("a", "old-failure", "backup", v1alpha1.PlanFailed, 0, velerov1.BackupPhaseFailed),
		nab("a", "deleted", "delete", v1alpha1.PlanFailed, 4, velerov1.BackupPhaseCompleted),
		nab("b", "failed", "backup", v1alpha1.PlanComplete, 1, velerov1.BackupPhaseFailed),
		nab("b", "adopted-ok", "adopt", v1alpha1.PlanComplete, 2, velerov1.BackupPhaseCompleted),
		waiting, waiting2, failedNAR,
		loc("up", v1alpha1.NonAdminPhaseCreated, velerov1.BackupStorageLocationPhaseAvailable),
		loc("down", v1alpha1.NonAdminPhaseCreated, velerov1.BackupStorageLocationPhaseUnavailable),
		loc("off", v1alpha1.NonAdminPhaseBackingOff, velerov1.BackupStorageLocationPhaseAvailable),
		loc("new", v1alpha1.NonAdminPhaseNew, ""),
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	col := &nacmetrics.StateCollector{Reader: cl, Now: func() time.Time { return t0.Add(60 * time.Minute) }}

	c.Check(samples(c, col, "nacflow_tenant_failed_in_a_row"), DeepEquals, map[string]float64{
		"kind=NonAdminBackup,namespace=a": 2, "kind=NonAdminBackup,namespace=b": 0, "kind=NonAdminRestore,namespace=a": 1})
	c.Check(samples(c, col, "nacflow_tenant_last_success_timestamp_seconds"), DeepEquals, map[string]float64{
		"kind=NonAdminBackup,namespace=a": float64(at(1).Unix()), "kind=NonAdminBackup,namespace=b": float64(at(2).Unix())})
	c.Check(samples(c, col, "nacflow_tenant_locations"), DeepEquals, map[string]float64{
		"namespace=a,state=available": 1, "namespace=a,state=unavailable": 1, "namespace=a,state=withdrawn": 1, "namespace=a,state=pending": 1})
	c.Check(samples(c, col, "nacflow_velero_queue_waiting"), DeepEquals, map[string]float64{"kind=NonAdminBackup,namespace=b": 2})
	c.Check(samples(c, col, "nacflow_velero_queue_oldest_wait_seconds"), DeepEquals, map[string]float64{"kind=NonAdminBackup,namespace=b": 600})
}
