package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

// VeleroReferences are the engine's reference rules (RuleReferences) for
// the Velero objects phase functions create or change in the OADP
// namespace; Velero acts on what they name with its own rights, so each
// name must be the tenant's:
//   - a BackupStorageLocation's spec.credential (and
//     spec.objectStorage.caCertRef) names the operation's own Secret copy:
//     without a credential Velero would use the admin's;
//   - a Backup includes exactly the tenant's namespace, and its
//     spec.storageLocation is no other tenant's location;
//   - a Restore includes and maps only the tenant's namespace (a
//     NonAdminBackup's restore test maps it into its own sandbox, which
//     must exist, labelled for that test, so that it has its quota), names no
//     schedule, and its spec.backupName is a Backup made for the tenant's
//     namespace;
//   - a DeleteBackupRequest's spec.backupName is such a Backup;
//   - a DownloadRequest's spec.target is a Backup or Restore made for the
//     tenant's namespace, of a kind of file Velero serves for it.
//
// Objects of other kinds reference nothing these rules know of.
type VeleroReferences struct{}

var _ engine.ReferenceRules = VeleroReferences{}

// CheckReferences implements engine.ReferenceRules.
func (VeleroReferences) CheckReferences(ctx context.Context, w engine.ReferenceCheck, obj client.Object) error {
	ns := w.Op.Object.GetNamespace()
	switch o := obj.(type) {
	case *velerov1.BackupStorageLocation:
		// Without a credential Velero would use its own: the admin's.
		if o.Spec.Credential == nil || o.Spec.Credential.Name == "" {
			return w.Refuse("spec.credential must name this operation's own Secret copy (without one Velero uses the admin's credentials)")
		}
		if err := ownSecret(ctx, w, "spec.credential", o.Spec.Credential.Name); err != nil {
			return err
		}
		if o.Spec.ObjectStorage != nil && o.Spec.ObjectStorage.CACertRef != nil {
			return ownSecret(ctx, w, "spec.objectStorage.caCertRef", o.Spec.ObjectStorage.CACertRef.Name)
		}
	case *velerov1.Backup:
		if err := onlyOwnNamespace(w, "spec.includedNamespaces", o.Spec.IncludedNamespaces); err != nil {
			return err
		}
		if o.Spec.StorageLocation != "" {
			return notOtherTenantsBSL(ctx, w, o.Spec.StorageLocation)
		}
	case *velerov1.Restore:
		if err := onlyOwnNamespace(w, "spec.includedNamespaces", o.Spec.IncludedNamespaces); err != nil {
			return err
		}
		for from, to := range o.Spec.NamespaceMapping {
			if from == ns && to != ns {
				if requestedTarget(w, o, to) {
					if err := liveTarget(ctx, w, to); err != nil {
						return err
					}
					continue
				}
				if err := ownSandbox(ctx, w, to); err != nil {
					return err
				}
				continue
			}
			if from != ns || to != ns {
				return w.Refuse(fmt.Sprintf("spec.namespaceMapping maps %s to %s: only namespace %s is the tenant's", from, to, ns))
			}
		}
		if o.Spec.ScheduleName != "" {
			return w.Refuse(fmt.Sprintf("spec.scheduleName %q: a tenant restores only its own backups, named by spec.backupName", o.Spec.ScheduleName))
		}
		if err := ownModifiers(ctx, w, o); err != nil {
			return err
		}
		return tenantObject(ctx, w, tenantBackups, "spec.backupName", o.Spec.BackupName)
	case *velerov1.DeleteBackupRequest:
		return tenantObject(ctx, w, tenantBackups, "spec.backupName", o.Spec.BackupName)
	case *velerov1.DownloadRequest:
		switch v1alpha1.DownloadTargetOf(o.Spec.Target.Kind) {
		case "NonAdminBackup":
			return tenantObject(ctx, w, tenantBackups, "spec.target.name", o.Spec.Target.Name)
		case "NonAdminRestore":
			return tenantObject(ctx, w, tenantRestores, "spec.target.name", o.Spec.Target.Name)
		default:
			return w.Refuse(fmt.Sprintf("spec.target.kind %q is not a kind of file of a Velero Backup or Restore", o.Spec.Target.Kind))
		}
	}
	return nil
}

// tenantKind is a kind of object in the OADP namespace that a tenant's
// Velero objects may name, and the origin-namespace annotation (OADP NAC)
// that says which namespace an object of it was made for.
type tenantKind struct {
	// name is the kind in messages, e.g. "Velero Backup".
	name string
	// namespaceAnnotation is the origin-namespace annotation of the kind's
	// objects.
	namespaceAnnotation string
	// newObject returns an empty object of the kind.
	newObject func() client.Object
}

