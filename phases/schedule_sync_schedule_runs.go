package phases

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/velero/linkednab"
	"github.com/nacflow/nacflow/internal/velero/retention"
)

// Event reasons of NonAdminSchedules (SyncScheduleRuns).
const (
	// EventRPOMissed (Warning): RPOMet turned False; the message says why.
	EventRPOMissed = "RPOMissed"
	// EventRPOMet (Normal): RPOMet turned True again.
	EventRPOMet = "RPOMet"
	// EventScheduledBackup (Normal): a run's NonAdminBackup was created.
	EventScheduledBackup = "ScheduledBackup"
	// EventPrunedBackup (Normal): spec.retention pruned a run.
	EventPrunedBackup = "PrunedBackup"
	// EventQuotaExceeded (Warning): the schedule's next run would pass the
	// namespace's quota; its Velero Schedule is paused.
	EventQuotaExceeded = "QuotaExceeded"
	// EventScheduleResumed (Normal): there is room again; the Velero
	// Schedule runs again.
	EventScheduleResumed = "ScheduleResumed"
	// EventRunWaitsForTurn (Normal): the schedule's due run waits for its
	// turn in Velero's queue (the namespace's fair share).
	EventRunWaitsForTurn = "RunWaitsForTurn"
)

// maxPrunesPerLook bounds the runs one look at a schedule prunes: a policy
// tightened over a long history deletes it a few at a time, not as one
// burst of DeleteBackupRequests.
const maxPrunesPerLook = 10

// SyncScheduleRunsArgs are the args of SyncScheduleRuns: an admin's bounds
// on schedules' retention.
type SyncScheduleRunsArgs struct {
	// MaxKeep bounds the successful runs a schedule keeps, whatever its
	// retention says (0: no bound); past it the oldest kept go.
	MaxKeep int `json:"maxKeep,omitempty" doc:"the most successful runs a schedule keeps, whatever its spec.retention says (0: no bound); the oldest kept beyond it are pruned"`
	// DefaultRetention applies to schedules without spec.retention.
	DefaultRetention *v1alpha1.ScheduleRetention `json:"defaultRetention,omitempty" doc:"the retention of schedules without spec.retention (unset: their runs stay until their TTL)"`
}

// SyncScheduleRuns follows a NonAdminSchedule's Velero Schedule (OADP NAC's
// NonAdminSchedule): it mirrors the schedule's status into
// status.veleroSchedule.status; turns every Backup the schedule took into a
// NonAdminBackup of the namespace (claiming the Backup with a NACUUID of its
// own, then creating the NAB linked to it, which the adopt action takes
// over, as for backup sync); lists the newest runs in status; computes the
// next run (Velero's rule); and judges the recovery-point objective
// (condition RPOMet, an event when it changes); prunes the runs the
// retention does not keep (applyRetention); and pauses the Velero Schedule
// while its next run would pass the namespace's quota, resuming it when
// there is room (holdAtQuota). Runs keep coming after the
// create plan has ended: the NonAdminSchedule controller runs this phase
// again on every look at the schedule (engine.Runner.Follow).
//
// Its Result's RecheckAfter is how long until it should look again (the
// next run or the RPO deadline, a second past it; 0 for none). Outputs:
// runs (how many runs the schedule has). Errors: a Velero Schedule that does
// not carry the schedule's NACUUID, and API errors, are retryable; a run the
// safety rule refuses to claim is left alone (logged).
type SyncScheduleRuns struct {
	tools tools
	// maxInVelero is --max-backups-in-velero-per-namespace, the share
	// holdForShare keeps (0: none).
	maxInVelero int
}

// SafetyExceptions implements engine.Excepted: a run becomes a
// NonAdminBackup of the schedule's own namespace, linked in its status.
func (*SyncScheduleRuns) SafetyExceptions() []engine.Exception {
	nab := v1alpha1.GroupVersion.WithKind("NonAdminBackup").GroupKind()
	return []engine.Exception{
		{Verbs: []string{"create"}, Kind: nab, Scope: engine.InOperationNamespace,
			Why: "each run of the tenant's schedule becomes a NonAdminBackup of its namespace (OADP NAC's NonAdminSchedule)"},
		{Verbs: []string{"patch"}, Kind: nab, Scope: engine.InOperationNamespace,
			Why: "spec.retention prunes a run: spec.deleteBackup on the run's NonAdminBackup, which deletes it with its data"},
		{Verbs: []string{"patch status"}, Kind: nab, Scope: engine.InOperationNamespace,
			Why: "the run's new NonAdminBackup records its Velero Backup in status.veleroBackup, the link AdoptVeleroBackup trusts (tenants cannot write status)"},
	}
}

