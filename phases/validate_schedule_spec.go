package phases

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// ValidateScheduleSpecArgs are the args of ValidateScheduleSpec: the
// template's enforcement as for a NonAdminBackup, and the admin's bounds on
// tenants' schedules.
type ValidateScheduleSpecArgs struct {
	// ValidateBackupSpecArgs hold enforce and locationTimeout, applied to
	// the template every run is made from.
	ValidateBackupSpecArgs
	// MinInterval is the shortest time allowed between two runs.
	MinInterval *metav1.Duration `json:"minInterval,omitempty" doc:"the shortest time allowed between two runs (duration, e.g. 1h); a schedule that runs more often is refused"`
	// MaxTTL is the longest TTL a run may keep its backup; a template
	// without ttl gets it.
	MaxTTL *metav1.Duration `json:"maxTTL,omitempty" doc:"the longest ttl of a run's backup (duration); a template without ttl gets this one"`
	// AllowedHours are the hours of the day (the Velero server's time zone,
	// UTC by default) runs may start in: "0-6,22-23".
	AllowedHours string `json:"allowedHours,omitempty" doc:"hours runs may start in, as ranges of 0-23 (\"0-6,22-23\", the Velero server's time zone)"`
	// MaxRPO is the longest recovery-point objective a tenant may set; a
	// schedule without spec.rpo gets it.
	MaxRPO *metav1.Duration `json:"maxRPO,omitempty" doc:"the longest spec.rpo allowed (duration); a schedule without rpo gets this objective"`
}

// VeleroDefaultTTL is the TTL Velero gives a backup whose spec has none
// (its --default-backup-ttl default, 30 days).
const VeleroDefaultTTL = 720 * time.Hour

// scheduleHorizon is how many upcoming runs the admin's bounds are checked
// on: enough to cover a week of minutely runs' patterns and a year of
// daily ones.
const scheduleHorizon = 1000

// ValidateScheduleSpec checks a NonAdminSchedule before its Velero Schedule
// is made: spec.schedule must parse as Velero parses it (a standard cron
// expression or descriptor, github.com/netresearch/go-cron like Velero
// v1.18), the template's backupSpec must pass every tenant rule of a
// NonAdminBackup (ValidateBackupSpec: own namespace only, nothing
// cluster-scoped, a storageLocation of the namespace, waited for while not
// ready) with the admin's enforced values applied (args.enforce, else the
// DataProtectionApplication's enforceBackupSpec), and the template may not
// set metadata (nacflow owns the labels that tie runs to the tenant).
// The admin's bounds (args): minInterval between runs, maxTTL of a run's
// backup, allowedHours for runs to start in, maxRPO. Each refusal names the
// field and the limit. The accepted schedule — the effective template, the
// objective in force — is recorded in status.veleroSchedule.spec and
// status.rpo, for CreateVeleroSchedule and the tenant.
//
// Sets Accepted (ScheduleAccepted or InvalidScheduleSpec) and, on refusal,
// phase BackingOff: refusals are terminal. Outputs: nextRun (RFC 3339).
type ValidateScheduleSpec struct {
	settings Settings
}

