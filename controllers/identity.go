package controllers

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
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

// refTo is the status reference field to a Velero object of kind V
// (velerov1.Backup, ...: the kind is V's type name) at nacuuid, name and
// namespace (nil: status records none, the object is in the OADP
// namespace).
func refTo[V any, P interface {
	*V
	client.Object
}](field string, nacuuid, name, namespace *string) statusRef {
	return statusRef{field, reflect.TypeFor[V]().Name(), nacuuid, name, namespace, func() client.Object { return P(new(V)) }}
}

// adoption says which existing Velero objects of the OADP namespace an
// operation may adopt (operationIdentity), a kind's choice
// (kindPolicy.adopts).
type adoption int

const (
	// adoptNone: the operation's NACUUID is the derived one, always.
	adoptNone adoption = iota
	// adoptYounger: also a NACUUID recorded in status, confirmed by an
	// object made for this very NAC object after it (by OADP NAC, which
	// began the operation).
	adoptYounger
	// adoptOlder: adoptYounger, and the object may be older than the NAC
	// object: a NonAdminBackup made for an existing Velero Backup (backup
	// sync's, a schedule's runs).
	adoptOlder
)

// adoptsYounger is the adoption of the kinds whose objects OADP NAC may
// have begun (kindPolicy.adopts).
func adoptsYounger[T v1alpha1.Object](T) adoption { return adoptYounger }

// identity is what operationIdentity derives: the NACUUID of the operation
// and the corrections of the status references that disagree with it.
type identity struct {
	uuid  string
	fixes []refFix
}

// refFix is what one status reference should say, and why (one clause per
// field corrected).
type refFix struct {
	ref                      statusRef
	namespace, name, nacuuid string
	why                      []string
}

// correctRefs writes id's corrections into the status references it read
// and returns the operation's NACUUID with one sentence per reference
// corrected (the StatusCorrected event's). err, operationIdentity's, is
// returned as is, with nothing written.
func correctRefs(id identity, err error) (string, []string, error) {
	if err != nil {
		return "", nil, err
	}
	var corrected []string
	for _, f := range id.fixes {
		if f.ref.namespace != nil {
			*f.ref.namespace = f.namespace
		}
		*f.ref.name, *f.ref.nacuuid = f.name, f.nacuuid
		corrected = append(corrected, f.ref.field+": "+strings.Join(f.why, ", "))
	}
	return id.uuid, corrected, nil
}

// operationIdentity derives the NACUUID of obj's operation (obj a NAC object
// of kind, e.g. "NonAdminBackup") and what the status references (refs)
// that disagree with it should say; it writes nothing (correctRefs does).
//
// The NACUUID is the one derived from obj's UID (v1alpha1.DerivedNACUUID),
// whatever status says: status is written by whoever may write the status
// subresource, and admins commonly grant tenants "*" on the whole
// oadp.openshift.io group. The one exception is adoption (adopts): a
// NACUUID recorded in a reference is the operation's when the object it
// names in the OADP namespace — which only nacflow, Velero, OADP NAC and the
// admin write — carries that NACUUID label and obj's own origin namespace
// and name annotations, and was made after obj (adoptYounger; adoptOlder
// also takes an older one). Such an object was made for this very object,
// never for another tenant's, a sibling, or an earlier object of the same
// name.
//
// A reference is corrected when it names an object that is not the
// operation's (another NACUUID label, another origin) — the name then
// becomes the operation's own object's, or "" when it has none yet — and
// when its NACUUID is not the operation's, unless (adoption only) it names
// an object that no longer exists: the record of a Velero Backup deleted
// since, which is kept but never followed. A namespace other than the OADP
// namespace is corrected to it. Errors are the cache's.
func operationIdentity(ctx context.Context, c client.Reader, oadpNamespace, kind string, obj engine.Object, refs []statusRef, adopts adoption) (identity, error) {
	d := &deriving{c: c, oadpNamespace: oadpNamespace, kind: kind, obj: obj, keys: obj.OriginKeys(), adopts: adopts}
	d.derived = v1alpha1.DerivedNACUUID(obj)
	d.derivedName = v1alpha1.OperationObjectName(obj, d.derived)
	named := make([]client.Object, len(refs))
	expected := make([]bool, len(refs))
	for i, r := range refs {
		// A reference that is what derivation predicts needs no read (the
		// honest path: no cost per reconcile).
		if (*r.nacuuid == "" || *r.nacuuid == d.derived) && (*r.name == "" || *r.name == d.derivedName) {
			expected[i] = true
			continue
		}
		var err error
		if named[i], err = d.get(ctx, r, *r.name); err != nil {
			return identity{}, err
		}
	}
	id := identity{uuid: d.derived}
	adoptedName := ""
	for i, r := range refs {
		if x := *r.nacuuid; adopts != adoptNone && x != "" && x != d.derived && d.ours(named[i], x) && d.madeForThis(named[i]) {
			id.uuid, adoptedName = x, named[i].GetName()
			break
		}
	}
	for i, r := range refs {
		f, err := d.fix(ctx, r, named[i], expected[i], id.uuid, adoptedName)
		if err != nil {
			return identity{}, err
		}
		if len(f.why) > 0 {
			id.fixes = append(id.fixes, f)
		}
	}
	return id, nil
}

