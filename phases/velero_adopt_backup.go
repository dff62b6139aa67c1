package phases

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// AdoptVeleroBackupArgs are the args of AdoptVeleroBackup.
type AdoptVeleroBackupArgs struct {
	// NACUUID of the Velero Backup to adopt, usually the NAB's
	// openshift.io/oadp-nab-synced-from-nacuuid label.
	NACUUID string `json:"nacuuid" doc:"NACUUID of the Velero Backup to adopt (the NAB's sync label)"`
}

// AdoptVeleroBackup links a NonAdminBackup made by backup sync to the
// existing Velero Backup it was made from, creating nothing. The Velero
// Backup is found by its openshift.io/oadp-nab-origin-nacuuid label in the
// OADP namespace and must have been made for this very NAB (its
// origin-namespace and origin-name annotations): a NAB that claims another
// tenant's backup — a forged sync label, or a forged status — is refused,
// and its NACUUID is never taken over, so its deletion can never touch the
// other tenant's objects. The label is
// honoured only on NABs backup sync made: backup sync records the backup in
// status.veleroBackup.nacuuid right after creating the NAB (the status
// subresource, which tenant roles cannot write); a NAB whose status does not
// record args.nacuuid is waited for during SyncRecordGrace after its
// creation, then refused. A refusal is recorded like every other
// (status.phase BackingOff, Accepted=False with reason InvalidSyncLabel). On
// success it records status.veleroBackup (nacuuid, name, namespace),
// status.specHash (see ValidateBackupSpec), status.phase Created and
// Queued=True.
//
// Outputs: name. Errors: no such backup or another namespace's backup is
// a terminal refusal; API errors are retryable.
type AdoptVeleroBackup struct{}

// SyncRecordGrace is how long AdoptVeleroBackup waits, after a NAB's
// creation, for backup sync to record the backup it was made from in the
// NAB's status, before it refuses the sync label as not set by backup sync.
const SyncRecordGrace = 10 * time.Second

// Run implements phaseFunc.
func (f *AdoptVeleroBackup) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *AdoptVeleroBackupArgs) (engine.Result, error) {
	if a.NACUUID == "" {
		return engine.Result{}, engine.Terminalf("AdoptVeleroBackup: args.nacuuid is empty")
	}
	list := &velerov1.BackupList{}
	if err := listLabelled(ctx, op.APIReader, op, list, v1alpha1.NabOriginNACUUIDLabel, a.NACUUID); err != nil {
		return engine.Result{}, fmt.Errorf("listing Velero Backups of %s: %w", a.NACUUID, err)
	}
	// Only a Backup made for this very NAB — its origin namespace and name
	// annotations, which only nacflow, Velero and the admin write — can be
	// adopted: a NACUUID is no secret, and Backups synced from a tenant's
	// own bucket carry whatever labels the tenant wrote there.
	var ofNamespace, mine []*velerov1.Backup
	for i := range list.Items {
		if b := &list.Items[i]; b.Annotations[v1alpha1.NabOriginNamespaceAnnotation] == nab.Namespace {
			ofNamespace = append(ofNamespace, b)
			if b.Annotations[v1alpha1.NabOriginNameAnnotation] == nab.Name {
				mine = append(mine, b)
			}
		}
	}
	if len(list.Items) > 0 && len(ofNamespace) == 0 {
		return engine.Result{}, refuse(nab, v1alpha1.ReasonInvalidSyncLabel, fmt.Errorf("label %s: refused: the Velero Backup with NACUUID %s was not made for namespace %s",
			v1alpha1.NabSyncedFromNACUUIDLabel, a.NACUUID, nab.Namespace))
	}
	if vb := nab.Status.VeleroBackup; len(ofNamespace) > 0 && (vb == nil || vb.NACUUID != a.NACUUID) {
		// Backup sync records the backup in status (tenant roles cannot
		// write status) right after creating the NAB.
		if time.Since(nab.CreationTimestamp.Time) < SyncRecordGrace {
			return engine.Wait("waiting for backup sync to record the Velero Backup in status.veleroBackup.nacuuid", time.Second), nil
		}
		return engine.Result{}, refuse(nab, v1alpha1.ReasonInvalidSyncLabel, fmt.Errorf("label %s: honoured only on NonAdminBackups made by backup sync, "+
			"which records the Velero Backup in status.veleroBackup.nacuuid; this one was not: remove the label to make a new backup",
			v1alpha1.NabSyncedFromNACUUIDLabel))
	}
	// Status is no proof where tenants are granted the status subresource:
	// the Backup's own annotations must name this NAB.
	if len(ofNamespace) > 0 && len(mine) == 0 {
		return engine.Result{}, refuse(nab, v1alpha1.ReasonInvalidSyncLabel, fmt.Errorf("label %s: refused: the Velero Backup with NACUUID %s was made for NonAdminBackup %s/%s, not %s",
			v1alpha1.NabSyncedFromNACUUIDLabel, a.NACUUID, nab.Namespace, ofNamespace[0].Annotations[v1alpha1.NabOriginNameAnnotation], nab.Name))
	}
	if len(mine) != 1 {
		return engine.Result{}, refuse(nab, v1alpha1.ReasonInvalidSyncLabel, fmt.Errorf("label %s: found %d Velero Backups with NACUUID %s, need exactly one",
			v1alpha1.NabSyncedFromNACUUIDLabel, len(mine), a.NACUUID))
	}
	b := mine[0]
	nab.Status.Phase = v1alpha1.NonAdminPhaseCreated
	nab.Status.VeleroBackup = &v1alpha1.VeleroBackup{NACUUID: a.NACUUID, Name: b.Name, Namespace: b.Namespace, Spec: b.Spec.DeepCopy()}
	// The spec the NAB was made with: a later edit is reported, as for a
	// NAB that was validated.
	nab.Status.SpecHash = v1alpha1.SpecHash(nab.Spec.BackupSpec)
	setCondition(nab, v1alpha1.ConditionQueued, metav1.ConditionTrue, v1alpha1.ReasonBackupScheduled,
		fmt.Sprintf("Adopted existing Velero Backup object %s", b.Name))
	return engine.Done(fmt.Sprintf("Adopted Velero Backup %s/%s (created nothing)", b.Namespace, b.Name), map[string]string{"name": b.Name}), nil
}

// Doc implements engine.Documented.
func (*AdoptVeleroBackup) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Links a NonAdminBackup made by backup sync to the existing Velero Backup with NACUUID args.nacuuid, creating nothing; refuses a backup not made for this very NAB (origin namespace and name annotations).",
		Outputs: []string{"name: the Velero Backup"},
		Errors:  "no such backup, or another namespace's or NAB's backup, is terminal; " + apiRetried,
	}
}