// Run implements phaseFunc.
func (f *ValidateScheduleSpec) Run(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, a *ValidateScheduleSpecArgs) (engine.Result, error) {
	hours, err := ParseHours(a.AllowedHours)
	if err != nil {
		return engine.Result{}, engine.Terminalf("ValidateScheduleSpec: args.allowedHours: %v", err)
	}
	refuseWith := func(err error) (engine.Result, error) {
		return engine.Result{}, refuse(nas, v1alpha1.ReasonInvalidScheduleSpec, err)
	}
	if err := outsideOADPNamespace(op); err != nil {
		return refuseWith(err)
	}
	sched, err := ParseSchedule(nas.Spec.Schedule)
	if err != nil {
		return refuseWith(err)
	}
	if err := CheckScheduleBounds(nas.Spec.Schedule, sched, minIntervalOf(a), hours, a.AllowedHours, planStart(op)); err != nil {
		return refuseWith(err)
	}
	if nas.Spec.Template.BackupSpec == nil {
		return refuseWith(fmt.Errorf("spec.template.backupSpec is required"))
	}
	if bt := nas.Spec.Template.BackupSpec.BackupType; bt == v1alpha1.BackupTypeFull {
		return refuseWith(fmt.Errorf("spec.template.backupSpec.backupType: Full needs Velero's backupType (velero PR #9954, after Velero 1.18); the Velero this cluster runs makes every file-system and data-mover backup incremental: leave backupType unset or Incremental"))
	}
	tmpl := &nas.Spec.Template.BackupSpec.BackupSpec
	if len(tmpl.Metadata.Labels) > 0 {
		return refuseWith(fmt.Errorf("spec.template.backupSpec.metadata.labels is restricted: nacflow sets the labels of every run"))
	}
	// The template passes the rules of a NonAdminBackup of the namespace.
	probe := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: nas.Namespace, Name: nas.Name}}
	probe.Spec.BackupSpec = tmpl
	if err := validateBackupSpec(probe); err != nil {
		return refuseWith(templateField(err))
	}
	enforce, _, err := backupEnforcement.inForce(ctx, f.settings, a.Enforce)
	if err != nil {
		return waitForSettings(err)
	}
	effective := tmpl.DeepCopy()
	if err := enforce.Apply(effective); err != nil {
		return refuseWith(templateField(err))
	}
	if a.MaxTTL != nil {
		ttl := effective.TTL.Duration
		switch {
		case ttl == 0:
			effective.TTL = *a.MaxTTL
		case ttl > a.MaxTTL.Duration:
			return refuseWith(fmt.Errorf("spec.template.backupSpec.ttl: %s is longer than the admin's maximum %s", ttl, a.MaxTTL.Duration))
		}
	}
	rpo := nas.Spec.RPO
	if a.MaxRPO != nil {
		switch {
		case rpo == nil:
			rpo = a.MaxRPO
		case rpo.Duration > a.MaxRPO.Duration:
			return refuseWith(fmt.Errorf("spec.rpo: %s is longer than the admin's maximum %s", rpo.Duration, a.MaxRPO.Duration))
		}
	}
	if rpo != nil && rpo.Duration <= 0 {
		return refuseWith(fmt.Errorf("spec.rpo: %s is not a positive duration", rpo.Duration))
	}
	wait, refusal, err := awaitLocation(ctx, op, nas.Namespace, effective, a.LocationTimeout)
	switch {
	case err != nil:
		return engine.Result{}, err
	case wait != nil:
		return *wait, nil
	case refusal != nil:
		return refuseWith(templateField(refusal))
	}
	accept(nas, v1alpha1.ReasonScheduleAccepted, "schedule accepted")
	if nas.Status.VeleroSchedule == nil {
		nas.Status.VeleroSchedule = &v1alpha1.VeleroSchedule{}
	}
	nas.Status.VeleroSchedule.Spec = &velerov1.ScheduleSpec{
		Schedule: nas.Spec.Schedule, Paused: nas.Spec.Paused, Template: *effective,
		UseOwnerReferencesInBackup: new(bool),
	}
	nas.Status.RPO = rpo.DeepCopy()
	next := sched.Next(planStart(op))
	msg := fmt.Sprintf("schedule %q accepted: next run after %s", nas.Spec.Schedule, next.UTC().Format(time.RFC3339))
	if nas.Spec.Paused {
		msg = fmt.Sprintf("schedule %q accepted, paused", nas.Spec.Schedule)
	}
	return engine.Done(msg, map[string]string{"nextRun": next.UTC().Format(time.RFC3339)}), nil
}

// templateField moves a NonAdminBackup refusal's field under the template
// ("spec.backupSpec.x" → "spec.template.backupSpec.x"); the error stays
// terminal when it was.
func templateField(err error) error {
	msg := strings.ReplaceAll(err.Error(), "spec.backupSpec", "spec.template.backupSpec")
	msg = strings.ReplaceAll(msg, "a NonAdminBackup may", "a NonAdminSchedule's backup may")
	return fmt.Errorf("%s", msg)
}

