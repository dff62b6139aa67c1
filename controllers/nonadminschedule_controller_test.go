package controllers_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
	"github.com/nacflow/nacflow/phases"
)

func newNAS(ns, name, schedule string, spec velerov1.BackupSpec) *v1alpha1.NonAdminSchedule {
	return &v1alpha1.NonAdminSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.NonAdminScheduleSpec{Schedule: schedule, Template: v1alpha1.NonAdminScheduleTemplate{BackupSpec: &v1alpha1.ScheduleBackupSpec{BackupSpec: spec}}},
	}
}

func getNAS(c *C, nas *v1alpha1.NonAdminSchedule) *v1alpha1.NonAdminSchedule {
	got := &v1alpha1.NonAdminSchedule{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(nas), got), IsNil)
	return got
}

// veleroScheduleOf waits for the Velero Schedule of nas, plays Velero's
// validation (phase Enabled) and returns it.
func veleroScheduleOf(c *C, oadp string, nas *v1alpha1.NonAdminSchedule) *velerov1.Schedule {
	ctx := context.Background()
	s := &velerov1.Schedule{}
	eventually(c, 10*time.Second, func() (bool, string) {
		list := &velerov1.ScheduleList{}
		c.Assert(testClient.List(ctx, list, client.InNamespace(oadp), client.MatchingLabels{
			v1alpha1.NasOriginNACUUIDLabel: v1alpha1.NACUUIDOf(getNAS(c, nas).UID)}), IsNil)
		if len(list.Items) != 1 {
			return false, fmt.Sprintf("%d Velero Schedules", len(list.Items))
		}
		*s = list.Items[0]
		return true, ""
	})
	before := s.DeepCopy()
	s.Status.Phase = velerov1.SchedulePhaseEnabled
	c.Assert(testClient.Patch(ctx, s, client.MergeFrom(before)), IsNil)
	return s
}

// veleroRun plays a run of Velero Schedule s at when: a Backup named and
// labelled as Velero names and labels it (FromSchedule), in phase.
func veleroRun(c *C, s *velerov1.Schedule, when time.Time, phase velerov1.BackupPhase) *velerov1.Backup {
	ctx := context.Background()
	labels := map[string]string{velerov1.ScheduleNameLabel: s.Name}
	for k, v := range s.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range s.Annotations {
		annotations[k] = v
	}
	b := &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.TimestampedName(when), Labels: labels, Annotations: annotations},
		Spec:       s.Spec.Template,
	}
	c.Assert(testClient.Create(ctx, b), IsNil)
	before := b.DeepCopy()
	b.Status.Phase = phase
	b.Status.StartTimestamp = &metav1.Time{Time: when}
	if phase == velerov1.BackupPhaseCompleted || phase == velerov1.BackupPhaseFailed {
		b.Status.CompletionTimestamp = &metav1.Time{Time: when.Add(time.Second)}
		b.Status.Expiration = &metav1.Time{Time: when.Add(720 * time.Hour)}
	}
	c.Assert(testClient.Patch(ctx, b, client.MergeFrom(before)), IsNil)
	cur := &velerov1.Schedule{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(s), cur), IsNil)
	sb := cur.DeepCopy()
	cur.Status.LastBackup = &metav1.Time{Time: when}
	c.Assert(testClient.Patch(ctx, cur, client.MergeFrom(sb)), IsNil)
	return b
}

