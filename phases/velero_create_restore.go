package phases

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
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
	backup := &velerov1.Backup{}
	if err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: a.BackupName}, backup); err != nil {
		return engine.Result{}, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, a.BackupName, err)
	}
	if a.BackupUID != "" && string(backup.UID) != a.BackupUID {
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec,
			fmt.Errorf("spec.restoreSpec.backupName: Velero Backup %s was replaced since the restore waited for it (UID %s, now %s): refusing to restore another backup than the one checked", a.BackupName, a.BackupUID, backup.UID))
	}
	if origin := backup.Annotations[v1alpha1.NabOriginNamespaceAnnotation]; origin != nar.Namespace {
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec,
			fmt.Errorf("spec.restoreSpec.backupName: Velero Backup %s does not belong to namespace %s: refusing to restore it", a.BackupName, nar.Namespace))
	}

	bucketOnly, err := inTenantBucket(ctx, op, backup)
	if err != nil {
		return engine.Result{}, err
	}

	var spec *velerov1.RestoreSpec
	if vr := nar.Status.VeleroRestore; vr != nil && vr.Spec != nil {
		spec = vr.Spec.DeepCopy()
	} else {
		// No accepted spec survived: OADP's CRDs prune
		// status.veleroRestore.spec between reconciles, and the wait for the
		// backup lies between validate and here. The spec as it is now is
		// the tenant's to edit, so it is decided on again, as validate
		// would (the DPA's enforced values too: OADP's CRDs have no
		// Blueprints to enforce others): an edit made during the wait (a
		// namespaceMapping into another tenant's namespace, say) never
		// reaches Velero.
		d, err := f.validate.decide(ctx, op, nar, nil)
		if err != nil {
			return waitForSettings(err)
		}
		if d.refusal != nil {
			return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, d.refusal)
		}
		spec = d.effective
	}
	spec.BackupName = a.BackupName
	spec.IncludedNamespaces = []string{nar.Namespace}
	excluded := restoreExcluded
	var note string
	if bucketOnly {
		// Velero restores a PersistentVolume from the native snapshot the
		// bucket's volume snapshot list names, with the admin's snapshot
		// credentials, before any restore item action sees it: kept out
		// here, Velero never reads that list for this restore. Its claims
		// get new volumes (velero-plugin-nacflow), which file-system backup
		// and the data mover fill from the bucket.
		excluded = append(slices.Clone(excluded), "persistentvolumes")
		note = fmt.Sprintf("; PersistentVolumes excluded: Velero Backup %s is kept in a bucket the tenant writes (location %q), so its volumes come back only from data in that bucket (file-system backup, data mover), never from a snapshot it names", a.BackupName, backup.Spec.StorageLocation)
	}
	for _, r := range excluded {
		if !slices.Contains(spec.ExcludedResources, r) {
			spec.ExcludedResources = append(spec.ExcludedResources, r)
		}
	}
	meta := op.ObjectMeta(v1alpha1.NACObjectName(nar.Namespace, nar.Name, op.UUID))
	annotations := meta.Annotations
	// velero-plugin-nacflow restores nothing of a Backup with another UID.
	annotations[v1alpha1.RestoreBackupUIDAnnotation] = string(backup.UID)
	// Who asked, verified again: a record forged after validation (where no
	// webhook keeps it) never reaches Velero's plugin.
	who, err := f.requesters.verify(ctx, op, nar, f.tenantRoleName())
	if err != nil {
		return engine.Result{}, err
	}
	if who.forged != nil {
		setRequesterCondition(nar, who)
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, who.forged)
	}
	if who.user != nil {
		b, err := json.Marshal(who.user)
		if err != nil {
			return engine.Result{}, err
		}
		annotations[restorepolicy.RequesterAnnotation] = string(b)
	}
	if bucketOnly && who.user != nil {
		// Checked as its requester, who may hold more than the bucket's
		// writers: only the items nacflow verified are restored, as the
		// record the plugin follows says (the pre-check, which may be
		// off, refuses a tarball changed since).
		items, found, err := verifiedItemsFor(ctx, op, backup)
		if err != nil {
			return engine.Result{}, err
		}
		if !found {
			return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, fmt.Errorf(
				"spec.restoreSpec.backupName: Velero Backup %s is kept in a bucket the tenant writes and nacflow holds no record of its items as it verified them: a restore checked as %s restores only verified items; back the namespace up again",
				a.BackupName, who.user.Username))
		}
		annotations[itemdigest.RestoreAnnotation] = items
	}
	// A tenant's resource modifiers, as its requester asked them (the
	// record, never the spec or the ConfigMap as they are now): Velero
	// reads them only from the Restore's namespace, so they are copied
	// there, immutable, checked once more against the record (what Velero
	// and velero-plugin-nacflow read is what was asked), and deleted with
	// the NonAdminRestore. Without them the Restore names only what the
	// accepted spec does: the admin's enforced modifiers, or none.
	cm, _, refusal, err := who.recordedModifiers(ctx, op, nar)
	if err != nil {
		return engine.Result{}, err
	}
	if refusal != nil {
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, refusal)
	}
	if refusal := unbacked(nar, spec, who, cm != nil); refusal != nil {
		return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, refusal)
	}
	if cm != nil {
		immutable := true
		copied := &corev1.ConfigMap{ObjectMeta: op.ObjectMeta(meta.Name + "-modifiers"), Data: cm.Data, BinaryData: cm.BinaryData, Immutable: &immutable}
		obj, _, err := createOrAdopt(ctx, op, f.tools.recent, "ConfigMap", copied)
		if err != nil {
			return engine.Result{}, err
		}
		got := obj.(*corev1.ConfigMap)
		if requester.ConfigMapDigest(got) != who.record.Modifiers.Digest {
			return engine.Result{}, refuse(nar, v1alpha1.ReasonInvalidRestoreSpec, fmt.Errorf(
				"spec.restoreSpec.resourceModifier: nacflow's copy %s/%s does not hold what %s asked for: refusing to restore", got.Namespace, got.Name, who.record.User.Username))
		}
		spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: got.Name}
		annotations[v1alpha1.RestoreModifiersDigestAnnotation] = who.record.Modifiers.Digest
	}
	// Only settings that differ from the plugin's defaults are written: a
	// default restore carries OADP's metadata alone.
	if f.tenantRole != restorepolicy.DefaultTenantRole {
		annotations[restorepolicy.TenantRoleAnnotation] = f.tenantRole
	}
	if owned := restorepolicy.FormatAdminOwned(f.adminOwned); owned != restorepolicy.FormatAdminOwned(restorepolicy.DefaultAdminOwned) {
		annotations[restorepolicy.AdminOwnedAnnotation] = owned
	}
	want := &velerov1.Restore{
		ObjectMeta: meta,
		Spec:       *spec,
	}
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