// Run implements phaseFunc.
func (f *SyncScheduleRuns) Run(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, a *SyncScheduleRunsArgs) (engine.Result, error) {
	vs := nas.Status.VeleroSchedule
	if vs == nil || vs.Name == "" {
		return engine.Done("no Velero Schedule yet", nil), nil
	}
	s := &velerov1.Schedule{}
	err := op.Client.Get(ctx, client.ObjectKey{Namespace: vs.Namespace, Name: vs.Name}, s)
	switch {
	case apierrors.IsNotFound(err):
		s = nil
	case err != nil:
		return engine.Result{}, fmt.Errorf("reading Velero Schedule %s/%s: %w", vs.Namespace, vs.Name, err)
	case s.Labels[v1alpha1.NasOriginNACUUIDLabel] != vs.NACUUID:
		return engine.Result{}, fmt.Errorf("velero Schedule %s/%s does not carry this schedule's NACUUID %s", vs.Namespace, vs.Name, vs.NACUUID)
	default:
		vs.Status = s.Status.DeepCopy()
	}
	runs, err := f.syncRuns(ctx, op, nas)
	if err != nil {
		return engine.Result{}, err
	}
	pruned, err := f.applyRetention(ctx, op, nas, runs, a)
	if err != nil {
		return engine.Result{}, err
	}
	if err := f.holdAtQuota(ctx, op, nas, s, pruned); err != nil {
		return engine.Result{}, err
	}
	now := time.Now()
	shareRecheck, err := f.holdForShare(ctx, op, nas, s, now)
	if err != nil {
		return engine.Result{}, err
	}
	nas.Status.NextRun = nil
	if s != nil && !nas.Spec.Paused && s.Annotations[v1alpha1.QuotaPausedAnnotation] == "" {
		if next := nextRun(s); !next.IsZero() {
			nas.Status.NextRun = &metav1.Time{Time: next}
		}
	}
	wake := time.Time{}
	// A run already due is Velero's to take (its Backup wakes the
	// schedule) or waits for its turn (holdForShare's recheck): looking
	// again every second until then would only spin.
	if nas.Status.NextRun != nil && nas.Status.NextRun.After(now) {
		wake = nas.Status.NextRun.Time
	}
	if d := f.judgeRPO(nas, runs, now); !d.IsZero() && d.After(now) && (wake.IsZero() || d.Before(wake)) {
		wake = d
	}
	if d := now.Add(shareRecheck); shareRecheck > 0 && (wake.IsZero() || d.Before(wake)) {
		wake = d
	}
	res := engine.Done(fmt.Sprintf("%d run(s) of Velero Schedule %s", len(runs), vs.Name), map[string]string{"runs": fmt.Sprint(len(runs))})
	if !wake.IsZero() {
		// A second past the moment, so that the look finds it passed.
		res.RecheckAfter = max(wake.Sub(now)+time.Second, time.Second)
	}
	return res, nil
}

// run is one Backup of the Velero Schedule and its NonAdminBackup's name.
type run struct {
	backup *velerov1.Backup
	nab    string
}