// TestScheduleLifecycle: a NonAdminSchedule makes a Velero Schedule named,
// labelled and scoped like every NAC object; each run Velero takes becomes
// an adopted NonAdminBackup of the namespace, listed newest first in
// status; paused and skipImmediately reach Velero; deleting the schedule
// removes the Velero Schedule and keeps the backups.
func (s *ControllerSuite) TestScheduleLifecycle(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "sched")
	nas := newNAS(ns, "nightly", "0 2 * * *", velerov1.BackupSpec{IncludedResources: []string{"configmaps"}, TTL: metav1.Duration{Duration: 48 * time.Hour}})
	c.Assert(testClient.Create(ctx, nas), IsNil)
	vs := veleroScheduleOf(c, s.oadp, nas)
	uuid := v1alpha1.NACUUIDOf(getNAS(c, nas).UID)
	c.Check(vs.Name, Equals, v1alpha1.NACObjectName(ns, "nightly", uuid))
	c.Check(vs.Labels[v1alpha1.OADPLabel], Equals, v1alpha1.OADPLabelValue)
	c.Check(vs.Annotations, DeepEquals, map[string]string{v1alpha1.NasOriginNamespaceAnnotation: ns, v1alpha1.NasOriginNameAnnotation: "nightly",
		v1alpha1.NasOriginStorageLocationAnnotation: ""})
	c.Check(vs.Spec.Schedule, Equals, "0 2 * * *")
	c.Check(vs.Spec.Template.IncludedNamespaces, DeepEquals, []string{ns})
	c.Check(vs.Spec.Template.IncludedResources, DeepEquals, []string{"configmaps"})
	c.Check(vs.Spec.Template.TTL.Duration, Equals, 48*time.Hour)
	c.Check(strings.Join(vs.Spec.Template.ExcludedResources, ","), Matches, `.*nonadminbackups.oadp.openshift.io.*`)
	c.Assert(vs.Spec.UseOwnerReferencesInBackup, NotNil)
	c.Check(*vs.Spec.UseOwnerReferencesInBackup, Equals, false)
	c.Check(vs.Spec.Template.Metadata.Labels, HasLen, 0)

	got := planComplete(c, nas)
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	accepted := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(accepted, NotNil)
	c.Check(accepted.Reason, Equals, v1alpha1.ReasonScheduleAccepted)
	c.Check(got.Status.VeleroSchedule.Name, Equals, vs.Name)
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAS(c, nas)
		return got.Status.NextRun != nil && got.Status.VeleroSchedule.Status != nil && got.Status.VeleroSchedule.Status.Phase == velerov1.SchedulePhaseEnabled,
			fmt.Sprintf("status: %+v", got.Status)
	})
	c.Check(got.Status.NextRun.UTC().Format("15:04"), Equals, "02:00")

	// Two runs: each a NonAdminBackup <schedule>-<timestamp>, adopted (the
	// one still running waits in its verify phase until it ends).
	t1 := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
	b1 := veleroRun(c, vs, t1, velerov1.BackupPhaseCompleted)
	b2 := veleroRun(c, vs, t1.Add(time.Minute), velerov1.BackupPhaseInProgress)
	names := []string{"nightly-" + t1.UTC().Format("20060102150405"), "nightly-" + t1.Add(time.Minute).UTC().Format("20060102150405")}
	for i, b := range []*velerov1.Backup{b1, b2} {
		nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]}}
		eventually(c, 15*time.Second, func() (bool, string) {
			err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), nab)
			if err != nil {
				return false, err.Error()
			}
			vb := nab.Status.VeleroBackup
			return vb != nil && vb.Name == b.Name && vb.Status != nil && nab.Status.Plan != nil && nab.Status.Plan.Action == v1alpha1.ActionAdopt &&
				(nab.Status.Plan.State == v1alpha1.PlanComplete || i == 1 && strings.HasPrefix(nab.Status.Plan.Current, "verify")), fmt.Sprintf("NAB %s: %+v", names[i], nab.Status)
		})
		c.Check(nab.Labels[v1alpha1.NonAdminScheduleLabel], Equals, "nightly")
		c.Check(nab.Labels[v1alpha1.NasOriginNACUUIDLabel], Equals, uuid)
		c.Check(nab.Spec.BackupSpec.IncludedResources, DeepEquals, []string{"configmaps"})
		claimed := &velerov1.Backup{}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(b), claimed), IsNil)
		c.Check(claimed.Labels[v1alpha1.NabOriginNACUUIDLabel], Equals, v1alpha1.NACUUIDOf(claimed.UID))
		c.Check(claimed.Annotations[v1alpha1.NabOriginNameAnnotation], Equals, names[i])
		c.Check(claimed.Annotations[v1alpha1.NabOriginNamespaceAnnotation], Equals, ns)
		c.Check(nab.Status.VeleroBackup.NACUUID, Equals, v1alpha1.NACUUIDOf(claimed.UID))
	}
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAS(c, nas)
		return len(got.Status.RecentBackups) == 2 && got.Status.LastSuccessfulBackup != nil, fmt.Sprintf("status: %+v", got.Status)
	})
	c.Check(got.Status.RecentBackups[0].Name, Equals, names[1])
	c.Check(got.Status.RecentBackups[0].Phase, Equals, velerov1.BackupPhaseInProgress)
	c.Check(got.Status.RecentBackups[1].VeleroBackupName, Equals, b1.Name)
	c.Check(got.Status.LastBackup.Name, Equals, names[1])
	c.Check(got.Status.LastSuccessfulBackup.Time.Equal(t1.Add(time.Second)), Equals, true)

	// paused reaches Velero; no next run while paused.
	c.Assert(testClient.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		cur := &velerov1.Schedule{}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(vs), cur), IsNil)
		got = getNAS(c, nas)
		return cur.Spec.Paused && got.Status.NextRun == nil, fmt.Sprintf("Velero paused %v, nextRun %v", cur.Spec.Paused, got.Status.NextRun)
	})
	// skipImmediately reaches Velero, then the NonAdminSchedule's is reset.
	c.Assert(testClient.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false,"skipImmediately":true}}`))), IsNil)
	eventually(c, 15*time.Second, func() (bool, string) {
		cur := &velerov1.Schedule{}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(vs), cur), IsNil)
		got = getNAS(c, nas)
		skip := cur.Spec.SkipImmediately != nil && *cur.Spec.SkipImmediately
		return skip && !cur.Spec.Paused && !got.Spec.SkipImmediately, fmt.Sprintf("Velero skip %v paused %v, NAS skip %v", cur.Spec.SkipImmediately, cur.Spec.Paused, got.Spec.SkipImmediately)
	})
	// Still the one Velero Schedule.
	list := &velerov1.ScheduleList{}
	c.Assert(testClient.List(ctx, list, client.InNamespace(s.oadp), client.MatchingLabels{v1alpha1.NasOriginNACUUIDLabel: uuid}), IsNil)
	c.Check(list.Items, HasLen, 1)

	// Deleting the schedule removes the Velero Schedule; the runs stay.
	c.Assert(testClient.Delete(ctx, got), IsNil)
	eventually(c, 15*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(vs), &velerov1.Schedule{})
		gone := testClient.Get(ctx, client.ObjectKeyFromObject(nas), &v1alpha1.NonAdminSchedule{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(gone), fmt.Sprintf("Velero Schedule: %v, NAS: %v", err, gone)
	})
	for i, b := range []*velerov1.Backup{b1, b2} {
		c.Check(testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[i]}, &v1alpha1.NonAdminBackup{}), IsNil)
		c.Check(testClient.Get(ctx, client.ObjectKeyFromObject(b), &velerov1.Backup{}), IsNil)
	}
}

// TestScheduleRefusals: a template naming another namespace, an invalid
// cron expression, template metadata and a schedule more frequent than the
// admin's minimum are refused with the field and the limit; no Velero
// Schedule is made for any of them.
func (s *ControllerSuite) TestScheduleRefusals(c *C) {
	ctx := context.Background()
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminSchedule"))
	c.Assert(err, IsNil)
	bp.Name = "bounded-schedules"
	bp.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"schedules": "bounded"}}
	a := bp.Spec.Actions["create"]
	a.Phases[0].Args = map[string]apiextensionsv1.JSON{"minInterval": {Raw: []byte(`"1h"`)}, "maxTTL": {Raw: []byte(`"24h"`)}, "allowedHours": {Raw: []byte(`"0-6"`)}}
	bp.Spec.Actions = map[string]v1alpha1.BlueprintAction{"create": a}
	defer applyBlueprints(c, s.oadp, bp)()

	ns := createNamespace(c, "sched-bad")
	bounded := labelledNamespace(c, map[string]string{"schedules": "bounded"})
	for _, tc := range []struct {
		nas *v1alpha1.NonAdminSchedule
		msg string
	}{
		{newNAS(ns, "other-ns", "0 2 * * *", velerov1.BackupSpec{IncludedNamespaces: []string{"kube-system"}}),
			`spec.template.backupSpec.includedNamespaces can not contain namespaces other than: ` + ns + ` \(found "kube-system"\)`},
		{newNAS(ns, "bad-cron", "every day", velerov1.BackupSpec{}), `spec.schedule: "every day" is not a valid cron expression: .*`},
		{newNAS(ns, "metadata", "0 2 * * *", velerov1.BackupSpec{Metadata: velerov1.Metadata{Labels: map[string]string{"a": "b"}}}),
			`spec.template.backupSpec.metadata.labels is restricted: nacflow sets the labels of every run`},
		{newNAS(bounded, "too-often", "*/5 * * * *", velerov1.BackupSpec{}),
			`spec.schedule: "\*/5 \* \* \* \*" runs 5m0s apart \(.*\); the admin's minimum interval between runs is 1h0m0s`},
		{newNAS(bounded, "daytime", "0 14 * * *", velerov1.BackupSpec{}),
			`spec.schedule: "0 14 \* \* \*" runs at 14:00, outside the hours the admin allows \(0-6, the Velero server's time zone\)`},
		{newNAS(bounded, "long-ttl", "0 2 * * *", velerov1.BackupSpec{TTL: metav1.Duration{Duration: 72 * time.Hour}}),
			`spec.template.backupSpec.ttl: 72h0m0s is longer than the admin's maximum 24h0m0s`},
	} {
		c.Assert(testClient.Create(ctx, tc.nas), IsNil)
		var got *v1alpha1.NonAdminSchedule
		eventually(c, 10*time.Second, func() (bool, string) {
			got = getNAS(c, tc.nas)
			return got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff, fmt.Sprintf("%s: %+v", tc.nas.Name, got.Status)
		})
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
		c.Assert(cond, NotNil)
		c.Check(cond.Status, Equals, metav1.ConditionFalse)
		c.Check(cond.Reason, Equals, v1alpha1.ReasonInvalidScheduleSpec)
		c.Check(cond.Message, Matches, tc.msg, Commentf(tc.nas.Name))
		list := &velerov1.ScheduleList{}
		c.Assert(testClient.List(ctx, list, client.InNamespace(s.oadp), client.MatchingLabels{v1alpha1.NasOriginNACUUIDLabel: v1alpha1.NACUUIDOf(got.UID)}), IsNil)
		c.Check(list.Items, HasLen, 0, Commentf(tc.nas.Name))
		// Events are written after the status, from the controller's
		// event queue.
		eventually(c, 10*time.Second, func() (bool, string) {
			events := &corev1.EventList{}
			c.Assert(testClient.List(ctx, events, client.InNamespace(tc.nas.Namespace)), IsNil)
			for _, e := range events.Items {
				if e.InvolvedObject.Name == tc.nas.Name && e.Type == corev1.EventTypeWarning {
					return true, ""
				}
			}
			return false, "a Warning event for " + tc.nas.Name
		})
	}
	// Within the admin's bounds: accepted, and the TTL capped template keeps
	// its own; a template without ttl gets the maximum.
	ok := newNAS(bounded, "nightly", "30 3 * * *", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, ok), IsNil)
	vs := veleroScheduleOf(c, s.oadp, ok)
	c.Check(vs.Spec.Template.TTL.Duration, Equals, 24*time.Hour)
	planComplete(c, ok)
}

