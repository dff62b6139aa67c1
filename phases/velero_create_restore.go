package phases

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/restorejudge"
)

// CreateVeleroRestoreArgs are the args of CreateVeleroRestore.
type CreateVeleroRestoreArgs struct {
	// BackupName is the Velero Backup to restore, usually
	// {{ .Phases.<wait phase>.Output.name }}.
	BackupName string `json:"backupName" doc:"the Velero Backup to restore, usually {{ .Phases.<wait phase>.Output.name }}"`
	// BackupUID pins the Velero Backup: one of that name with another UID
	// (deleted and made again since the wait saw it) is refused. Usually
	// {{ .Phases.<wait phase>.Output.uid }}; empty: not pinned.
	BackupUID string `json:"backupUID,omitempty" doc:"the Velero Backup's UID, usually {{ .Phases.<wait phase>.Output.uid }}: a Backup of that name with another UID is refused (empty: not pinned)"`
	// ObjectMetaArgs: optional labels and annotations for the Velero Restore.
	ObjectMetaArgs `json:",inline"`
}

// CreateVeleroRestore creates the Velero Restore of a NonAdminRestore in the
// OADP namespace (or adopts it, as CreateVeleroBackup does): named
// v1alpha1.NACObjectName(ns, name, nacuuid), labelled
// openshift.io/oadp-nar-origin-nacuuid with the origin annotations, from the
// accepted restoreSpec (status.veleroRestore.spec; when none is recorded,
// the current spec, decided on again as ValidateRestoreSpec does) with backupName =
// args.backupName, includedNamespaces = [own namespace] and the NAC kinds,
// volumesnapshotclasses and ClusterExcludedResources excluded (restoreExcluded;
// persistentvolumes stay restorable through their claims, as Velero does
// when includeClusterResources is unset — except for a backup kept in a
// bucket the tenant writes, inTenantBucket: its PersistentVolumes are
// excluded too, so that Velero never creates a volume from a native
// snapshot ID that bucket names). The Velero Backup must belong to the
// NonAdminRestore's namespace (its origin annotation): a tenant never
// restores another tenant's backup, whatever a blueprint renders. The
// Restore carries restorepolicy.TenantRoleAnnotation and AdminOwnedAnnotation
// when --tenant-role or --admin-owned-resources differ from their defaults
// (a blueprint's args.annotations may set them too), which Velero's plugin
// velero-plugin-nacflow follows on every item (defaults when absent), and
// restorepolicy.RequesterAnnotation with the verified requester (Requesters),
// as whom the plugin checks every item too. What the restore was decided on
// is pinned for the plugin: the Velero Backup's UID
// (v1alpha1.RestoreBackupUIDAnnotation; args.backupUID, when given, must be
// that UID), the tenant's resource modifiers as their requester asked for
// them (requesterVerdict.recordedModifiers: copied immutable into the OADP
// namespace, their digest in v1alpha1.RestoreModifiersDigestAnnotation; the
// accepted spec never names a tenant's ConfigMap) and, for a backup kept in
// a bucket a tenant writes restored as its requester, the record of the
// items nacflow verified (itemdigest.RestoreAnnotation; refused without
// one). Sets status.phase Created and Queued=True/RestoreScheduled.
//
// Outputs: name. Errors: a foreign, missing or replaced backup, a current
// spec that breaks a rule of ValidateRestoreSpec, modifiers other than the
// requester asked for, a tenant bucket's backup without a record of its
// verified items and a name taken by another object are terminal; API
// errors are retryable.
type CreateVeleroRestore struct {
	restoreRules
	tools tools
	// validate decides again when no accepted spec is recorded (its zero
	// value reads no DPA).
	validate ValidateRestoreSpec
}