// syncRuns lists the Backups the Velero Schedule took (they carry the
// schedule's NACUUID label and origin annotations, copied by Velero),
// claims each for a NonAdminBackup of its own and creates that NAB when
// missing; it records the newest runs in status and returns them all,
// newest first.
func (f *SyncScheduleRuns) syncRuns(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule) ([]run, error) {
	vs := nas.Status.VeleroSchedule
	list := &velerov1.BackupList{}
	if err := listLabelled(ctx, op.Client, op, list, v1alpha1.NasOriginNACUUIDLabel, vs.NACUUID); err != nil {
		return nil, fmt.Errorf("listing the Velero Backups of schedule %s: %w", vs.Name, err)
	}
	var runs []run
	for i := range list.Items {
		b := &list.Items[i]
		// Velero copied these from the schedule; a Backup that names another
		// tenant is never taken.
		if b.Annotations[v1alpha1.NasOriginNamespaceAnnotation] != nas.Namespace || b.Annotations[v1alpha1.NasOriginNameAnnotation] != nas.Name ||
			b.Labels[velerov1.ScheduleNameLabel] != vs.Name {
			continue
		}
		name, err := claim(ctx, op, nas, b)
		if err != nil {
			return nil, err
		}
		if name == "" {
			continue
		}
		if err := f.ensureNAB(ctx, op, nas, b, name); err != nil {
			return nil, err
		}
		runs = append(runs, run{backup: b, nab: name})
	}
	sort.Slice(runs, func(i, j int) bool {
		return runs[j].backup.CreationTimestamp.Before(&runs[i].backup.CreationTimestamp) ||
			runs[i].backup.CreationTimestamp.Equal(&runs[j].backup.CreationTimestamp) && runs[i].backup.Name > runs[j].backup.Name
	})
	nas.Status.RecentBackups = nil
	for i, rn := range runs {
		st := rn.backup.Status
		if st.Phase == velerov1.BackupPhaseCompleted && st.CompletionTimestamp != nil {
			if last := nas.Status.LastSuccessfulBackup; last == nil || last.Before(st.CompletionTimestamp) {
				nas.Status.LastSuccessfulBackup = st.CompletionTimestamp.DeepCopy()
			}
		}
		if i < v1alpha1.RecentBackupsLimit {
			nas.Status.RecentBackups = append(nas.Status.RecentBackups, v1alpha1.NonAdminScheduledBackup{
				Name: rn.nab, VeleroBackupName: rn.backup.Name, Phase: st.Phase,
				StartTimestamp: st.StartTimestamp, CompletionTimestamp: st.CompletionTimestamp, Expiration: st.Expiration,
			})
		}
	}
	nas.Status.LastBackup = nil
	if len(nas.Status.RecentBackups) > 0 {
		nas.Status.LastBackup = nas.Status.RecentBackups[0].DeepCopy()
	}
	lastRestoreTest(ctx, op, nas)
	return runs, nil
}

// runName is the NonAdminBackup name of Velero Backup b of the schedule:
// <schedule name>-<Velero's timestamp> (Velero names runs
// <Velero schedule>-<yyyyMMddHHmmss>).
func runName(nas *v1alpha1.NonAdminSchedule, b *velerov1.Backup) string {
	stamp := strings.TrimPrefix(b.Name, nas.Status.VeleroSchedule.Name+"-")
	base := nas.Name
	if limit := validation.DNS1123SubdomainMaxLength - len(stamp) - 1; len(base) > limit {
		base = strings.TrimRight(base[:limit], "-.")
	}
	return base + "-" + stamp
}

// claim gives Velero Backup b of the schedule the NAC origin of a
// NonAdminBackup of its own — label openshift.io/oadp-nab-origin-nacuuid
// (a NACUUID derived from the Backup's UID) and the origin namespace and
// name annotations — so that every part of nacflow (the adopt action,
// backup sync, garbage collection, downloads, deletion) treats the run like
// any other backup. The patch goes through the guarded client: b carries the
// schedule's origin label and namespace (the safety rule's ownership), and
// what it references is checked as for any Backup a phase writes. It returns
// the run's NAB name ("" when b carries another NAB's origin, or the safety
// rule refuses it: left alone).
func claim(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, b *velerov1.Backup) (string, error) {
	if b.Labels[v1alpha1.NabOriginNACUUIDLabel] != "" {
		if b.Annotations[v1alpha1.NabOriginNamespaceAnnotation] != nas.Namespace {
			return "", nil
		}
		return b.Annotations[v1alpha1.NabOriginNameAnnotation], nil
	}
	name := runName(nas, b)
	patch := map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{v1alpha1.NabOriginNACUUIDLabel: v1alpha1.NACUUIDOf(b.UID)},
		"annotations": map[string]string{v1alpha1.NabOriginNamespaceAnnotation: nas.Namespace, v1alpha1.NabOriginNameAnnotation: name},
	}}
	data, err := json.Marshal(patch)
	if err != nil {
		return "", err
	}
	err = op.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, data))
	if engine.IsSafetyViolation(err) {
		log.FromContext(ctx).Info("left a run of the schedule alone: the safety rule refuses to claim it", "veleroBackup", b.Name, "reason", err.Error())
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("claiming Velero Backup %s of schedule %s: %w", b.Name, nas.Status.VeleroSchedule.Name, err)
	}
	return name, nil
}

