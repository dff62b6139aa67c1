package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

func init() { addGroup(schedules) }

// schedules is `kubectl nac schedule`: a NonAdminSchedule's runs are
// NonAdminBackups of the namespace, which deleting the schedule leaves in
// place; pause and unpause set spec.paused (OADP's `schedule pause`).
func schedules() *tenantKind[*v1alpha1.NonAdminSchedule] {
	return &tenantKind[*v1alpha1.NonAdminSchedule]{
		aliases: []string{"schedules"}, create: newScheduleCreateCommand, columns: scheduleColumns,
		describeTo: func(w io.Writer, nas *v1alpha1.NonAdminSchedule, _ *Details, now time.Time) {
			DescribeSchedule(w, nas, now)
		},
		delete: &deleteVerb{deletedNote: "; the backups it took stay, each a NonAdminBackup of the namespace"},
		more: []func(*Options, *tenantKind[*v1alpha1.NonAdminSchedule]) *cobra.Command{
			pauseCommand(true), pauseCommand(false),
		},
	}
}

// scheduleCreateFlags are `schedule create`'s: the cron and the schedule's
// own fields, and every `backup create` flag but --wait for the template.
type scheduleCreateFlags struct {
	backupCreateFlags
	schedule        string
	paused          bool
	skipImmediately bool
	rpo             time.Duration
	retention       v1alpha1.ScheduleRetention
	failedKeepLast  int32
}

func newScheduleCreateCommand(o *Options, k *tenantKind[*v1alpha1.NonAdminSchedule]) *cobra.Command {
	f := &scheduleCreateFlags{backupCreateFlags: backupCreateFlags{createFlags: newCreateFlags()}}
	cmd := k.createCommand(o, "create NAME --schedule CRON", &f.createFlags, f.build)
	f.addFlags(o, cmd, "NonAdminSchedule")
	fl := cmd.Flags()
	fl.StringVar(&f.schedule, "schedule", "", "A cron expression, as Velero reads it: 5 fields, or @every 6h, @daily; CRON_TZ=Zone first for a time zone (required).")
	fl.BoolVar(&f.paused, "paused", false, "Create the schedule paused: no run until `schedule unpause`.")
	fl.BoolVar(&f.skipImmediately, "skip-immediately", false, "Skip the run due at creation or at unpause (Velero's skipImmediately).")
	fl.DurationVar(&f.rpo, "rpo", 0, "Recovery point objective: condition RPOMet turns False once the last successful run is older (0: none).")
	fl.Int32Var(&f.retention.KeepLast, "keep-last", 0, "Retention: keep the last N successful runs; runs no rule keeps are deleted with their data.")
	fl.Int32Var(&f.retention.Hourly, "keep-hourly", 0, "Retention: keep the newest run of each of the last N hours.")
	fl.Int32Var(&f.retention.Daily, "keep-daily", 0, "Retention: keep the newest run of each of the last N days.")
	fl.Int32Var(&f.retention.Weekly, "keep-weekly", 0, "Retention: keep the newest run of each of the last N weeks.")
	fl.Int32Var(&f.retention.Monthly, "keep-monthly", 0, "Retention: keep the newest run of each of the last N months.")
	fl.Int32Var(&f.retention.Yearly, "keep-yearly", 0, "Retention: keep the newest run of each of the last N years.")
	fl.Int32Var(&f.failedKeepLast, "keep-failed", 0, "Retention: keep the last N failed runs, apart from the successful ones.")
	_ = cmd.MarkFlagRequired("schedule")
	return cmd
}

