package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// EventStatusCorrected (Warning): a status field naming what the operation
// owns disagreed with what nacflow derives; it was corrected, not followed.
const EventStatusCorrected = "StatusCorrected"

// statusRef is one field of a NAC object's status that names a Velero object
// of its operation in the OADP namespace (status.veleroBackup, say).
type statusRef struct {
	// field is the JSON path of the reference, for messages.
	field string
	// kind is the Velero kind it names.
	kind string
	// nacuuid, name and namespace point into the status.
	nacuuid, name, namespace *string
	// newObject returns an empty object of the kind.
	newObject func() client.Object
}

// operationIdentity returns the NACUUID of obj's operation (obj a NAC object
// of kind, e.g. "NonAdminBackup") and corrects, in
// memory, the status references (refs) that disagree with it, returning one
// sentence per correction.
//
// The NACUUID is the one derived from obj's UID (v1alpha1.DerivedNACUUID),
// whatever status says: status is written by whoever may write the status
// subresource, and admins commonly grant tenants "*" on the whole
// oadp.openshift.io group. The one exception is adoption (adopts: the
// NonAdminBackups backup sync and NonAdminSchedules make for an existing
// Velero Backup, and every NAC object whose operation another controller —
// OADP NAC — began): a NACUUID recorded in a reference is the operation's
// when the object it names in the OADP namespace — which only nacflow,
// Velero, OADP NAC and the admin write — carries that NACUUID label and
// obj's own origin namespace and name annotations, and was made after obj
// (but for NonAdminBackups made for an existing backup). Such an object was
// made for this very object, never for another tenant's, a sibling, or an
// earlier object of the same name.
//
// A reference is corrected when it names an object that is not the
// operation's (another NACUUID label, another origin) — the name then
// becomes the operation's own object's, or "" when it has none yet — and
// when its NACUUID is not the operation's, unless (adoption only) it names
// an object that no longer exists: the record of a Velero Backup deleted
// since, which is kept but never followed. A namespace other than the OADP
// namespace is corrected to it. Errors are the cache's.
func operationIdentity(ctx context.Context, c client.Reader, oadpNamespace, kind string, obj engine.Object, refs []statusRef, adopts bool) (string, []string, error) {
	keys := obj.OriginKeys()
	label, nameAnn, nsAnn := keys.Label, keys.NameAnnotation, keys.NamespaceAnnotation
	derived := v1alpha1.DerivedNACUUID(obj)
	ours := func(o client.Object, uuid string) bool {
		return o != nil && o.GetLabels()[label] == uuid && o.GetAnnotations()[nsAnn] == obj.GetNamespace() && o.GetAnnotations()[nameAnn] == obj.GetName()
	}
	get := func(r statusRef, name string) (client.Object, error) {
		if name == "" {
			return nil, nil
		}
		o := r.newObject()
		err := c.Get(ctx, client.ObjectKey{Namespace: oadpNamespace, Name: name}, o)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Velero %s %s/%s named in %s: %w", r.kind, oadpNamespace, name, r.field, err)
		}
		return o, nil
	}
	derivedName := v1alpha1.OperationObjectName(obj, derived)
	named := make([]client.Object, len(refs))
	expected := make([]bool, len(refs))
	for i, r := range refs {
		// A reference that is what derivation predicts needs no read (the
		// honest path: no cost per reconcile).
		if (*r.nacuuid == "" || *r.nacuuid == derived) && (*r.name == "" || *r.name == derivedName) {
			expected[i] = true
			continue
		}
		var err error
		if named[i], err = get(r, *r.name); err != nil {
			return "", nil, err
		}
	}
	// An object made for obj by another controller (OADP NAC) is younger
	// than obj; one older than obj was made for an earlier object of the
	// same name — a NAC object deleted and re-created — and is not adopted,
	// except by the NonAdminBackups made for an existing Velero Backup
	// (backup sync's, a schedule's runs), which are younger than it.
	madeForThis := func(o client.Object) bool {
		if nab, ok := obj.(*v1alpha1.NonAdminBackup); ok &&
			(nab.Labels[v1alpha1.NabSyncedFromNACUUIDLabel] != "" || nab.Labels[v1alpha1.NonAdminScheduleLabel] != "") {
			return true
		}
		return !o.GetCreationTimestamp().Time.Before(obj.GetCreationTimestamp().Add(-time.Second))
	}
	uuid, adoptedName := derived, ""
	if adopts {
		for i, r := range refs {
			if x := *r.nacuuid; x != "" && x != derived && ours(named[i], x) && madeForThis(named[i]) {
				uuid, adoptedName = x, named[i].GetName()
				break
			}
		}
	}
	var corrected []string
	for i, r := range refs {
		var fixes []string
		if r.namespace != nil && *r.namespace != "" && *r.namespace != oadpNamespace {
			fixes = append(fixes, fmt.Sprintf("namespace %q to %q", *r.namespace, oadpNamespace))
			*r.namespace = oadpNamespace
		}
		gone := *r.name != "" && named[i] == nil && !expected[i]
		if expected[i] && uuid != derived && *r.name != "" {
			// Adopted, yet this reference names the derived object: read it.
			var err error
			if named[i], err = get(r, *r.name); err != nil {
				return "", nil, err
			}
		}
		if named[i] != nil && !ours(named[i], uuid) {
			own := adoptedName
			if own == "" {
				own = derivedName
			}
			found, err := get(r, own)
			if err != nil {
				return "", nil, err
			}
			if !ours(found, uuid) {
				own = ""
			}
			fixes = append(fixes, fmt.Sprintf("name %q (Velero %s %s/%s is not this %s's) to %q",
				*r.name, r.kind, oadpNamespace, *r.name, kind, own))
			*r.name = own
			gone = false
		}
		if *r.nacuuid != "" && *r.nacuuid != uuid && !(adopts && gone) {
			fixes = append(fixes, fmt.Sprintf("nacuuid %q to %q", *r.nacuuid, uuid))
			*r.nacuuid = uuid
		}
		if len(fixes) > 0 {
			corrected = append(corrected, r.field+": "+strings.Join(fixes, ", "))
		}
	}
	return uuid, corrected, nil
}

// correctedMessage is the StatusCorrected event's message.
func correctedMessage(kind string, corrected []string) string {
	return fmt.Sprintf("Corrected %s; status is written only by nacflow, and what this %s's operation owns follows from its UID",
		strings.Join(corrected, "; "), kind)
}