var (
	// tenantBackups are Velero Backups, made for a NonAdminBackup's
	// namespace.
	tenantBackups = tenantKind{"Velero Backup", v1alpha1.NabOriginNamespaceAnnotation, func() client.Object { return &velerov1.Backup{} }}
	// tenantRestores are Velero Restores, made for a NonAdminRestore's
	// namespace.
	tenantRestores = tenantKind{"Velero Restore", v1alpha1.NarOriginNamespaceAnnotation, func() client.Object { return &velerov1.Restore{} }}
)

// tenantObject checks that field names (name) an object of kind k in the
// OADP namespace that was made for the operation's namespace: k's
// origin-namespace annotation names it. It reads the cache first, then the
// API server when the cache does not hold the object yet.
func tenantObject(ctx context.Context, w engine.ReferenceCheck, k tenantKind, field, name string) error {
	own := w.Op.Object.GetNamespace()
	if name == "" {
		return w.Refuse(field + " is empty: it must name a " + k.name + " of namespace " + own)
	}
	obj := k.newObject()
	key := client.ObjectKey{Namespace: w.Op.OADPNamespace, Name: name}
	err := w.Cached.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = w.Live.Get(ctx, key, obj) // the cache may be behind
	}
	if apierrors.IsNotFound(err) {
		return w.Refuse(fmt.Sprintf("%s names %s %s/%s, which does not exist", field, k.name, w.Op.OADPNamespace, name))
	}
	if err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", k.name, w.Op.OADPNamespace, name, err)
	}
	if got := obj.GetAnnotations()[k.namespaceAnnotation]; got != own {
		return w.Refuse(fmt.Sprintf("%s names %s %s/%s, which was not made for namespace %s (annotation %s is %q)",
			field, k.name, w.Op.OADPNamespace, name, own, k.namespaceAnnotation, got))
	}
	return nil
}

// ownSecret checks that field names (name) a Secret in the OADP namespace
// that is the operation's own: it carries the operation's label and was
// made for its namespace.
func ownSecret(ctx context.Context, w engine.ReferenceCheck, field, name string) error {
	op := w.Op
	s := &corev1.Secret{}
	// Secrets are read from the API server: there is no Secret cache.
	err := w.Live.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return w.Refuse(fmt.Sprintf("%s names Secret %s/%s, which does not exist: it must be this operation's own copy", field, op.OADPNamespace, name))
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", op.OADPNamespace, name, err)
	}
	label := op.OriginLabel()
	if v, ok := s.Labels[label]; !ok || v != op.UUID {
		return w.Refuse(fmt.Sprintf("%s names Secret %s/%s, which is not this operation's own copy: it does not carry the label %s=%s",
			field, op.OADPNamespace, name, label, op.UUID))
	}
	if !op.Owns(s) {
		return w.Refuse(fmt.Sprintf("%s names Secret %s/%s, which is not this operation's own copy: %s",
			field, op.OADPNamespace, name, op.WhyNotOwned(s)))
	}
	return nil
}

// ownModifiers checks a Restore's spec.resourceModifier: for a
// NonAdminRestore that names modifiers of its own, it must be this
// operation's own copy (a ConfigMap of the OADP namespace with its label);
// modifiers no tenant named are the admin's enforced ones.
func ownModifiers(ctx context.Context, w engine.ReferenceCheck, r *velerov1.Restore) error {
	ref := r.Spec.ResourceModifier
	if ref == nil {
		return nil
	}
	nar, ok := w.Op.Object.(*v1alpha1.NonAdminRestore)
	if !ok || nar.Spec.RestoreSpec == nil || nar.Spec.RestoreSpec.ResourceModifier == nil {
		return nil
	}
	op := w.Op
	cm := &corev1.ConfigMap{}
	err := w.Live.Get(ctx, client.ObjectKey{Namespace: op.OADPNamespace, Name: ref.Name}, cm)
	if apierrors.IsNotFound(err) {
		return w.Refuse(fmt.Sprintf("spec.resourceModifier names ConfigMap %s/%s, which does not exist: it must be this operation's own copy of the tenant's modifiers", op.OADPNamespace, ref.Name))
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s/%s: %w", op.OADPNamespace, ref.Name, err)
	}
	if cm.Labels[op.OriginLabel()] != op.UUID || !op.Owns(cm) {
		return w.Refuse(fmt.Sprintf("spec.resourceModifier names ConfigMap %s/%s, which is not this operation's own copy of the tenant's modifiers", op.OADPNamespace, ref.Name))
	}
	return nil
}

// onlyOwnNamespace checks that namespaces is exactly the operation's
// namespace.
func onlyOwnNamespace(w engine.ReferenceCheck, field string, namespaces []string) error {
	own := w.Op.Object.GetNamespace()
	if len(namespaces) != 1 || namespaces[0] != own {
		return w.Refuse(fmt.Sprintf("%s is %v: it must be exactly [%s], the tenant's namespace", field, namespaces, own))
	}
	return nil
}

