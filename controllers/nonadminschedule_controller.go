package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/staleness"
)

// Event reasons of NonAdminSchedules.
const (
	// EventRPOMissed (Warning): RPOMet turned False; the message says why.
	EventRPOMissed = "RPOMissed"
	// EventRPOMet (Normal): RPOMet turned True again.
	EventRPOMet = "RPOMet"
	// EventScheduledBackup (Normal): a run's NonAdminBackup was created.
	EventScheduledBackup = "ScheduledBackup"
)

// DefaultRunCheckPeriod bounds how long a NonAdminSchedule goes without a
// look when nothing wakes it: the RPO and next run are re-evaluated at
// least this often.
const DefaultRunCheckPeriod = 5 * time.Minute

// NonAdminScheduleReconciler runs the nonadminschedule blueprint for each
// NonAdminSchedule (OADP NAC's NonAdminSchedule): the create action makes
// or updates the Velero Schedule, re-run on every spec change (the plan's
// revision is the generation); finalize removes it. After each run it
// turns every Backup the Velero Schedule took into a NonAdminBackup of the
// namespace (claiming the Backup with a NACUUID of its own, then the adopt
// action links the NAB, as backup sync does), mirrors the schedule's
// status, lists the newest runs, computes the next run, and judges the
// recovery-point objective (condition RPOMet, an event when it changes).
type NonAdminScheduleReconciler struct {
	Deps
	// TenantSpec returns the spec the NonAdminBackup of a run asks for,
	// given its Velero Backup's spec (BackupSync.TenantSpec; cmd wires
	// phases.SyncedBackupSpec). Required.
	TenantSpec func(spec *velerov1.BackupSpec, namespace string) (*velerov1.BackupSpec, map[string][]string)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// CheckPeriod is DefaultRunCheckPeriod when 0.
	CheckPeriod time.Duration

	reads staleness.Tracker
}

// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminschedules,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminschedules/status;nonadminschedules/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=schedules,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=oadp.openshift.io,resources=nonadminbackups/status,verbs=get;update;patch

// Reconcile moves one NonAdminSchedule forward with the shared NAC loop,
// then looks again at the RPO deadline, the next run, or CheckPeriod,
// whichever comes first.
func (r *NonAdminScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var wake time.Time
	found := false
	res, err := reconcileNAC(ctx, &r.Deps, &r.reads, nacKind[*v1alpha1.NonAdminSchedule]{
		actionFor: finalizeOr[*v1alpha1.NonAdminSchedule](ActionCreate),
		refs:      scheduleRefs,
		revision: func(_ context.Context, n *v1alpha1.NonAdminSchedule) (string, error) {
			if !n.DeletionTimestamp.IsZero() {
				return "", nil
			}
			return fmt.Sprintf("generation %d", n.Generation), nil
		},
		begin: func(*v1alpha1.NonAdminSchedule) { found = true },
		afterRun: func(ctx context.Context, n *v1alpha1.NonAdminSchedule, action string, finished bool) error {
			if action != ActionCreate {
				return nil
			}
			var err error
			wake, err = r.afterCreate(ctx, n, finished)
			return err
		},
	}, req)
	if err != nil || !found {
		// Gone (or not read): nothing to look at again.
		return res, err
	}
	period := r.CheckPeriod
	if period <= 0 {
		period = DefaultRunCheckPeriod
	}
	after := period
	if !wake.IsZero() {
		if d := wake.Sub(r.now()) + time.Second; d < after {
			after = max(d, time.Second)
		}
	}
	if res.RequeueAfter == 0 || res.RequeueAfter > after {
		res.RequeueAfter = after
	}
	return res, nil
}