// ensureNAB creates the NonAdminBackup name of run b when it is missing:
// labelled with the schedule (oadp.openshift.io/nonadminschedule and the
// schedule's NACUUID) and the sync label, its spec the run's Velero spec as
// a tenant would write it (SyncedBackupSpec), storageLocation the
// template's tenant location; its status links b, and the adopt action does
// the rest. A NAB of that name that is not the run's own is left alone.
func (f *SyncScheduleRuns) ensureNAB(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, b *velerov1.Backup, name string) error {
	nacuuid := b.Labels[v1alpha1.NabOriginNACUUIDLabel]
	if nacuuid == "" {
		nacuuid = v1alpha1.NACUUIDOf(b.UID)
	}
	existing := &v1alpha1.NonAdminBackup{}
	err := op.Client.Get(ctx, client.ObjectKey{Namespace: nas.Namespace, Name: name}, existing)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading NonAdminBackup %s/%s: %w", nas.Namespace, name, err)
	}
	labels := map[string]string{
		v1alpha1.NabSyncedFromNACUUIDLabel: nacuuid,
		v1alpha1.NasOriginNACUUIDLabel:     nas.Status.VeleroSchedule.NACUUID,
	}
	if len(validation.IsValidLabelValue(nas.Name)) == 0 {
		labels[v1alpha1.NonAdminScheduleLabel] = nas.Name
	}
	spec, _ := SyncedBackupSpec(&b.Spec, nas.Namespace)
	spec.StorageLocation = b.Annotations[v1alpha1.NasOriginStorageLocationAnnotation]
	nab := &v1alpha1.NonAdminBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: nas.Namespace, Name: name, Labels: labels},
		Spec:       v1alpha1.NonAdminBackupSpec{BackupSpec: spec},
	}
	created, err := linkednab.Create(ctx, op.Client, nab, b, nacuuid)
	if err != nil || !created {
		return err
	}
	log.FromContext(ctx).Info("created the NonAdminBackup of a scheduled run", "nonAdminBackup", name, "veleroBackup", b.Name)
	f.event(nas, corev1.EventTypeNormal, EventScheduledBackup, fmt.Sprintf("Velero Backup %s of this schedule is NonAdminBackup %s", b.Name, name))
	return nil
}

// event emits an event on nas (none without a recorder).
func (f *SyncScheduleRuns) event(nas *v1alpha1.NonAdminSchedule, eventType, reason, message string) {
	if f.tools.recorder != nil {
		f.tools.recorder.Event(nas, eventType, reason, message)
	}
}

// nextRun is when Velero starts the schedule's next run: the cron's next
// time after the last run (or the schedule's creation), or after the last
// skip when that is later — Velero's own rule (getNextRunTime). Zero when
// the expression does not parse.
func nextRun(s *velerov1.Schedule) time.Time {
	sched, err := cron.ParseStandard(s.Spec.Schedule)
	if err != nil {
		return time.Time{}
	}
	base := s.CreationTimestamp.Time
	if s.Status.LastBackup != nil {
		base = s.Status.LastBackup.Time
	}
	if s.Status.LastSkipped != nil && s.Status.LastSkipped.After(base) {
		base = s.Status.LastSkipped.Time
	}
	return sched.Next(base)
}

// judgeRPO sets condition RPOMet from status.rpo (removed without one) and
// emits an event when it changes; it returns the RPO's deadline (zero when
// the objective is not met or there is none).
func (f *SyncScheduleRuns) judgeRPO(nas *v1alpha1.NonAdminSchedule, runs []run, now time.Time) time.Time {
	if nas.Status.RPO == nil {
		meta.RemoveStatusCondition(&nas.Status.Conditions, v1alpha1.ConditionRPOMet)
		return time.Time{}
	}
	var newest velerov1.BackupPhase
	queue := 0
	if len(runs) > 0 {
		newest = runs[0].backup.Status.Phase
		queue = runs[0].backup.Status.QueuePosition
	}
	v := v1alpha1.EvaluateRPO(nas.Status.RPO.Duration, nas.CreationTimestamp.Time, nas.Status.LastSuccessfulBackup, nas.Spec.Paused, newest, queue, now)
	status := metav1.ConditionFalse
	if v.Met {
		status = metav1.ConditionTrue
	}
	old := meta.FindStatusCondition(nas.Status.Conditions, v1alpha1.ConditionRPOMet)
	changed := old == nil || old.Status != status || old.Reason != v.Reason
	if changed || old.Message != v.Message {
		meta.SetStatusCondition(&nas.Status.Conditions, metav1.Condition{
			Type: v1alpha1.ConditionRPOMet, Status: status, Reason: v.Reason, Message: v.Message, ObservedGeneration: nas.Generation,
		})
		switch {
		case !changed:
		case !v.Met:
			f.event(nas, corev1.EventTypeWarning, EventRPOMissed, v.Message)
		case old != nil:
			f.event(nas, corev1.EventTypeNormal, EventRPOMet, v.Message)
		}
	}
	if v.Met {
		return v.Deadline
	}
	return time.Time{}
}