// Run implements phaseFunc.
func (f *CreateVeleroRestore) Run(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, a *CreateVeleroRestoreArgs) (engine.Result, error) {
	if a.BackupName == "" {
		return engine.Result{}, engine.Terminalf("CreateVeleroRestore: args.backupName is empty")
	}
	backup, err := pinnedBackup(ctx, op, nar, a)
	if err != nil {
		return engine.Result{}, err
	}
	bucketOnly, err := inTenantBucket(ctx, op, backup)
	if err != nil {
		return engine.Result{}, err
	}
	spec, wait, err := f.restoreSpec(ctx, op, nar)
	if wait != nil || err != nil {
		return orZero(wait), err
	}
	note := scopeRestore(spec, nar.Namespace, backup, bucketOnly)
	meta := op.ObjectMeta(v1alpha1.NACObjectName(nar.Namespace, nar.Name, op.UUID))
	// velero-plugin-nacflow restores nothing of a Backup with another UID.
	meta.Annotations[v1alpha1.RestoreBackupUIDAnnotation] = string(backup.UID)
	if err := f.pinJudgement(ctx, op, nar, backup, bucketOnly, spec, meta); err != nil {
		return engine.Result{}, err
	}
	f.pluginSettings(meta.Annotations)
	want := &velerov1.Restore{ObjectMeta: meta, Spec: *spec}
	a.apply(want.Labels, want.Annotations)
	obj, verb, err := createOrAdoptOwn(ctx, op, f.tools.recent, "Velero Restore", want, &velerov1.RestoreList{})
	if err != nil {
		return engine.Result{}, err
	}
	got := obj.(*velerov1.Restore)
	nar.Status.Phase = v1alpha1.NonAdminPhaseCreated
	if nar.Status.VeleroRestore == nil {
		nar.Status.VeleroRestore = &v1alpha1.VeleroRestore{}
	}
	nar.Status.VeleroRestore.NACUUID, nar.Status.VeleroRestore.Name, nar.Status.VeleroRestore.Namespace = op.UUID, got.Name, got.Namespace
	setCondition(nar, v1alpha1.ConditionQueued, metav1.ConditionTrue, v1alpha1.ReasonRestoreScheduled,
		fmt.Sprintf("Created Velero Restore object %s", got.Name))
	return engine.Done(fmt.Sprintf("%s Velero Restore %s/%s of Velero Backup %s%s", verb, got.Namespace, got.Name, a.BackupName, note),
		map[string]string{"name": got.Name}), nil
}

// pinnedBackup reads the Velero Backup args.backupName of the OADP
// namespace: it must be the one the wait saw (args.backupUID, when given)
// and belong to nar's namespace (its origin annotation), else the restore
// is refused. Errors: the refusals (terminal), the API server's.
func pinnedBackup(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, a *CreateVeleroRestoreArgs) (*velerov1.Backup, error) {
	backup := &velerov1.Backup{}
	if err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: a.BackupName}, backup); err != nil {
		return nil, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, a.BackupName, err)
	}
	if a.BackupUID != "" && string(backup.UID) != a.BackupUID {
		return nil, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec,
			fmt.Errorf("spec.restoreSpec.backupName: Velero Backup %s was replaced since the restore waited for it (UID %s, now %s): refusing to restore another backup than the one checked", a.BackupName, a.BackupUID, backup.UID))
	}
	if origin := backup.Annotations[v1alpha1.NabOriginNamespaceAnnotation]; origin != nar.Namespace {
		return nil, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec,
			fmt.Errorf("spec.restoreSpec.backupName: Velero Backup %s does not belong to namespace %s: refusing to restore it", a.BackupName, nar.Namespace))
	}
	return backup, nil
}