// build returns the NonAdminSchedule the flags describe: its template is
// the backup `backup create` would build from the same flags.
func (f *scheduleCreateFlags) build(ns, name string) (*v1alpha1.NonAdminSchedule, error) {
	nab, err := f.backupCreateFlags.build(ns, name)
	if err != nil {
		return nil, err
	}
	for _, n := range []int32{f.retention.KeepLast, f.retention.Hourly, f.retention.Daily, f.retention.Weekly, f.retention.Monthly, f.retention.Yearly, f.failedKeepLast} {
		if n < 0 {
			return nil, fmt.Errorf("--keep-*: counts cannot be negative, got %d", n)
		}
	}
	nas := &v1alpha1.NonAdminSchedule{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NonAdminSchedule"},
		ObjectMeta: nab.ObjectMeta,
		Spec: v1alpha1.NonAdminScheduleSpec{Schedule: f.schedule, Paused: f.paused, SkipImmediately: f.skipImmediately,
			Template: v1alpha1.NonAdminScheduleTemplate{BackupSpec: scheduleBackupSpec(nab.Spec.BackupSpec)}},
	}
	if f.rpo > 0 {
		nas.Spec.RPO = &metav1.Duration{Duration: f.rpo}
	}
	r := f.retention
	if f.failedKeepLast > 0 {
		r.Failed = &v1alpha1.FailedRetention{KeepLast: f.failedKeepLast}
	}
	if r != (v1alpha1.ScheduleRetention{}) {
		nas.Spec.Retention = &r
	}
	return nas, nil
}

// pauseCommand is `schedule pause` (pause true) or `schedule unpause`: it
// sets spec.paused of each named schedule with a merge patch; Velero stops
// (or resumes) taking runs, which the schedule's status shows.
func pauseCommand(pause bool) func(*Options, *tenantKind[*v1alpha1.NonAdminSchedule]) *cobra.Command {
	return func(o *Options, k *tenantKind[*v1alpha1.NonAdminSchedule]) *cobra.Command {
		use, done := "unpause", "unpaused"
		if pause {
			use, done = "pause", "paused"
		}
		return k.verb(o, use+" NAME...", cobra.MinimumNArgs(1), func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clientAndNamespace()
			if err != nil {
				return err
			}
			patch := []byte(fmt.Sprintf(`{"spec":{"paused":%t}}`, pause))
			for _, name := range args {
				nas := &v1alpha1.NonAdminSchedule{}
				nas.Namespace, nas.Name = ns, name
				if err := c.Patch(cmd.Context(), nas, client.RawPatch(types.MergePatchType, patch)); err != nil {
					return fmt.Errorf("NonAdminSchedule %s: %w", name, err)
				}
				fmt.Fprintf(o.Out, "NonAdminSchedule %s %s.\n", name, done)
			}
			return nil
		})
	}
}

var scheduleColumns = []column[*v1alpha1.NonAdminSchedule]{
	nameColumn[*v1alpha1.NonAdminSchedule]("NonAdminSchedule name"),
	{name: "Schedule", description: "spec.schedule, the cron expression", cell: func(n *v1alpha1.NonAdminSchedule, _ time.Time) string { return n.Spec.Schedule }},
	requestPhaseColumn(func(n *v1alpha1.NonAdminSchedule) v1alpha1.NonAdminPhase { return n.Status.Phase }),
	{name: "Velero-Phase", description: "the Velero Schedule's phase (Enabled, FailedValidation)", cell: func(n *v1alpha1.NonAdminSchedule, _ time.Time) string {
		if v := n.Status.VeleroSchedule; v != nil && v.Status != nil {
			return dash(string(v.Status.Phase))
		}
		return "-"
	}},
	{name: "Paused", description: "spec.paused, or held at the namespace's quota (condition WithinQuota)", cell: func(n *v1alpha1.NonAdminSchedule, _ time.Time) string {
		return pausedString(n)
	}},
	{name: "Last-Run", description: "when the last run started", cell: func(n *v1alpha1.NonAdminSchedule, now time.Time) string {
		if b := n.Status.LastBackup; b != nil && b.StartTimestamp != nil {
			return durationString(now.Sub(b.StartTimestamp.Time)) + " ago"
		}
		return "-"
	}},
	{name: "Next-Run", description: "status.nextRun", cell: func(n *v1alpha1.NonAdminSchedule, now time.Time) string {
		if n.Status.NextRun != nil {
			return "in " + durationString(n.Status.NextRun.Sub(now))
		}
		return "-"
	}},
	planColumn[*v1alpha1.NonAdminSchedule](),
	ageColumn[*v1alpha1.NonAdminSchedule](),
	{name: "RPO-Met", description: "the RPOMet condition", wide: true, cell: func(n *v1alpha1.NonAdminSchedule, _ time.Time) string {
		if c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionRPOMet); c != nil {
			return string(c.Status)
		}
		return "-"
	}},
}