func (r *NonAdminScheduleReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// afterCreate follows the Velero Schedule once the plan made it: its runs
// become NonAdminBackups, the status lists them, and the next run and the
// RPO are computed. It returns when to look again (the next run or the RPO
// deadline, zero for none).
func (r *NonAdminScheduleReconciler) afterCreate(ctx context.Context, nas *v1alpha1.NonAdminSchedule, finished bool) (time.Time, error) {
	vs := nas.Status.VeleroSchedule
	if vs == nil || vs.Name == "" {
		return time.Time{}, nil
	}
	if finished && nas.Spec.SkipImmediately && nas.Status.Plan != nil && nas.Status.Plan.State == v1alpha1.PlanComplete {
		// Velero has the skip: the edge trigger is reset (OADP NAC's
		// behaviour). A copy is patched so that the status being written
		// stays as it is.
		cp := nas.DeepCopy()
		if err := r.Client.Patch(ctx, cp, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"skipImmediately":false}}`))); err != nil {
			return time.Time{}, fmt.Errorf("resetting spec.skipImmediately: %w", err)
		}
	}
	s := &velerov1.Schedule{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: vs.Namespace, Name: vs.Name}, s)
	switch {
	case apierrors.IsNotFound(err):
		s = nil
	case err != nil:
		return time.Time{}, fmt.Errorf("reading Velero Schedule %s/%s: %w", vs.Namespace, vs.Name, err)
	case s.Labels[v1alpha1.NasOriginNACUUIDLabel] != vs.NACUUID:
		return time.Time{}, fmt.Errorf("velero Schedule %s/%s does not carry this schedule's NACUUID %s", vs.Namespace, vs.Name, vs.NACUUID)
	default:
		vs.Status = s.Status.DeepCopy()
	}
	runs, err := r.syncRuns(ctx, nas)
	if err != nil {
		return time.Time{}, err
	}
	now := r.now()
	nas.Status.NextRun = nil
	if s != nil && !nas.Spec.Paused {
		if next := nextRun(s); !next.IsZero() {
			nas.Status.NextRun = &metav1.Time{Time: next}
		}
	}
	wake := time.Time{}
	if nas.Status.NextRun != nil {
		wake = nas.Status.NextRun.Time
	}
	if d := r.judgeRPO(nas, runs, now); !d.IsZero() && d.After(now) && (wake.IsZero() || d.Before(wake)) {
		wake = d
	}
	return wake, nil
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
func (r *NonAdminScheduleReconciler) syncRuns(ctx context.Context, nas *v1alpha1.NonAdminSchedule) ([]run, error) {
	vs := nas.Status.VeleroSchedule
	list := &velerov1.BackupList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.OADPNamespace), client.MatchingLabels{v1alpha1.NasOriginNACUUIDLabel: vs.NACUUID}); err != nil {
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
		name, err := r.claim(ctx, nas, b)
		if err != nil {
			return nil, err
		}
		if name == "" {
			continue
		}
		if err := r.ensureNAB(ctx, nas, b, name); err != nil {
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
// any other backup. It returns the run's NAB name ("" when b carries
// another NAB's origin: left alone).
func (r *NonAdminScheduleReconciler) claim(ctx context.Context, nas *v1alpha1.NonAdminSchedule, b *velerov1.Backup) (string, error) {
	if b.Labels[v1alpha1.NabOriginNACUUIDLabel] != "" {
		if b.Annotations[v1alpha1.NabOriginNamespaceAnnotation] != nas.Namespace {
			return "", nil
		}
		return b.Annotations[v1alpha1.NabOriginNameAnnotation], nil
	}
	name := runName(nas, b)
	patch := map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{v1alpha1.NabOriginNACUUIDLabel: NACUUID(b.UID)},
		"annotations": map[string]string{v1alpha1.NabOriginNamespaceAnnotation: nas.Namespace, v1alpha1.NabOriginNameAnnotation: name},
	}}
	data, err := json.Marshal(patch)
	if err != nil {
		return "", err
	}
	if err := r.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, data)); err != nil {
		return "", fmt.Errorf("claiming Velero Backup %s of schedule %s: %w", b.Name, nas.Status.VeleroSchedule.Name, err)
	}
	return name, nil
}

// ensureNAB creates the NonAdminBackup name of run b when it is missing:
// labelled with the schedule (oadp.openshift.io/nonadminschedule and the
// schedule's NACUUID) and the sync label, its spec the run's Velero spec as
// a tenant would write it, storageLocation the template's tenant location;
// its status links b, and the adopt action does the rest. A NAB of that
// name that is not the run's own is left alone.
func (r *NonAdminScheduleReconciler) ensureNAB(ctx context.Context, nas *v1alpha1.NonAdminSchedule, b *velerov1.Backup, name string) error {
	nacuuid := b.Labels[v1alpha1.NabOriginNACUUIDLabel]
	if nacuuid == "" {
		nacuuid = NACUUID(b.UID)
	}
	existing := &v1alpha1.NonAdminBackup{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: nas.Namespace, Name: name}, existing)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading NonAdminBackup %s/%s: %w", nas.Namespace, name, err)
	}
	if r.TenantSpec == nil {
		return fmt.Errorf("NonAdminScheduleReconciler.TenantSpec is not set")
	}
	labels := map[string]string{
		v1alpha1.NabSyncedFromNACUUIDLabel: nacuuid,
		v1alpha1.NasOriginNACUUIDLabel:     nas.Status.VeleroSchedule.NACUUID,
	}
	if len(validation.IsValidLabelValue(nas.Name)) == 0 {
		labels[v1alpha1.NonAdminScheduleLabel] = nas.Name
	}
	spec, _ := r.TenantSpec(&b.Spec, nas.Namespace)
	spec.StorageLocation = b.Annotations[v1alpha1.NasOriginStorageLocationAnnotation]
	nab := &v1alpha1.NonAdminBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: nas.Namespace, Name: name, Labels: labels},
		Spec:       v1alpha1.NonAdminBackupSpec{BackupSpec: spec},
	}
	created, err := createLinkedNAB(ctx, r.Client, nab, b, nacuuid)
	if err != nil || !created {
		return err
	}
	log.FromContext(ctx).Info("created the NonAdminBackup of a scheduled run", "nonAdminBackup", name, "veleroBackup", b.Name)
	r.Recorder.Eventf(nas, corev1.EventTypeNormal, EventScheduledBackup, "Velero Backup %s of this schedule is NonAdminBackup %s", b.Name, name)
	return nil
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
// emits an event when it changes; it returns the RPO's deadline.
func (r *NonAdminScheduleReconciler) judgeRPO(nas *v1alpha1.NonAdminSchedule, runs []run, now time.Time) time.Time {
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
			r.Recorder.Event(nas, corev1.EventTypeWarning, EventRPOMissed, v.Message)
		case old != nil:
			r.Recorder.Event(nas, corev1.EventTypeNormal, EventRPOMet, v.Message)
		}
	}
	if v.Met {
		return v.Deadline
	}
	return time.Time{}
}

// SetupWithManager registers the controller: NonAdminSchedules (spec
// changes), their Velero Schedules and the Backups those take.
func (r *NonAdminScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b, err := nacController[*v1alpha1.NonAdminSchedule](mgr, &r.Deps)
	if err != nil {
		return err
	}
	// A Backup the Velero Schedule took carries the schedule's origin keys,
	// which Velero copies.
	made := builder.WithPredicates(madeForKind[*v1alpha1.NonAdminSchedule](r.OADPNamespace))
	return b.
		Watches(&velerov1.Schedule{}, toOrigin[*v1alpha1.NonAdminSchedule](), made).
		Watches(&velerov1.Backup{}, toOrigin[*v1alpha1.NonAdminSchedule](), made).
		Complete(r)
}