// lastRestoreTest sets nas's status.lastRestoreTest to the newest restore
// test (TestRestore) among its recent runs' NonAdminBackups, read from the
// cache, naming that run; an older one stays when none of them was tested.
func lastRestoreTest(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule) {
	for _, run := range nas.Status.RecentBackups {
		nab := &v1alpha1.NonAdminBackup{}
		if err := op.Client.Get(ctx, client.ObjectKey{Namespace: nas.Namespace, Name: run.Name}, nab); err != nil {
			continue // not in the cache yet: the next look
		}
		rt := nab.Status.RestoreTest
		if rt == nil || rt.Result == "" {
			continue
		}
		if last := nas.Status.LastRestoreTest; last == nil || last.Time.Before(&rt.Time) {
			nas.Status.LastRestoreTest = rt.DeepCopy()
			nas.Status.LastRestoreTest.Backup = run.Name
		}
	}
}

// applyRetention prunes the runs the schedule's retention (spec.retention,
// else args.defaultRetention, bounded by args.maxKeep) does not keep
// (package retention): it sets spec.deleteBackup on their NonAdminBackups,
// at most maxPrunesPerLook a look, oldest first, with an event each, and
// records status.retention. A run whose NonAdminBackup a restore of the
// namespace names, and whose restore has not ended, is in use.
func (f *SyncScheduleRuns) applyRetention(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, runs []run, a *SyncScheduleRunsArgs) ([]string, error) {
	spec := nas.Spec.Retention
	if spec == nil {
		spec = a.DefaultRetention
	}
	if spec == nil {
		nas.Status.Retention = nil
		return nil, nil
	}
	p := retention.Policy{KeepLast: int(spec.KeepLast), Hourly: int(spec.Hourly), Daily: int(spec.Daily), Weekly: int(spec.Weekly),
		Monthly: int(spec.Monthly), Yearly: int(spec.Yearly)}
	if spec.Failed != nil {
		p.FailedKeepLast = int(spec.Failed.KeepLast)
	}
	narList := &v1alpha1.NonAdminRestoreList{}
	if err := op.Client.List(ctx, narList, client.InNamespace(nas.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the NonAdminRestores of %s: %w", nas.Namespace, err)
	}
	inUse := map[string]bool{}
	for i := range narList.Items {
		nar := &narList.Items[i]
		if rs := nar.AcceptedRestoreSpec(); rs != nil && (nar.Status.Plan == nil || (nar.Status.Plan.State != v1alpha1.PlanComplete && nar.Status.Plan.State != v1alpha1.PlanFailed)) {
			inUse[rs.BackupName] = true
		}
	}
	var rr []retention.Run
	for _, rn := range runs {
		st := rn.backup.Status
		rr = append(rr, retention.Run{Name: rn.nab, Time: rn.backup.CreationTimestamp.Time, Finished: v1alpha1.BackupFinished(st.Phase),
			Succeeded: st.Phase == velerov1.BackupPhaseCompleted, InUse: inUse[rn.nab]})
	}
	decisions := retention.Select(rr, p, scheduleZone(nas.Spec.Schedule))
	if a.MaxKeep > 0 {
		kept := 0
		for i := range decisions {
			d := &decisions[i]
			if !d.Keep || !d.Succeeded {
				continue
			}
			kept++
			if kept > a.MaxKeep && !d.InUse && !slices.Contains(d.Reasons, "newest successful") {
				d.Keep, d.Reasons = false, []string{fmt.Sprintf("beyond the admin's maxKeep %d", a.MaxKeep)}
			}
		}
	}
	st := nas.Status.Retention
	if st == nil {
		st = &v1alpha1.RetentionStatus{}
	}
	st.Policy = describeRetention(spec, a.MaxKeep, nas.Spec.Retention == nil)
	st.Kept = 0
	for _, d := range decisions {
		if d.Keep {
			st.Kept++
		}
	}
	runBackup := map[string]string{} // NonAdminBackup name → its run's Velero Backup
	for _, rn := range runs {
		runBackup[rn.nab] = rn.backup.Name
	}
	var pruned []string
	for _, name := range retention.Prunable(decisions) {
		if len(pruned) == maxPrunesPerLook {
			break
		}
		nab := &v1alpha1.NonAdminBackup{}
		if err := op.Client.Get(ctx, client.ObjectKey{Namespace: nas.Namespace, Name: name}, nab); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading NonAdminBackup %s/%s: %w", nas.Namespace, name, err)
		}
		// The run's NonAdminBackup is the one whose status (which tenants
		// cannot write) links the run's Velero Backup; its labels a tenant
		// may edit.
		if vb := nab.Status.VeleroBackup; vb == nil || vb.Name != runBackup[name] {
			continue // not (yet) this run's
		}
		if nab.Spec.DeleteBackup || !nab.DeletionTimestamp.IsZero() {
			continue // going already
		}
		before := nab.DeepCopy()
		nab.Spec.DeleteBackup = true
		if err := op.Client.Patch(ctx, nab, client.MergeFrom(before)); err != nil {
			return nil, fmt.Errorf("pruning NonAdminBackup %s/%s: %w", nas.Namespace, name, err)
		}
		pruned = append(pruned, name)
		log.FromContext(ctx).Info("pruned a scheduled run", "nonAdminBackup", name, "retention", st.Policy)
		f.event(nas, corev1.EventTypeNormal, EventPrunedBackup, fmt.Sprintf("NonAdminBackup %s pruned by spec.retention (%s): it is deleted with its data", name, st.Policy))
	}
	if len(pruned) > 0 {
		st.Pruned += int32(len(pruned))
		st.LastPruned = pruned
		st.LastPruneTime = &metav1.Time{Time: time.Now()}
	}
	nas.Status.Retention = st
	return pruned, nil
}

