package phases

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CreateVeleroSchedule creates the Velero Schedule of a NonAdminSchedule in
// the OADP namespace, or brings the one this schedule already has (its
// NACUUID label) up to date, so that spec edits, paused and skipImmediately
// reach Velero without a second schedule (OADP NAC's NonAdminSchedule
// controller). The name is <namespace>-<name>-<NACUUID> (at most 63
// characters); labels are the NAC labels and openshift.io/oadp-nas-origin-
// nacuuid, annotations the origin name and namespace and
// openshift.io/oadp-nas-origin-storage-location (the tenant's location of
// the template, "" for the admin's default). Velero copies the labels and
// annotations onto every Backup the schedule takes, which is how each run
// becomes a NonAdminBackup of the namespace. The spec is the one
// ValidateScheduleSpec accepted (status.veleroSchedule.spec), with
// includedNamespaces set to the namespace, the NAC kinds and OADP's
// cluster-scoped list excluded, no template metadata and
// useOwnerReferencesInBackup false (runs outlive the schedule).
// skipImmediately true is passed on; false leaves Velero's own value until
// Velero clears it (a pending skip is never cancelled).
//
// Outputs: name, namespace. Errors: terminal without an accepted spec or
// when an object of that name belongs to something else; API errors are
// retryable.
type CreateVeleroSchedule struct {
	tools tools
	// maxInVelero is --max-backups-in-velero-per-namespace: with a share
	// (and a TurnKeeper) the schedule is created paused, its runs taking
	// turns (SyncScheduleRuns.holdForShare).
	maxInVelero int
}

// Run implements phaseFunc.
func (f *CreateVeleroSchedule) Run(ctx context.Context, op *engine.Operation, nas *v1alpha1.NonAdminSchedule, extra *ObjectMetaArgs) (engine.Result, error) {
	vs := nas.Status.VeleroSchedule
	if vs == nil || vs.Spec == nil {
		return engine.Result{}, engine.Terminalf("CreateVeleroSchedule: no accepted schedule spec in status.veleroSchedule.spec (run ValidateScheduleSpec first)")
	}
	labels, annotations := op.OwnerMeta()
	extra.apply(labels, annotations)
	location := ""
	if t := nas.Spec.Template.BackupSpec; t != nil {
		location = t.StorageLocation
	}
	annotations[v1alpha1.NasOriginStorageLocationAnnotation] = location
	spec := vs.Spec.DeepCopy()
	spec.Template.IncludedNamespaces = []string{nas.Namespace}
	spec.Template.Metadata = velerov1.Metadata{}
	excludeForTenant(&spec.Template)
	spec.UseOwnerReferencesInBackup = new(bool)
	spec.SkipImmediately = nil
	if nas.Spec.SkipImmediately {
		spec.SkipImmediately = new(bool)
		*spec.SkipImmediately = true
	}
	want := &velerov1.Schedule{
		ObjectMeta: metav1.ObjectMeta{
			Name:        v1alpha1.NACObjectName(nas.Namespace, nas.Name, op.UUID),
			Namespace:   op.OADPNamespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: *spec,
	}
	// A namespace at its quota gets its schedule paused from the start, not
	// after a run it has no room for (SyncScheduleRuns resumes it).
	if _, exceeded, err := scheduleQuota(ctx, op, f.tools.quotas, nas, nil); err != nil {
		return engine.Result{}, err
	} else if exceeded != "" {
		want.Spec.Paused = true
		want.Annotations[v1alpha1.QuotaPausedAnnotation] = "true"
	}
	// Each run takes its turn in Velero's queue: paused until the first is
	// due and admitted (SyncScheduleRuns resumes it for that run).
	if f.maxInVelero > 0 && f.tools.turns != nil && !nas.Spec.Paused && want.Annotations[v1alpha1.QuotaPausedAnnotation] == "" {
		want.Spec.Paused = true
		want.Annotations[v1alpha1.SharePausedAnnotation] = "true"
	}
	obj, verb, err := createOrAdoptOwn(ctx, op, f.tools.recent, "Velero Schedule", want, &velerov1.ScheduleList{})
	if err != nil {
		return engine.Result{}, err
	}
	got := obj.(*velerov1.Schedule)
	if verb == "Adopted" {
		if !nas.Spec.SkipImmediately {
			want.Spec.SkipImmediately = got.Spec.SkipImmediately
		}
		// Held at the namespace's quota (SyncScheduleRuns.holdAtQuota):
		// stays paused until there is room, whatever the spec says.
		if got.Annotations[v1alpha1.QuotaPausedAnnotation] != "" {
			want.Spec.Paused = true
		}
		// Between runs under the share, or resumed for an admitted run:
		// as SyncScheduleRuns.holdForShare left it.
		if want.Annotations[v1alpha1.SharePausedAnnotation] != "" {
			want.Spec.Paused = got.Spec.Paused
			if got.Annotations[v1alpha1.SharePausedAnnotation] == "" {
				delete(want.Annotations, v1alpha1.SharePausedAnnotation)
			}
		}
		changed := !reflect.DeepEqual(got.Spec, want.Spec)
		merged := maps.Clone(got.Annotations)
		if merged == nil {
			merged = map[string]string{}
		}
		maps.Copy(merged, annotations)
		if changed || !maps.Equal(merged, got.Annotations) {
			got.Spec, got.Annotations = want.Spec, merged
			if err := op.Client.Update(ctx, got); err != nil {
				return engine.Result{}, fmt.Errorf("updating Velero Schedule %s/%s: %w", got.Namespace, got.Name, err)
			}
			verb = "Updated"
		}
	}
	if nas.Status.Phase != v1alpha1.NonAdminPhaseDeleting {
		nas.Status.Phase = v1alpha1.NonAdminPhaseCreated
	}
	vs.NACUUID, vs.Name, vs.Namespace = op.UUID, got.Name, got.Namespace
	vs.Status = got.Status.DeepCopy()
	return engine.Done(fmt.Sprintf("%s Velero Schedule %s/%s", verb, got.Namespace, got.Name),
		map[string]string{"name": got.Name, "namespace": got.Namespace}), nil
}

// Doc implements engine.Documented.
func (*CreateVeleroSchedule) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates the Velero Schedule <ns>-<name>-<nacuuid> in the OADP namespace from status.veleroSchedule.spec (includedNamespaces the tenant's, NAC kinds and OADP's cluster-scoped list excluded, no template metadata, useOwnerReferencesInBackup false), or updates the schedule's own one in place; labels and origin annotations (with the tenant's storage location) that Velero copies onto every run. skipImmediately true is passed on. Under the fair share of Velero's queue (--max-backups-in-velero-per-namespace) it is created paused (openshift.io/oadp-nacflow-paused-by-share) and an update keeps the pause SyncScheduleRuns set.",
		Outputs: []string{"name: the Velero Schedule", "namespace: the OADP namespace"},
		Errors:  "no accepted spec, and a name held by another operation's object, are terminal; " + apiRetried,
	}
}