// deriving is what operationIdentity reads and derives from.
type deriving struct {
	c                    client.Reader
	oadpNamespace, kind  string
	obj                  engine.Object
	keys                 v1alpha1.Origin
	adopts               adoption
	derived, derivedName string
}

// ours reports whether o carries the NACUUID label uuid and obj's origin
// namespace and name annotations.
func (d *deriving) ours(o client.Object, uuid string) bool {
	return o != nil && o.GetLabels()[d.keys.Label] == uuid &&
		o.GetAnnotations()[d.keys.NamespaceAnnotation] == d.obj.GetNamespace() && o.GetAnnotations()[d.keys.NameAnnotation] == d.obj.GetName()
}

// madeForThis: an object made for obj by another controller (OADP NAC) is
// younger than obj; one older than obj was made for an earlier object of the
// same name — a NAC object deleted and re-created — and is not adopted,
// but with adoptOlder (a NonAdminBackup made for an existing Velero Backup
// is younger than it).
func (d *deriving) madeForThis(o client.Object) bool {
	return d.adopts == adoptOlder || !o.GetCreationTimestamp().Time.Before(d.obj.GetCreationTimestamp().Add(-time.Second))
}

// get reads the object of r's kind called name from the OADP namespace (nil:
// no name, or no such object).
func (d *deriving) get(ctx context.Context, r statusRef, name string) (client.Object, error) {
	if name == "" {
		return nil, nil
	}
	o := r.newObject()
	err := d.c.Get(ctx, client.ObjectKey{Namespace: d.oadpNamespace, Name: name}, o)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Velero %s %s/%s named in %s: %w", r.kind, d.oadpNamespace, name, r.field, err)
	}
	return o, nil
}

// fix derives what reference r should say for the operation uuid: named is
// the object it names (nil: not read, or none), expected whether it was what
// derivation predicts, adoptedName the name of the object adopted ("":
// none).
func (d *deriving) fix(ctx context.Context, r statusRef, named client.Object, expected bool, uuid, adoptedName string) (refFix, error) {
	f := refFix{ref: r, name: *r.name, nacuuid: *r.nacuuid}
	if r.namespace != nil {
		if f.namespace = *r.namespace; f.namespace != "" && f.namespace != d.oadpNamespace {
			f.why = append(f.why, fmt.Sprintf("namespace %q to %q", f.namespace, d.oadpNamespace))
			f.namespace = d.oadpNamespace
		}
	}
	gone := f.name != "" && named == nil && !expected
	var err error
	if expected && uuid != d.derived && f.name != "" {
		// Adopted, yet this reference names the derived object: read it.
		if named, err = d.get(ctx, r, f.name); err != nil {
			return refFix{}, err
		}
	}
	if named != nil && !d.ours(named, uuid) {
		own := cmp.Or(adoptedName, d.derivedName)
		found, err := d.get(ctx, r, own)
		if err != nil {
			return refFix{}, err
		}
		if !d.ours(found, uuid) {
			own = ""
		}
		f.why = append(f.why, fmt.Sprintf("name %q (Velero %s %s/%s is not this %s's) to %q",
			f.name, r.kind, d.oadpNamespace, f.name, d.kind, own))
		f.name, gone = own, false
	}
	if f.nacuuid != "" && f.nacuuid != uuid && !(d.adopts != adoptNone && gone) {
		f.why = append(f.why, fmt.Sprintf("nacuuid %q to %q", f.nacuuid, uuid))
		f.nacuuid = uuid
	}
	return f, nil
}

// correctedMessage is the StatusCorrected event's message.
func correctedMessage(kind string, corrected []string) string {
	return fmt.Sprintf("Corrected %s; status is written only by nacflow, and what this %s's operation owns follows from its UID",
		strings.Join(corrected, "; "), kind)
}