// holdAtQuota pauses the Velero Schedule s of nas while its next run would
// take the namespace past the admin's quota (tools.quotas: CheckQuota's args
// in the namespace's NonAdminBackup blueprint, nacflow's addition), marking
// it with v1alpha1.QuotaPausedAnnotation, and resumes it once there is room
// (deleted backups, retention's prunes — pruned names those of this look,
// not yet seen deleting) unless nas itself is paused. It sets condition
// WithinQuota (absent without a quota) with an event on each change.
// Errors: the API server's, retryable; a quota that does not decode is
// logged and treated as none.
func (f *SyncScheduleRuns) holdAtQuota(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, s *velerov1.Schedule, pruned []string) error {
	if s == nil {
		return nil
	}
	q, exceeded, err := scheduleQuota(ctx, op, f.tools.quotas, nas, pruned)
	if err != nil {
		return err
	}
	held := s.Annotations[v1alpha1.QuotaPausedAnnotation] != ""
	if !q.any() && !held {
		meta.RemoveStatusCondition(&nas.Status.Conditions, v1alpha1.ConditionWithinQuota)
		return nil
	}
	wasExceeded := meta.IsStatusConditionFalse(nas.Status.Conditions, v1alpha1.ConditionWithinQuota)
	before := s.DeepCopy()
	switch {
	case exceeded != "" && !held:
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[v1alpha1.QuotaPausedAnnotation] = "true"
		s.Spec.Paused = true
	case exceeded == "" && held:
		delete(s.Annotations, v1alpha1.QuotaPausedAnnotation)
		s.Spec.Paused = nas.Spec.Paused
	}
	if !equality.Semantic.DeepEqual(before, s) {
		if err := op.Client.Patch(ctx, s, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("pausing or resuming Velero Schedule %s/%s for the quota: %w", s.Namespace, s.Name, err)
		}
	}
	// Told once a change: CreateVeleroSchedule may have paused it already.
	switch {
	case exceeded != "" && !wasExceeded:
		f.event(nas, corev1.EventTypeWarning, EventQuotaExceeded, "schedule paused: its next run would pass the quota: "+exceeded)
	case exceeded == "" && held:
		f.event(nas, corev1.EventTypeNormal, EventScheduleResumed, "schedule resumed: the namespace has room for its next run under its quota")
	}
	if !q.any() {
		meta.RemoveStatusCondition(&nas.Status.Conditions, v1alpha1.ConditionWithinQuota)
		return nil
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionWithinQuota, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRoomForNextRun,
		Message: "the namespace has room for the next run under its quota", ObservedGeneration: nas.Generation}
	if exceeded != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonQuotaExceeded, "schedule paused until there is room: "+exceeded
	}
	meta.SetStatusCondition(&nas.Status.Conditions, cond)
	return nil
}