// pausedString says whether n takes no runs, and why.
func pausedString(n *v1alpha1.NonAdminSchedule) string {
	switch {
	case n.Spec.Paused:
		return "true"
	case meta.IsStatusConditionFalse(n.Status.Conditions, v1alpha1.ConditionWithinQuota):
		return "quota"
	}
	return "false"
}

// DescribeSchedule writes nas as `kubectl nac schedule describe` prints it:
// metadata, the cron and template, paused, retention and RPO, the phase
// timeline, Velero's schedule, the next run, the recent runs, the last
// restore test and the conditions.
func DescribeSchedule(w io.Writer, nas *v1alpha1.NonAdminSchedule, now time.Time) {
	d := describer{w: w, now: now}
	d.header(&nas.ObjectMeta, string(nas.Status.Phase))
	d.line(0, "Schedule", nas.Spec.Schedule)
	d.line(0, "Paused", pausedString(nas))
	if t := nas.Spec.Template.BackupSpec; t != nil {
		d.line(0, "Template", "")
		d.line(1, "Storage Location", or(t.StorageLocation, "<default>"))
		d.line(1, "TTL", ttlString(t.TTL))
		d.line(1, "Included Resources", listOr(t.IncludedResources, "*"))
		d.line(1, "Excluded Resources", listOr(t.ExcludedResources, "<none>"))
	}
	if nas.Spec.RPO != nil {
		d.line(0, "RPO", nas.Spec.RPO.Duration.String())
	}
	if r := nas.Status.Retention; r != nil {
		d.line(0, "Retention", r.Policy)
		d.line(1, "Kept", r.Kept)
		if r.Pruned > 0 {
			d.line(1, "Pruned", fmt.Sprintf("%d, last %s at %s", r.Pruned, listOr(r.LastPruned, "-"), stamp(r.LastPruneTime)))
		}
	}
	d.plan(nas.Status.Plan)
	fmt.Fprintln(w)
	if v := nas.Status.VeleroSchedule; v != nil && v.Name != "" {
		var phase string
		if v.Status != nil {
			phase = string(v.Status.Phase)
		}
		d.veleroObject("Velero Schedule", v.Namespace, v.Name, phase)
	} else {
		d.line(0, "Velero Schedule", "<none yet>")
	}
	if nas.Status.NextRun != nil {
		d.line(0, "Next Run", fmt.Sprintf("%s (in %s)", stamp(nas.Status.NextRun), durationString(nas.Status.NextRun.Sub(now))))
	} else {
		d.line(0, "Next Run", "<none>")
	}
	if nas.Status.LastSuccessfulBackup != nil {
		d.line(0, "Last Successful Run", fmt.Sprintf("%s (%s ago)", stamp(nas.Status.LastSuccessfulBackup), durationString(now.Sub(nas.Status.LastSuccessfulBackup.Time))))
	}
	if len(nas.Status.RecentBackups) > 0 {
		d.line(0, "Recent Runs", "")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NONADMINBACKUP\tPHASE\tSTARTED\tCOMPLETED")
		for _, b := range nas.Status.RecentBackups {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", b.Name, or(string(b.Phase), "<unknown>"), stamp(b.StartTimestamp), stamp(b.CompletionTimestamp))
		}
		_ = tw.Flush()
	}
	if rt := nas.Status.LastRestoreTest; rt != nil {
		d.restoreTest(rt)
	}
	d.conditions(nas.Status.Conditions)
}

// scheduleBackupSpec is spec as a schedule's template (nil: nil).
func scheduleBackupSpec(spec *velerov1.BackupSpec) *v1alpha1.ScheduleBackupSpec {
	if spec == nil {
		return nil
	}
	return &v1alpha1.ScheduleBackupSpec{BackupSpec: *spec}
}