// restoreSpec returns a copy of nar's accepted restore spec, or, when no
// accepted spec survived, the current spec decided on again (a wait for
// the DPA's settings, or the refusal, otherwise). OADP's CRDs prune
// status.veleroRestore.spec between reconciles, and the wait for the
// backup lies between validate and here. The spec as it is now is the
// tenant's to edit, so it is decided on again, as validate would (the
// DPA's enforced values too: OADP's CRDs have no Blueprints to enforce
// others): an edit made during the wait (a namespaceMapping into another
// tenant's namespace, say) never reaches Velero.
func (f *CreateVeleroRestore) restoreSpec(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore) (*velerov1.RestoreSpec, *engine.Result, error) {
	if vr := nar.Status.VeleroRestore; vr != nil && vr.Spec != nil {
		return vr.Spec.DeepCopy(), nil, nil
	}
	d, err := f.validate.decide(ctx, op, nar, nil)
	if err != nil {
		wait, err := waitForSettings(err)
		return nil, &wait, err
	}
	if d.refusal != nil {
		return nil, nil, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, d.refusal)
	}
	return d.effective, nil, nil
}

// scopeRestore confines spec to Velero Backup backup and namespace ns:
// backupName, includedNamespaces, and the resources every tenant restore
// excludes (restoreExcluded) — PersistentVolumes too when the backup is
// kept in a bucket the tenant writes (bucketOnly), which the returned note
// says. Velero restores a PersistentVolume from the native snapshot the
// bucket's volume snapshot list names, with the admin's snapshot
// credentials, before any restore item action sees it: kept out here,
// Velero never reads that list for this restore. Its claims get new
// volumes (velero-plugin-nacflow), which file-system backup and the data
// mover fill from the bucket.
func scopeRestore(spec *velerov1.RestoreSpec, ns string, backup *velerov1.Backup, bucketOnly bool) (note string) {
	spec.BackupName = backup.Name
	spec.IncludedNamespaces = []string{ns}
	excluded := restoreExcluded
	if bucketOnly {
		excluded = append(slices.Clone(excluded), "persistentvolumes")
		note = fmt.Sprintf(pvExcludedNote+": Velero Backup %s is kept in a bucket the tenant writes (location %q), so its volumes come back only from data in that bucket (file-system backup, data mover), never from a snapshot it names", backup.Name, backup.Spec.StorageLocation)
	}
	for _, r := range excluded {
		if !slices.Contains(spec.ExcludedResources, r) {
			spec.ExcludedResources = append(spec.ExcludedResources, r)
		}
	}
	return note
}

// pinJudgement writes on meta, the Velero Restore's, what
// velero-plugin-nacflow judges its items by, as validated and checked:
// the verified requester (verifiedRequester: a record forged after
// validation, where no webhook keeps it, never reaches the plugin), the
// record of the items nacflow verified when the restore needs one
// (restorejudge.NeedsRecord; refused without one: the pre-check, which may
// be off, refuses a tarball changed since) and the tenant's resource
// modifiers as their requester asked for them (copyModifiers). Errors:
// the refusals (terminal), the API server's.
func (f *CreateVeleroRestore) pinJudgement(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, backup *velerov1.Backup, bucketOnly bool,
	spec *velerov1.RestoreSpec, meta metav1.ObjectMeta) error {
	who, forged, err := f.verifiedRequester(ctx, op, nar)
	if err != nil {
		return err
	}
	if forged != nil {
		return refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, forged)
	}
	if who.user != nil {
		b, err := json.Marshal(who.user)
		if err != nil {
			return err
		}
		meta.Annotations[restorepolicy.RequesterAnnotation] = string(b)
	}
	if restorejudge.NeedsRecord(bucketOnly, who.user) {
		items, found, err := verifiedItemsFor(ctx, op, backup)
		if err != nil {
			return err
		}
		if !found {
			return refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, fmt.Errorf(
				"spec.restoreSpec.backupName: Velero Backup %s is kept in a bucket the tenant writes and nacflow holds no record of its items as it verified them: a restore checked as %s restores only verified items; back the namespace up again",
				backup.Name, who.user.Username))
		}
		meta.Annotations[itemdigest.RestoreAnnotation] = items
	}
	return f.copyModifiers(ctx, op, nar, who, spec, meta)
}