func minIntervalOf(a *ValidateScheduleSpecArgs) time.Duration {
	if a.MinInterval == nil {
		return 0
	}
	return a.MinInterval.Duration
}

// ParseSchedule parses a NonAdminSchedule's spec.schedule the way the
// Velero server does (cron.ParseStandard of github.com/netresearch/go-cron:
// five fields or a descriptor such as @daily or @every 1h). The error names
// the field and quotes the expression.
func ParseSchedule(expr string) (sched cron.Schedule, err error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("spec.schedule is required: a cron expression such as \"0 2 * * *\"")
	}
	defer func() {
		// Velero guards its parse against panics too.
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("spec.schedule: %q is not a valid cron expression: %v", expr, r)
		}
	}()
	sched, err = cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("spec.schedule: %q is not a valid cron expression: %w", expr, err)
	}
	return sched, nil
}

// CheckScheduleBounds checks the first scheduleHorizon runs of sched after
// from against the admin's bounds: no two runs closer than minInterval (0:
// no bound), every run starting in an hour of hours (nil: any; spec is the
// admin's text, quoted in the refusal). The error names spec.schedule, the
// offending runs and the limit.
func CheckScheduleBounds(expr string, sched cron.Schedule, minInterval time.Duration, hours map[int]bool, spec string, from time.Time) error {
	if minInterval <= 0 && hours == nil {
		return nil
	}
	first := sched.Next(from)
	if first.IsZero() {
		return fmt.Errorf("spec.schedule: %q never runs", expr)
	}
	// The interval first: it is the bound a too frequent schedule breaks
	// whatever the hours.
	for pass := 0; pass < 2; pass++ {
		prev := first
		for i := 0; i < scheduleHorizon; i++ {
			if pass == 1 && hours != nil && !hours[prev.Hour()] {
				return fmt.Errorf("spec.schedule: %q runs at %s, outside the hours the admin allows (%s, the Velero server's time zone)",
					expr, prev.Format("15:04"), spec)
			}
			next := sched.Next(prev)
			if next.IsZero() {
				break
			}
			if gap := next.Sub(prev); pass == 0 && minInterval > 0 && gap < minInterval {
				return fmt.Errorf("spec.schedule: %q runs %s apart (%s and %s); the admin's minimum interval between runs is %s",
					expr, gap, prev.Format("15:04"), next.Format("15:04"), minInterval)
			}
			prev = next
		}
	}
	return nil
}

// ParseHours parses allowedHours: comma-separated hours or ranges of
// 0-23 ("0-6,22-23"); "" allows every hour (nil).
func ParseHours(spec string) (map[int]bool, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	hours := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err != nil || a < 0 || b > 23 || a > b {
			return nil, fmt.Errorf("%q is not an hour or a range of hours within 0-23", part)
		}
		for h := a; h <= b; h++ {
			hours[h] = true
		}
	}
	return hours, nil
}

// planStart is when op's plan started (templates' .Time), now when the plan
// does not record it.
func planStart(op *engine.Operation) time.Time {
	if p := op.Object.GetPlan(); p != nil && p.StartTime != nil {
		return p.StartTime.Time
	}
	return time.Now()
}

// Doc implements engine.Documented.
func (*ValidateScheduleSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminSchedule: spec.schedule parses as Velero parses it; the template's backupSpec passes every rule of a NonAdminBackup (own namespace, nothing cluster-scoped, a storageLocation of the namespace, waited for while not ready) with the admin's enforced values applied, and sets no metadata; the admin's bounds hold (args.minInterval between runs, args.maxTTL, args.allowedHours, args.maxRPO, each checked on the next 1000 runs where it applies). Records the accepted schedule in status.veleroSchedule.spec and the objective in force in status.rpo; sets Accepted.",
		Outputs: []string{"nextRun: the first run after the plan started (RFC 3339)"},
		Errors:  "a refusal is terminal (Accepted=False/InvalidScheduleSpec, phase BackingOff), its message naming the field and the limit; " + apiRetried,
		Waits:   true,
	}
}