// holdForShare keeps nas's Velero Schedule s to the namespace's fair share
// of Velero's backup queue (maxInVelero, WaitForTurn's rule for
// NonAdminBackups): between runs s stays paused, marked with
// v1alpha1.SharePausedAnnotation; once its next run is due (Velero's rule,
// nextRun), the run asks for its turn (TurnKeeper.RunTurn) and, admitted,
// s is resumed with skipImmediately false, so that Velero takes that run
// at once; when the run's Backup appears its next run is no longer due and
// s is paused again. Without it five schedules of one namespace due in
// the same minute would put five Backups in Velero where the share is two.
// A schedule paused by its spec or held at the quota is left to those;
// without a share (maxInVelero 0 or no TurnKeeper) a share's hold is
// released and condition WithinShare removed. It returns how long until it
// should look again while a due run waits or was just admitted (0: at the
// next run). Errors: the API server's and the cache's, retryable.
func (f *SyncScheduleRuns) holdForShare(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, s *velerov1.Schedule, now time.Time) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	held := s.Annotations[v1alpha1.SharePausedAnnotation] != ""
	before := s.DeepCopy()
	patch := func(what string) error {
		if equality.Semantic.DeepEqual(before, s) {
			return nil
		}
		if err := op.Client.Patch(ctx, s, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("%s Velero Schedule %s/%s for the namespace's share of Velero's queue: %w", what, s.Namespace, s.Name, err)
		}
		return nil
	}
	quotaHeld := s.Annotations[v1alpha1.QuotaPausedAnnotation] != ""
	if f.maxInVelero <= 0 || f.tools.turns == nil || nas.Spec.Paused || quotaHeld {
		if held {
			delete(s.Annotations, v1alpha1.SharePausedAnnotation)
			s.Spec.Paused = nas.Spec.Paused || quotaHeld
		}
		if f.maxInVelero <= 0 || f.tools.turns == nil {
			meta.RemoveStatusCondition(&nas.Status.Conditions, v1alpha1.ConditionWithinShare)
		}
		return 0, patch("releasing")
	}
	pause := func() {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[v1alpha1.SharePausedAnnotation] = "true"
		s.Spec.Paused = true
	}
	due := nextRun(s)
	if due.IsZero() || now.Before(due) {
		// Not due (or never: Velero would not run it either): paused until
		// it is, when the NonAdminSchedule controller looks again.
		pause()
		setCondition(nas, v1alpha1.ConditionWithinShare, metav1.ConditionTrue, v1alpha1.ReasonRunsTakeTurns,
			fmt.Sprintf("each run takes its turn in Velero's queue: namespace %s has at most %d backups in Velero", nas.Namespace, f.maxInVelero))
		return 0, patch("pausing")
	}
	d, err := f.tools.turns.RunTurn(ctx, TurnRequest{Namespace: nas.Namespace, Name: nas.Name, Created: due, Velero: s.Name, Max: f.maxInVelero})
	if err != nil {
		return 0, fmt.Errorf("deciding the turn of schedule %s/%s's run in Velero's queue: %w", nas.Namespace, nas.Name, err)
	}
	if d.Admitted {
		if held || s.Spec.Paused {
			delete(s.Annotations, v1alpha1.SharePausedAnnotation)
			s.Spec.Paused = false
			// A pending skip would drop the very run admitted.
			s.Spec.SkipImmediately = new(bool)
		}
		setCondition(nas, v1alpha1.ConditionWithinShare, metav1.ConditionTrue, v1alpha1.ReasonRunsTakeTurns,
			fmt.Sprintf("the run due at %s has its turn in Velero's queue (namespace %s has at most %d backups in Velero)",
				due.UTC().Format(time.RFC3339), nas.Namespace, f.maxInVelero))
		// Velero's Backup for the run wakes the schedule; should Velero not
		// take the run (one of its own still running), the admission
		// expires and the next look decides again.
		return recheckTurn, patch("resuming")
	}
	pause()
	why := "full"
	if d.OtherFirst {
		why = "turn"
	}
	msg := fmt.Sprintf("the run due at %s is %s", due.UTC().Format(time.RFC3339), turnMessage(nas.Namespace, "backups", why, d, f.maxInVelero))
	if !meta.IsStatusConditionFalse(nas.Status.Conditions, v1alpha1.ConditionWithinShare) {
		f.event(nas, corev1.EventTypeNormal, EventRunWaitsForTurn, msg)
	}
	setCondition(nas, v1alpha1.ConditionWithinShare, metav1.ConditionFalse, v1alpha1.ReasonWaitingForTurn, msg)
	return recheckTurn, patch("pausing")
}