// notOtherTenantsBSL checks that the Velero BSL name, when it is a tenant's
// (it carries the NABSL origin label), is one of the operation's namespace.
// The admin's locations are the admin's to grant (args.enforce); tenant
// locations are in the manager's cache, so this costs no API call.
func notOtherTenantsBSL(ctx context.Context, w engine.ReferenceCheck, name string) error {
	bsl := &velerov1.BackupStorageLocation{}
	err := w.Cached.Get(ctx, client.ObjectKey{Namespace: w.Op.OADPNamespace, Name: name}, bsl)
	if apierrors.IsNotFound(err) {
		return nil // not a tenant's location (or none at all: Velero refuses the backup)
	}
	if err != nil {
		return fmt.Errorf("reading Velero BackupStorageLocation %s/%s: %w", w.Op.OADPNamespace, name, err)
	}
	if _, tenant := bsl.Labels[v1alpha1.NabslOriginNACUUIDLabel]; !tenant {
		return nil
	}
	own := w.Op.Object.GetNamespace()
	if got := bsl.Annotations[v1alpha1.NabslOriginNamespaceAnnotation]; got != own {
		return w.Refuse(fmt.Sprintf("spec.storageLocation names Velero BackupStorageLocation %s/%s of namespace %q, not of namespace %s",
			w.Op.OADPNamespace, name, got, own))
	}
	return nil
}

// requestedTarget reports whether to is the target a NonAdminRestore's
// validated spec maps its namespace into for a verified requester
// (status.veleroRestore.spec, condition RequesterVerified True), and the
// Restore carries that requester for velero-plugin-nacflow, which checks
// every item as them.
func requestedTarget(w engine.ReferenceCheck, r *velerov1.Restore, to string) bool {
	nar, ok := w.Op.Object.(*v1alpha1.NonAdminRestore)
	if !ok || r.Annotations[restorepolicy.RequesterAnnotation] == "" {
		return false
	}
	spec := nar.AcceptedRestoreSpec()
	if spec == nil || spec.NamespaceMapping[nar.Namespace] != to {
		return false
	}
	for _, c := range nar.Status.Conditions {
		if c.Type == v1alpha1.ConditionRequesterVerified {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// liveTarget checks that a restore's target namespace exists, is not being
// deleted and is not the OADP namespace: Velero would create a missing one
// with its own rights.
func liveTarget(ctx context.Context, w engine.ReferenceCheck, to string) error {
	ns := w.Op.Object.GetNamespace()
	if to == w.Op.OADPNamespace {
		return w.Refuse(fmt.Sprintf("spec.namespaceMapping maps %s to the OADP namespace", ns))
	}
	target := &corev1.Namespace{}
	err := w.Live.Get(ctx, client.ObjectKey{Name: to}, target)
	if apierrors.IsNotFound(err) {
		return w.Refuse(fmt.Sprintf("spec.namespaceMapping maps %s to %s, which does not exist", ns, to))
	}
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", to, err)
	}
	if !target.DeletionTimestamp.IsZero() {
		return w.Refuse(fmt.Sprintf("spec.namespaceMapping maps %s to %s, which is being deleted", ns, to))
	}
	return nil
}

// ownSandbox checks that a Restore's namespaceMapping target is the
// restore-test sandbox of the operation's namespace
// (v1alpha1.RestoreTestSandbox), for a NonAdminBackup's operation, and that
// the Namespace exists with the operation's restore-test label: Velero
// would create a missing target namespace itself, without the sandbox's
// quota.
func ownSandbox(ctx context.Context, w engine.ReferenceCheck, to string) error {
	ns := w.Op.Object.GetNamespace()
	if _, isNAB := w.Op.Object.(*v1alpha1.NonAdminBackup); !isNAB || to != v1alpha1.RestoreTestSandbox(ns) {
		return w.Refuse(fmt.Sprintf("spec.namespaceMapping maps %s to %s: only namespace %s is the tenant's", ns, to, ns))
	}
	sandbox := &corev1.Namespace{}
	err := w.Live.Get(ctx, client.ObjectKey{Name: to}, sandbox)
	if apierrors.IsNotFound(err) {
		return w.Refuse(fmt.Sprintf("spec.namespaceMapping maps %s to sandbox %s, which does not exist", ns, to))
	}
	if err != nil {
		return fmt.Errorf("reading sandbox namespace %s: %w", to, err)
	}
	if got := sandbox.Labels[v1alpha1.RestoreTestLabel]; got != w.Op.UUID || !sandbox.DeletionTimestamp.IsZero() {
		return w.Refuse(fmt.Sprintf("spec.namespaceMapping maps %s to %s, which is not this operation's live sandbox (label %s is %q)", ns, to, v1alpha1.RestoreTestLabel, got))
	}
	return nil
}