// inTenantBucket reports whether the Velero Backup is kept in a bucket a
// tenant writes (restorepolicy.TenantBucket): its location carries OADP's
// NABSL origin label, or it names none or one that does not exist. The
// location is read from the API server (the cache holds tenants' locations
// only). Errors are the API server's.
func inTenantBucket(ctx context.Context, op *engine.Operation, backup *velerov1.Backup) (bool, error) {
	name := backup.Spec.StorageLocation
	if name == "" {
		return true, nil
	}
	bsl := &velerov1.BackupStorageLocation{}
	err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: name}, bsl)
	switch {
	case err == nil:
		return restorepolicy.TenantBucket(bsl.Labels, true), nil
	case apierrors.IsNotFound(err):
		return true, nil
	default:
		return false, fmt.Errorf("reading Velero BackupStorageLocation %s/%s: %w", op.OADPNamespace, name, err)
	}
}

// backupInTenantBucket is inTenantBucket of the Velero Backup name of the
// OADP namespace, read from the API server; a Backup that cannot be found
// counts as kept in a tenant's bucket, as velero-plugin-nacflow decides
// it. Errors are the API server's.
func backupInTenantBucket(ctx context.Context, op *engine.Operation, name string) (bool, error) {
	backup := &velerov1.Backup{}
	switch err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: name}, backup); {
	case err == nil:
		return inTenantBucket(ctx, op, backup)
	case apierrors.IsNotFound(err):
		return true, nil
	default:
		return false, fmt.Errorf("reading Velero Backup %s/%s: %w", op.OADPNamespace, name, err)
	}
}

// Doc implements engine.Documented.
func (*CreateVeleroRestore) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates (or adopts) the Velero Restore in the OADP namespace from the accepted spec: backupName = args.backupName (which must belong to the tenant's namespace), includedNamespaces = the tenant's, NAC kinds and volumesnapshotclasses excluded (and persistentvolumes, for a backup kept in a bucket the tenant writes: its volumes come back only from data in the bucket, never from a snapshot ID it names), OADP nar labels plus args.labels/annotations.",
		Outputs: []string{"name: the Velero Restore"},
		Errors:  "a backup of another namespace, a name held by another operation's object are terminal; " + apiRetried,
	}
}