// scheduleQuota returns the quota of nas's namespace (quotas; nil: none)
// and, when it has one, why the schedule's next run would pass it ("" when
// it would not), leaving out the NonAdminBackups pruned names. Errors: the
// API server's; a quota that does not decode is logged and is none.
func scheduleQuota(ctx context.Context, op *engine.Operation, quotas QuotaSource, nas *v1alpha1.NonAdminSchedule, pruned []string) (*CheckQuotaArgs, string, error) {
	if quotas == nil {
		return nil, "", nil
	}
	q, source, err := quotas.Quota(ctx, op.NamespaceLabels)
	if err != nil {
		log.FromContext(ctx).Error(err, "reading the namespace's quota: schedules are not held to it", "blueprint", source)
		return nil, "", nil
	}
	if !q.any() {
		return nil, "", nil
	}
	location := ""
	if t := nas.Spec.Template.BackupSpec; t != nil {
		location = t.StorageLocation
	}
	location = v1alpha1.LocationName(location)
	all, here, err := namespaceUsage(ctx, op.Client, nas.Namespace, location, func(n *v1alpha1.NonAdminBackup) bool { return slices.Contains(pruned, n.Name) })
	if err != nil {
		return nil, "", err
	}
	exceeded, _ := q.check(all, here, nas.Namespace, location)
	return q, exceeded, nil
}

// scheduleZone returns the time zone of a cron schedule: its CRON_TZ= or
// TZ= prefix (robfig/cron's, which Velero uses), else UTC; a zone that
// does not load is UTC too.
func scheduleZone(schedule string) *time.Location {
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(schedule, prefix); ok {
			name, _, _ := strings.Cut(rest, " ")
			if loc, err := time.LoadLocation(name); err == nil {
				return loc
			}
		}
	}
	return time.UTC
}

// describeRetention says a retention in words ("keepLast 2, daily 7;
// failed keepLast 1"), with the admin's bound and where it came from.
func describeRetention(r *v1alpha1.ScheduleRetention, maxKeep int, admins bool) string {
	var parts []string
	for _, f := range []struct {
		name string
		n    int32
	}{{"keepLast", r.KeepLast}, {"hourly", r.Hourly}, {"daily", r.Daily}, {"weekly", r.Weekly}, {"monthly", r.Monthly}, {"yearly", r.Yearly}} {
		if f.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f.name, f.n))
		}
	}
	s := strings.Join(parts, ", ")
	if s == "" {
		s = "every run"
	}
	if r.Failed != nil {
		s += fmt.Sprintf("; failed keepLast %d", r.Failed.KeepLast)
	}
	if maxKeep > 0 {
		s += fmt.Sprintf("; at most %d (the admin's maxKeep)", maxKeep)
	}
	if admins {
		s += " (the admin's default)"
	}
	return s
}

// Doc implements engine.Documented.
func (*SyncScheduleRuns) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Follows a NonAdminSchedule's Velero Schedule: mirrors its status; claims every Backup it took for a NonAdminBackup of its own (NAB origin label and annotations; a Backup naming another namespace is never taken) and creates that NAB in the schedule's namespace, linked in status and adopted; lists the newest runs in status.recentBackups; sets status.nextRun (Velero's rule) and condition RPOMet from status.rpo, with an RPOMissed or RPOMet event when it changes; prunes runs spec.retention (or args.defaultRetention, bounded by args.maxKeep) does not keep (spec.deleteBackup, PrunedBackup events, status.retention); pauses the Velero Schedule while its next run would pass the namespace's quota (CheckQuota's args in the namespace's NonAdminBackup blueprint; condition WithinQuota, QuotaExceeded and ScheduleResumed events) and resumes it when there is room; under the fair share of Velero's queue (--max-backups-in-velero-per-namespace) keeps the Velero Schedule paused between runs and resumes it for a due run only once that run has its turn (condition WithinShare, a RunWaitsForTurn event while it waits). Runs come after the plan has ended: the controller runs this phase again on every look at the schedule.",
		Outputs: []string{"runs: how many runs the schedule has"},
		Errors:  "a run the safety rule refuses to claim is left alone; " + apiRetried,
	}
}