// TestScheduleRunsOfAnotherTenant: a Velero Backup that carries a
// schedule's NACUUID but names another namespace is not taken: no
// NonAdminBackup is made for it in either namespace, and it is not claimed.
func (s *ControllerSuite) TestScheduleRunsOfAnotherTenant(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "sched-a")
	other := createNamespace(c, "sched-b")
	nas := newNAS(ns, "hourly", "0 * * * *", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, nas), IsNil)
	vs := veleroScheduleOf(c, s.oadp, nas)
	planComplete(c, nas)
	forged := vs.DeepCopy()
	forged.Annotations[v1alpha1.NasOriginNamespaceAnnotation] = other
	when := time.Now().Add(-time.Minute).Truncate(time.Second)
	b := veleroRun(c, forged, when, velerov1.BackupPhaseCompleted)
	real := veleroRun(c, vs, when.Add(time.Second), velerov1.BackupPhaseCompleted)
	eventually(c, 15*time.Second, func() (bool, string) {
		got := getNAS(c, nas)
		return len(got.Status.RecentBackups) == 1 && got.Status.RecentBackups[0].VeleroBackupName == real.Name, fmt.Sprintf("%+v", got.Status.RecentBackups)
	})
	for _, n := range []string{ns, other} {
		nabs := &v1alpha1.NonAdminBackupList{}
		c.Assert(testClient.List(ctx, nabs, client.InNamespace(n)), IsNil)
		for _, nab := range nabs.Items {
			c.Check(nab.Status.VeleroBackup == nil || nab.Status.VeleroBackup.Name != b.Name, Equals, true, Commentf("%s/%s took %s", n, nab.Name, b.Name))
		}
	}
	untouched := &velerov1.Backup{}
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(b), untouched), IsNil)
	c.Check(untouched.Labels[v1alpha1.NabOriginNACUUIDLabel], Equals, "")
}