// copyModifiers points spec at the tenant's resource modifiers as their
// requester asked for them (the record, never the spec or the ConfigMap as
// they are now): Velero reads them only from the Restore's namespace, so
// they are copied there, immutable, checked once more against the record
// (what Velero and velero-plugin-nacflow read is what was asked), their
// digest on meta, and deleted with the NonAdminRestore. Without them the
// Restore names only what the accepted spec does: the admin's enforced
// modifiers, or none. Errors: the refusals (terminal), the API server's.
func (f *CreateVeleroRestore) copyModifiers(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, who requesterVerdict,
	spec *velerov1.RestoreSpec, meta metav1.ObjectMeta) error {
	cm, _, refusal, err := who.recordedModifiers(ctx, op, nar)
	if err != nil {
		return err
	}
	if refusal == nil {
		refusal = unbacked(nar, spec, who, cm != nil)
	}
	if refusal != nil {
		return refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, refusal)
	}
	if cm == nil {
		return nil
	}
	immutable := true
	copied := &corev1.ConfigMap{ObjectMeta: op.ObjectMeta(meta.Name + "-modifiers"), Data: cm.Data, BinaryData: cm.BinaryData, Immutable: &immutable}
	obj, _, err := createOrAdopt(ctx, op, f.tools.recent, "ConfigMap", copied)
	if err != nil {
		return err
	}
	got := obj.(*corev1.ConfigMap)
	if requester.ConfigMapDigest(got) != who.record.Modifiers.Digest {
		return refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, fmt.Errorf(
			"spec.restoreSpec.resourceModifier: nacflow's copy %s/%s does not hold what %s asked for: refusing to restore", got.Namespace, got.Name, who.record.User.Username))
	}
	spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: got.Name}
	meta.Annotations[v1alpha1.RestoreModifiersDigestAnnotation] = who.record.Modifiers.Digest
	return nil
}

// pluginSettings writes on annotations, a Velero Restore's, the tenant
// role and the admin-owned resources velero-plugin-nacflow judges its
// items with, where they differ from the plugin's defaults (a default
// restore carries OADP's metadata alone).
func (r restoreRules) pluginSettings(annotations map[string]string) {
	if r.tenantRole != restorepolicy.DefaultTenantRole {
		annotations[restorepolicy.TenantRoleAnnotation] = r.tenantRole
	}
	if owned := restorepolicy.FormatAdminOwned(r.adminOwned); owned != restorepolicy.FormatAdminOwned(restorepolicy.DefaultAdminOwned) {
		annotations[restorepolicy.AdminOwnedAnnotation] = owned
	}
}

// unbacked returns the refusal of an accepted spec that asks for more than
// who vouches for at the moment of use: a mapping into another namespace
// without a known requester, or a tenant's resource modifiers without the
// record that holds them (recorded: they were found). Validation never
// accepts either; an accepted spec written otherwise (by a nacflow that
// kept the tenant's modifiers in it, or a requester who is no tenant any
// more) is refused, never acted on. A resourceModifier in both the
// accepted spec and the tenant's spec is the tenant's: validation refuses
// one next to the admin's.
func unbacked(nar *v1alpha1.NonAdminRestore, spec *velerov1.RestoreSpec, who requesterVerdict, recorded bool) error {
	if to := spec.NamespaceMapping[nar.Namespace]; to != "" && to != nar.Namespace && who.user == nil {
		return fmt.Errorf("spec.restoreSpec.namespaceMapping: %s to %s: a restore into another namespace is held to the rights there of whoever asked, and no one is known now (condition RequesterVerified: %s)", nar.Namespace, to, who.reason)
	}
	if !recorded && spec.ResourceModifier != nil && nar.Spec.RestoreSpec != nil && nar.Spec.RestoreSpec.ResourceModifier != nil {
		return fmt.Errorf("spec.restoreSpec.resourceModifier: a tenant's resource modifiers need a known requester whose record holds them (condition RequesterVerified: %s)", who.reason)
	}
	return nil
}
