package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// playSchedules plays Velero's schedule controller in oadp until ctx ends,
// by its rules (schedule_controller.go): an unpaused Schedule whose next run
// is due — the cron's next time after its last backup (or its creation) —
// and that has no run of its own New or InProgress gets a Backup made as
// Velero's getBackup makes one (named <schedule>-<timestamp>, the
// Schedule's labels with velero.io/schedule-name, its annotations, its
// template), and its lastBackup is set. A run completes runFor after it was
// made.
func playSchedules(ctx context.Context, oadp string, runFor time.Duration) {
	for ctx.Err() == nil {
		backups := &velerov1.BackupList{}
		schedules := &velerov1.ScheduleList{}
		if testClient.List(ctx, backups, client.InNamespace(oadp)) == nil && testClient.List(ctx, schedules, client.InNamespace(oadp)) == nil {
			running := map[string]bool{}
			for i := range backups.Items {
				b := &backups.Items[i]
				if b.Status.Phase == "" || b.Status.Phase == velerov1.BackupPhaseNew || b.Status.Phase == velerov1.BackupPhaseInProgress {
					if time.Since(b.CreationTimestamp.Time) < runFor {
						running[b.Labels[velerov1.ScheduleNameLabel]] = true
						continue
					}
					before := b.DeepCopy()
					b.Status.Phase = velerov1.BackupPhaseCompleted
					b.Status.CompletionTimestamp = &metav1.Time{Time: time.Now()}
					_ = testClient.Patch(ctx, b, client.MergeFrom(before))
				}
			}
			for i := range schedules.Items {
				s := &schedules.Items[i]
				sched, err := cron.ParseStandard(s.Spec.Schedule)
				if s.Spec.Paused || err != nil || running[s.Name] {
					continue
				}
				last := s.CreationTimestamp.Time
				if s.Status.LastBackup != nil {
					last = s.Status.LastBackup.Time
				}
				now := time.Now()
				if !now.After(sched.Next(last)) {
					continue
				}
				l := maps.Clone(s.Labels)
				if l == nil {
					l = map[string]string{}
				}
				l[velerov1.ScheduleNameLabel] = s.Name
				b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: s.Name + "-" + now.UTC().Format("20060102150405"),
					Labels: l, Annotations: maps.Clone(s.Annotations)}, Spec: s.Spec.Template}
				if testClient.Create(ctx, b) != nil {
					continue
				}
				before := s.DeepCopy()
				s.Status.LastBackup = &metav1.Time{Time: now}
				_ = testClient.Patch(ctx, s, client.MergeFrom(before))
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Five schedules of one namespace, each due every 2 s, while Velero takes a
// second per run: with the namespace's share of 2, never more than 2 of its
// runs are unfinished in Velero at once (without the share all five would
// be: one per schedule), every schedule's runs keep coming, and a run that
// waits says so on its schedule (WithinShare=False, an event).
func (s *FairShareSuite) TestScheduledRunsKeepTheShare(c *C) {
	ctx := context.Background()
	oadp := createNamespace(c, "fair-oadp")
	run := strings.TrimPrefix(oadp, "fair-oadp-")
	runs := watchVelero(c, oadp, &velerov1.BackupList{}, v1alpha1.NasOriginNamespaceAnnotation, func(o runtime.Object) bool {
		b, ok := o.(*velerov1.Backup)
		return ok && v1alpha1.BackupFinished(b.Status.Phase)
	})
	defer runs.stop()
	stop := startController(c, controllerOptions{oadp: oadp, selector: labels.SelectorFromSet(labels.Set{chaosRunLabel: run}), restart: true,
		maxInVelero: 2, concurrency: 4})
	defer stop()
	veleroCtx, stopVelero := context.WithCancel(ctx)
	defer stopVelero()
	go playSchedules(veleroCtx, oadp, time.Second)

	ns := createNamespace(c, "fair-sched")
	for i := range 5 {
		nas := newNAS(ns, fmt.Sprintf("s%d", i), "@every 2s", velerov1.BackupSpec{})
		nas.Labels = map[string]string{chaosRunLabel: run}
		c.Assert(testClient.Create(ctx, nas), IsNil)
	}
	// Runs of every schedule, a dozen in all.
	eventually(c, 90*time.Second, func() (bool, string) {
		all, _ := runs.of(ns)
		per := map[string]int{}
		for _, name := range all {
			per[name[:strings.LastIndex(name, "-")]]++
		}
		return len(all) >= 12 && len(per) == 5, fmt.Sprintf("%d runs, of %d schedules: %v", len(all), len(per), per)
	})
	c.Check(runs.peakOf(ns), Equals, 2, Commentf("the most unfinished runs of %s in Velero at once", ns))

	// Waiting was said (a reconcile's Normal events may be told in one
	// event, so the messages are searched).
	said := 0
	for i := range 5 {
		for _, m := range eventMessages(c, ns, fmt.Sprintf("s%d", i)) {
			if strings.Contains(m, "is waiting for a turn") {
				said++
				c.Check(m, Matches, `(?s).*the run due at \S+ is waiting for a turn in Velero's queue: namespace `+ns+` has 2 of its 2 backups in Velero.*`)
			}
		}
	}
	c.Check(said > 0, Equals, true, Commentf("no schedule's run said it waited for its turn"))
}