// TestScheduleRPO: with spec.rpo, RPOMet holds after a successful run and
// turns False once the run is older than the objective while the schedule
// is paused — reason Paused, a Warning event — without any other event
// waking the schedule.
func (s *ControllerSuite) TestScheduleRPO(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "sched-rpo")
	nas := newNAS(ns, "protected", "0 * * * *", velerov1.BackupSpec{})
	nas.Spec.RPO = &metav1.Duration{Duration: 6 * time.Second}
	c.Assert(testClient.Create(ctx, nas), IsNil)
	vs := veleroScheduleOf(c, s.oadp, nas)
	planComplete(c, nas)
	veleroRun(c, vs, time.Now().Add(-time.Second), velerov1.BackupPhaseCompleted)
	var got *v1alpha1.NonAdminSchedule
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAS(c, nas)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRPOMet)
		return cond != nil && cond.Status == metav1.ConditionTrue && got.Status.LastSuccessfulBackup != nil, fmt.Sprintf("%+v", got.Status.Conditions)
	})
	c.Check(got.Status.RPO.Duration, Equals, 6*time.Second)
	// The gauges an alert compares: last success and the objective.
	collector := &nacmetrics.StateCollector{Reader: testClient}
	expected := fmt.Sprintf("# HELP nacflow_schedule_rpo_seconds The recovery-point objective in force of a NonAdminSchedule (status.rpo), in seconds; absent without one.\n"+
		"# TYPE nacflow_schedule_rpo_seconds gauge\nnacflow_schedule_rpo_seconds{name=\"protected\",namespace=%q} 6\n", ns)
	c.Check(filteredCompare(collector, "nacflow_schedule_rpo_seconds", ns, expected), IsNil)
	expected = fmt.Sprintf("# HELP nacflow_schedule_last_success_timestamp_seconds Completion time (Unix seconds) of the newest successful run of a NonAdminSchedule; absent before the first.\n"+
		"# TYPE nacflow_schedule_last_success_timestamp_seconds gauge\nnacflow_schedule_last_success_timestamp_seconds{name=\"protected\",namespace=%q} %d\n", ns, got.Status.LastSuccessfulBackup.Unix())
	c.Check(filteredCompare(collector, "nacflow_schedule_last_success_timestamp_seconds", ns, expected), IsNil)
	c.Assert(testClient.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		got = getNAS(c, nas)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRPOMet)
		return cond != nil && cond.Status == metav1.ConditionFalse, fmt.Sprintf("%+v", got.Status.Conditions)
	})
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRPOMet)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonSchedulePaused)
	c.Check(cond.Message, Matches, `the last successful backup completed at 20\S+Z, more than the objective of 6s ago: the schedule is paused \(spec.paused\), no new run is taken`)
	eventually(c, 10*time.Second, func() (bool, string) {
		events := &corev1.EventList{}
		c.Assert(testClient.List(ctx, events, client.InNamespace(ns)), IsNil)
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "protected" && e.Reason == phases.EventRPOMissed && e.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, "no RPOMissed event"
	})
}

// filteredCompare compares the samples of metric for namespace ns that
// collector reports with expected (other tests' schedules are left out).
func filteredCompare(collector prometheus.Collector, metric, ns, expected string) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(collector); err != nil {
		return err
	}
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", metric, f.GetHelp(), metric)
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns {
				fmt.Fprintf(&b, "%s{name=%q,namespace=%q} %s\n", metric, labels["name"], ns, strconv.FormatFloat(m.GetGauge().GetValue(), 'f', -1, 64))
			}
		}
	}
	if b.String() != expected {
		return fmt.Errorf("got:\n%s\nwant:\n%s", b.String(), expected)
	}
	return nil
}

// OADP's 2026 NonAdminSchedule template carries backupType (Velero's, after
// 1.18): a manifest setting it keeps it; Incremental, what Velero 1.18
// always does, is accepted; Full is refused naming the field, nothing made.
func (s *ControllerSuite) TestScheduleBackupType(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "sched-type")
	full := newNAS(ns, "full", "0 2 * * *", velerov1.BackupSpec{})
	full.Spec.Template.BackupSpec.BackupType = v1alpha1.BackupTypeFull
	c.Assert(testClient.Create(ctx, full), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNAS(c, full)
		return got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff, fmt.Sprintf("%+v", got.Status)
	})
	cond := meta.FindStatusCondition(getNAS(c, full).Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonInvalidScheduleSpec)
	c.Check(cond.Message, Matches, `spec.template.backupSpec.backupType: Full needs Velero's backupType \(velero PR #9954, after Velero 1.18\).*`)
	c.Check(getNAS(c, full).Spec.Template.BackupSpec.BackupType, Equals, "Full")
	list := &velerov1.ScheduleList{}
	c.Assert(testClient.List(ctx, list, client.InNamespace(s.oadp), client.MatchingLabels{v1alpha1.NasOriginNACUUIDLabel: v1alpha1.NACUUIDOf(getNAS(c, full).UID)}), IsNil)
	c.Check(list.Items, HasLen, 0)

	inc := newNAS(ns, "incremental", "0 3 * * *", velerov1.BackupSpec{})
	inc.Spec.Template.BackupSpec.BackupType = v1alpha1.BackupTypeIncremental
	c.Assert(testClient.Create(ctx, inc), IsNil)
	veleroScheduleOf(c, s.oadp, inc)
	planComplete(c, inc)
	c.Check(getNAS(c, inc).Spec.Template.BackupSpec.BackupType, Equals, "Incremental")

	// Another value is refused at apply by the CRD.
	bad := newNAS(ns, "weekly-full", "0 4 * * *", velerov1.BackupSpec{})
	bad.Spec.Template.BackupSpec.BackupType = "Differential"
	c.Check(testClient.Create(ctx, bad), ErrorMatches, `(?s).*backupType: Unsupported value: "Differential".*`)
}
