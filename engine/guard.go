package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nacv1alpha1 "github.com/nacflow/nacflow/api/v1alpha1"
)

// The safety rule of the engine (DESIGN.md §4): whatever a blueprint says, a
// phase may only write objects in the OADP namespace that carry its
// operation's NACUUID label, may only read the operation's own namespace and
// the OADP namespace, and an object it creates may only reference objects of
// its own operation. The operation's own NAC object is written by the runner
// (its status), never by a phase through the client. Each rule has a name,
// quoted in every refusal.
const (
	// RuleWriteNamespace: creates, updates, patches and deletes (status
	// included) only in the OADP namespace.
	RuleWriteNamespace = "writes only in the OADP namespace"
	// RuleWriteOwn: only objects carrying this operation's origin NACUUID
	// label and not made for another namespace (the origin-namespace
	// annotation, where present): the live object's for an update, patch
	// or delete, and the sent object's; every DeleteAllOf is narrowed to
	// the label and skips objects made for another namespace. The label alone is not
	// enough: Velero syncs Backups from a tenant's own bucket with whatever
	// labels the tenant wrote there, so a NACUUID is not a secret nor unique
	// to its operation, while the annotations of an object made for another
	// namespace are another tenant's.
	RuleWriteOwn = "writes only this operation's objects"
	// RuleRead: gets and lists only in the NAC object's namespace and the
	// OADP namespace; no cluster-wide lists, no cluster-scoped objects, no
	// watches.
	RuleRead = "reads only in the operation's namespace and the OADP namespace"
	// RuleReferences: an object a phase creates or changes references only
	// objects of its own operation (a BSL's credential is the operation's own
	// Secret copy; a Restore or DeleteBackupRequest names a Backup of the
	// tenant's namespace; a DownloadRequest a Backup or Restore of the
	// tenant's namespace; a Backup uses no other tenant's location).
	RuleReferences = "references only this operation's objects"
)

// SafetyViolation is the error of an action the safety rule refuses. It is
// always wrapped in a terminal error: the same blueprint would be refused
// again.
type SafetyViolation struct {
	// Rule is one of the Rule constants.
	Rule string
	// Phase and Func name the phase that tried (Func may be empty).
	Phase, Func string
	// Verb is what was tried: get, list, watch, create, update, patch,
	// delete, deletecollection, or another word (mirror, wait for).
	Verb string
	// Kind, Namespace and Name say on what ("" when not known).
	Kind, Namespace, Name string
	// Reason says why it is refused.
	Reason string
}

// Error implements error: `safety rule "<rule>": phase P (F) may not <verb>
// <Kind> <ns>/<name>: <reason>`.
func (e *SafetyViolation) Error() string {
	who := "phase " + e.Phase
	if e.Func != "" {
		who += " (" + e.Func + ")"
	}
	what := e.Kind
	switch {
	case e.Name != "" && e.Namespace != "":
		what += " " + e.Namespace + "/" + e.Name
	case e.Name != "":
		what += " " + e.Name
	case e.Namespace != "":
		what += " in namespace " + e.Namespace
	default:
		what += " cluster-wide"
	}
	return fmt.Sprintf("safety rule %q: %s may not %s %s: %s", e.Rule, who, e.Verb, what, e.Reason)
}

// IsSafetyViolation reports whether err is, or wraps, a *SafetyViolation.
func IsSafetyViolation(err error) bool {
	var v *SafetyViolation
	return errors.As(err, &v)
}

// Scope says where an Exception applies.
type Scope string

const (
	// InOperationNamespace: only in the NAC object's own namespace.
	InOperationNamespace Scope = "the operation's namespace"
	// InAnyNamespace: in every namespace; allowed for reads only.
	InAnyNamespace Scope = "any namespace"
)

// Exception is a narrow permission a phase function declares beyond the
// safety rule: verbs on one kind, in one scope, and why it needs them (the
// reason is documented by `nac funcs`).
type Exception struct {
	// Verbs allowed: get, list (InAnyNamespace or InOperationNamespace);
	// create, update, patch, delete, and "update status", "patch status"
	// for the status subresource (InOperationNamespace only). DeleteAllOf
	// is never excepted: it always stays in the OADP namespace, narrowed to
	// the operation's label.
	Verbs []string
	// Kind is the group and kind of the objects (a List type counts as its
	// item kind).
	Kind schema.GroupKind
	// Scope is where: InOperationNamespace, or InAnyNamespace for reads.
	Scope Scope
	// Why the function needs it, in a sentence.
	Why string
}

// String returns "delete NonAdminRestore in the operation's namespace".
func (e Exception) String() string {
	return fmt.Sprintf("%s %s in %s", strings.Join(e.Verbs, ", "), e.Kind.Kind, e.Scope)
}

// Excepted is implemented by phase functions that need exceptions to the
// safety rule (the cascades to a tenant's own NonAdminRestores and
// NonAdminBackups, say). A function without it gets none.
type Excepted interface {
	SafetyExceptions() []Exception
}

var (
	readVerbs  = []string{"get", "list"}
	writeVerbs = []string{"create", "update", "patch", "delete", "update status", "patch status"}
)

// NewGuardedRegistry returns a registry of funcs, as NewRegistry, in which
// every function sees, in Operation.Client and Operation.APIReader, clients
// over c and r guarded for the operation and phase it runs: they refuse
// (terminal *SafetyViolation) whatever the safety rule forbids, apart from
// the function's declared Exceptions. Phase functions hold no client of
// their own: this is the only way they reach the cluster. c reads through
// the cache and writes; r reads from the API server (the live objects the
// rule checks). It returns an error when a name is empty or used twice, or
// when an exception is malformed (a write anywhere but the operation's
// namespace, an unknown verb).
func NewGuardedRegistry(c client.Client, r client.Reader, funcs ...Func) (*Registry, error) {
	guarded := make([]Func, len(funcs))
	for i, f := range funcs {
		var exceptions []Exception
		if e, ok := f.(Excepted); ok {
			exceptions = e.SafetyExceptions()
		}
		for _, e := range exceptions {
			for _, v := range e.Verbs {
				switch {
				case !slices.Contains(readVerbs, v) && !slices.Contains(writeVerbs, v):
					return nil, fmt.Errorf("%s: exception %s: unknown verb %q", f.Name(), e, v)
				case slices.Contains(writeVerbs, v) && e.Scope != InOperationNamespace:
					return nil, fmt.Errorf("%s: exception %s: writes may be excepted only in %s", f.Name(), e, InOperationNamespace)
				}
			}
			if e.Scope != InOperationNamespace && e.Scope != InAnyNamespace {
				return nil, fmt.Errorf("%s: exception %s: unknown scope", f.Name(), e)
			}
		}
		g := &guardedFunc{Func: f, client: c, reader: r, exceptions: exceptions}
		if d, ok := f.(Documented); ok {
			guarded[i] = &documentedGuardedFunc{guardedFunc: g, doc: d}
		} else {
			guarded[i] = g
		}
	}
	return NewRegistry(guarded...)
}

// guardedFunc runs a Func with the operation's guarded clients.
type guardedFunc struct {
	Func
	client     client.Client
	reader     client.Reader
	exceptions []Exception
}

// SafetyExceptions implements Excepted: the wrapped function's.
func (g *guardedFunc) SafetyExceptions() []Exception { return g.exceptions }

// Run implements Func: it runs the wrapped function on a copy of op whose
// Client and APIReader are guarded for op, this phase and this function.
func (g *guardedFunc) Run(ctx context.Context, op *Operation, args any) (Result, error) {
	o := *op
	gd := &guard{op: &o, fn: g.Name(), exceptions: g.exceptions, base: g.client, live: g.reader}
	o.Func, o.Client, o.APIReader = g.Name(), gd.client(), &guardedReader{g: gd, r: g.reader}
	return g.Func.Run(ctx, &o, args)
}

type documentedGuardedFunc struct {
	*guardedFunc
	doc Documented
}

// Doc implements Documented: the wrapped function's.
func (g *documentedGuardedFunc) Doc() FuncDoc { return g.doc.Doc() }

// origin holds the keys that tie an object in the OADP namespace to the NAC
// object it was made for (OADP NAC): the NACUUID label and the name and
// namespace annotations.
type origin struct{ label, name, namespace string }

// originOf returns the origin keys of obj's kind; ok is false for a kind
// that makes nothing in the OADP namespace.
func originOf(obj Object) (o origin, ok bool) {
	switch obj.(type) {
	case *nacv1alpha1.NonAdminBackup:
		return origin{nacv1alpha1.NabOriginNACUUIDLabel, nacv1alpha1.NabOriginNameAnnotation, nacv1alpha1.NabOriginNamespaceAnnotation}, true
	case *nacv1alpha1.NonAdminRestore:
		return origin{nacv1alpha1.NarOriginNACUUIDLabel, nacv1alpha1.NarOriginNameAnnotation, nacv1alpha1.NarOriginNamespaceAnnotation}, true
	case *nacv1alpha1.NonAdminBackupStorageLocation:
		return origin{nacv1alpha1.NabslOriginNACUUIDLabel, nacv1alpha1.NabslOriginNameAnnotation, nacv1alpha1.NabslOriginNamespaceAnnotation}, true
	case *nacv1alpha1.NonAdminDownloadRequest:
		return origin{nacv1alpha1.NadrOriginNACUUIDLabel, nacv1alpha1.NadrOriginNameAnnotation, nacv1alpha1.NadrOriginNamespaceAnnotation}, true
	case *nacv1alpha1.NonAdminSchedule:
		return origin{nacv1alpha1.NasOriginNACUUIDLabel, nacv1alpha1.NasOriginNameAnnotation, nacv1alpha1.NasOriginNamespaceAnnotation}, true
	}
	return origin{}, false
}

// OriginKeys returns the keys tying objects of the OADP namespace to a NAC
// object of obj's kind (OADP NAC): the NACUUID label and the origin name and
// namespace annotations, openshift.io/oadp-<nab|nar|nabsl|nadr|nas>-origin-*;
// ok is false for a kind that makes nothing in the OADP namespace.
func OriginKeys(obj Object) (label, nameAnnotation, namespaceAnnotation string, ok bool) {
	o, ok := originOf(obj)
	return o.label, o.name, o.namespace, ok
}

// Owns reports whether obj, an object of the OADP namespace, is op's: it
// carries op's origin label with op.UUID, or with one of also, and was not
// made for another namespace — its origin-namespace annotation, which every
// object nacflow makes carries (OwnerMeta; the guard stamps it on what
// phases create), names op's namespace, or it has none (RuleWriteOwn).
// Every object of another tenant is thus excluded, whatever its label.
func (op *Operation) Owns(obj client.Object, also ...string) bool {
	o, ok := originOf(op.Object)
	if !ok {
		return false
	}
	got, labelled := obj.GetLabels()[o.label]
	if !labelled || got == "" || (got != op.UUID && !slices.Contains(also, got)) {
		return false
	}
	ns, made := obj.GetAnnotations()[o.namespace]
	return !made || ns == op.Object.GetNamespace()
}

// OriginLabel returns the key of the label holding op's NACUUID on the
// objects it creates: openshift.io/oadp-<nab|nar|nabsl>-origin-nacuuid by the
// NAC object's kind ("" for another kind).
func (op *Operation) OriginLabel() string {
	o, _ := originOf(op.Object)
	return o.label
}

// OwnerMeta returns new maps of the labels and annotations every object op
// creates in the OADP namespace carries (OADP NAC): labels openshift.io/oadp
// "True", app.kubernetes.io/managed-by and the origin NACUUID label with
// op.UUID; annotations origin-name and origin-namespace of the NAC object.
// It is the one builder of these keys: the safety rule recognises an
// operation's objects by them.
func (op *Operation) OwnerMeta() (labels, annotations map[string]string) {
	labels = map[string]string{nacv1alpha1.OADPLabel: nacv1alpha1.OADPLabelValue, nacv1alpha1.ManagedByLabel: nacv1alpha1.ManagedByLabelValue}
	annotations = map[string]string{}
	if o, ok := originOf(op.Object); ok {
		labels[o.label] = op.UUID
		annotations[o.name] = op.Object.GetName()
		annotations[o.namespace] = op.Object.GetNamespace()
	}
	return labels, annotations
}

// CheckOwned returns nil when op owns obj (Owns: op's origin label with
// op.UUID, or with one of also, e.g. the NACUUID of the Velero Backup a
// NonAdminBackup adopted, and op's namespace in its origin-namespace
// annotation); else a terminal *SafetyViolation of RuleReferences saying
// that the phase may not verb (e.g. "mirror") kind obj. Phases check with it
// what they read and act on by a name a blueprint can template.
func (op *Operation) CheckOwned(verb, kind string, obj client.Object, also ...string) error {
	if op.Owns(obj, also...) {
		return nil
	}
	return Terminal(&SafetyViolation{Rule: RuleReferences, Phase: op.Phase, Func: op.Func, Verb: verb, Kind: kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName(), Reason: op.notOwned(obj, also...)})
}

// notOwned says why op does not own obj: its label (neither op.UUID nor one
// of also), or its origin namespace.
func (op *Operation) notOwned(obj client.Object, also ...string) string {
	o, ok := originOf(op.Object)
	if !ok {
		return "this operation's kind makes no objects"
	}
	if got := obj.GetLabels()[o.label]; got == "" || (got != op.UUID && !slices.Contains(also, got)) {
		return fmt.Sprintf("it does not carry this operation's label %s=%s", o.label, op.UUID)
	}
	return fmt.Sprintf("it was not made for namespace %s (annotation %s is %q)", op.Object.GetNamespace(), o.namespace, obj.GetAnnotations()[o.namespace])
}

// guard decides, for one operation, phase and function, what the safety
// rule allows.
type guard struct {
	op         *Operation
	fn         string
	exceptions []Exception
	// base is the unguarded client (reads through the cache, writes).
	base client.Client
	// live reads the API server: the labels of an object about to be
	// changed, the objects a new object references.
	live client.Reader
}

// violation returns a terminal *SafetyViolation.
func (g *guard) violation(rule, verb, kind, namespace, name, reason string) error {
	return Terminal(&SafetyViolation{Rule: rule, Phase: g.op.Phase, Func: g.fn, Verb: verb, Kind: kind,
		Namespace: namespace, Name: name, Reason: reason})
}

// kindOf returns the group and kind of obj (a list's item kind).
func (g *guard) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(obj, g.base.Scheme())
	if err != nil {
		return gvk, Terminalf("safety rule: phase %s (%s): %w", g.op.Phase, g.fn, err)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk, nil
}

// excepted reports whether one of the function's exceptions allows verb on
// kind in namespace.
func (g *guard) excepted(verb string, kind schema.GroupKind, namespace string) bool {
	for _, e := range g.exceptions {
		if e.Kind != kind || !slices.Contains(e.Verbs, verb) {
			continue
		}
		if e.Scope == InAnyNamespace || (namespace != "" && namespace == g.op.Object.GetNamespace()) {
			return true
		}
	}
	return false
}

// read checks a get or list in namespace ("" = cluster-wide or
// cluster-scoped).
func (g *guard) read(verb string, obj runtime.Object, namespace, name string) error {
	gvk, err := g.kindOf(obj)
	if err != nil {
		return err
	}
	if namespace != "" && (namespace == g.op.Object.GetNamespace() || namespace == g.op.OADPNamespace) {
		return nil
	}
	if g.excepted(verb, gvk.GroupKind(), namespace) {
		return nil
	}
	return g.violation(RuleRead, verb, gvk.Kind, namespace, name,
		fmt.Sprintf("phases read only namespace %s and the OADP namespace %s", g.op.Object.GetNamespace(), g.op.OADPNamespace))
}

// write checks a create, update, patch or delete of obj (status: sub is
// "status"). For all but create, the live object's labels are checked too.
func (g *guard) write(ctx context.Context, verb, sub string, obj client.Object) error {
	gvk, err := g.kindOf(obj)
	if err != nil {
		return err
	}
	exceptionVerb := verb
	if sub != "" {
		exceptionVerb = verb + " " + sub
		verb += " " + sub + " of"
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	if g.excepted(exceptionVerb, gvk.GroupKind(), ns) {
		return nil
	}
	if ns == "" || ns != g.op.OADPNamespace {
		return g.violation(RuleWriteNamespace, verb, gvk.Kind, ns, name,
			fmt.Sprintf("phases write only in the OADP namespace %s", g.op.OADPNamespace))
	}
	if verb == "create" {
		g.stampOrigin(obj)
	}
	if verb != "delete" && !g.op.Owns(obj) {
		return g.violation(RuleWriteOwn, verb, gvk.Kind, ns, name, g.op.notOwned(obj))
	}
	if verb != "create" {
		liveObj, err := g.base.Scheme().New(gvk)
		if err != nil {
			return Terminalf("safety rule: phase %s (%s): %w", g.op.Phase, g.fn, err)
		}
		current, ok := liveObj.(client.Object)
		if !ok {
			return Terminalf("safety rule: phase %s (%s): %s is not an object", g.op.Phase, g.fn, gvk)
		}
		if err := g.live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, current); err != nil {
			return err // as the API server says: NotFound, or retryable
		}
		if !g.op.Owns(current) {
			return g.violation(RuleWriteOwn, verb, gvk.Kind, ns, name, g.op.notOwned(current))
		}
	}
	if verb == "delete" || sub != "" {
		return nil
	}
	return g.references(ctx, verb, gvk.Kind, obj)
}

// stampOrigin gives obj, about to be created, the origin name and namespace
// annotations of the operation (OwnerMeta's) where it has none, so that
// everything a phase creates is tied to its NAC object; a value that differs
// is left for Owns to refuse.
func (g *guard) stampOrigin(obj client.Object) {
	o, ok := originOf(g.op.Object)
	if !ok {
		return
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if _, set := a[o.namespace]; !set {
		a[o.namespace] = g.op.Object.GetNamespace()
	}
	if _, set := a[o.name]; !set {
		a[o.name] = g.op.Object.GetName()
	}
	obj.SetAnnotations(a)
}

// deleteOwned runs a DeleteAllOf narrowed to the operation (deleteAllOf) as
// a list of the live objects that match, then a delete of each one the
// operation owns (Owns), with its UID as precondition: the API server
// cannot select by annotation, and a label-matching object made for another
// namespace (a NACUUID written into a Backup synced from a tenant's bucket)
// is another tenant's. Those are skipped, and logged.
func (g *guard) deleteOwned(ctx context.Context, c client.Client, obj client.Object, opts []client.DeleteAllOfOption) error {
	o, err := g.deleteAllOf(obj, opts)
	if err != nil {
		return err
	}
	gvk, err := g.kindOf(obj)
	if err != nil {
		return err
	}
	raw, err := g.base.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return Terminalf("safety rule: phase %s (%s): %w", g.op.Phase, g.fn, err)
	}
	list, ok := raw.(client.ObjectList)
	if !ok {
		return Terminalf("safety rule: phase %s (%s): %s has no list type", g.op.Phase, g.fn, gvk)
	}
	if err := g.live.List(ctx, list, &o.ListOptions); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return Terminalf("safety rule: phase %s (%s): %w", g.op.Phase, g.fn, err)
	}
	for _, it := range items {
		item, ok := it.(client.Object)
		if !ok {
			continue
		}
		if !g.op.Owns(item) {
			log.FromContext(ctx).Info("safety rule: skipped an object carrying this operation's label that was made for another namespace",
				"rule", RuleWriteOwn, "kind", gvk.Kind, "name", item.GetName(), "reason", g.op.notOwned(item))
			continue
		}
		del := o.DeleteOptions
		uid := item.GetUID()
		del.Preconditions = &metav1.Preconditions{UID: &uid}
		if err := c.Delete(ctx, item, &del); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// deleteAllOf checks a DeleteAllOf and returns its options narrowed to the
// operation's label.
func (g *guard) deleteAllOf(obj client.Object, opts []client.DeleteAllOfOption) (*client.DeleteAllOfOptions, error) {
	gvk, err := g.kindOf(obj)
	if err != nil {
		return nil, err
	}
	o := &client.DeleteAllOfOptions{}
	o.ApplyOptions(opts)
	if o.Namespace == "" || o.Namespace != g.op.OADPNamespace {
		return nil, g.violation(RuleWriteNamespace, "deletecollection", gvk.Kind, o.Namespace, "",
			fmt.Sprintf("phases write only in the OADP namespace %s", g.op.OADPNamespace))
	}
	label := g.op.OriginLabel()
	if label == "" {
		return nil, g.violation(RuleWriteOwn, "deletecollection", gvk.Kind, o.Namespace, "", "this operation's kind makes no objects")
	}
	req, err := labels.NewRequirement(label, selection.Equals, []string{g.op.UUID})
	if err != nil {
		return nil, g.violation(RuleWriteOwn, "deletecollection", gvk.Kind, o.Namespace, "", err.Error())
	}
	sel := o.LabelSelector
	if sel == nil {
		sel = labels.NewSelector()
	}
	o.LabelSelector = sel.Add(*req)
	return o, nil
}

// references checks what obj, about to be created or changed, points at
// (RuleReferences). Kinds not listed reference nothing the rule knows of.
func (g *guard) references(ctx context.Context, verb, kind string, obj client.Object) error {
	refuse := func(reason string) error {
		return g.violation(RuleReferences, verb, kind, obj.GetNamespace(), obj.GetName(), reason)
	}
	switch o := obj.(type) {
	case *velerov1.BackupStorageLocation:
		// Without a credential Velero would use its own: the admin's.
		if o.Spec.Credential == nil || o.Spec.Credential.Name == "" {
			return refuse("spec.credential must name this operation's own Secret copy (without one Velero uses the admin's credentials)")
		}
		if err := g.ownSecret(ctx, "spec.credential", o.Spec.Credential.Name, refuse); err != nil {
			return err
		}
		if o.Spec.ObjectStorage != nil && o.Spec.ObjectStorage.CACertRef != nil {
			return g.ownSecret(ctx, "spec.objectStorage.caCertRef", o.Spec.ObjectStorage.CACertRef.Name, refuse)
		}
	case *velerov1.Backup:
		if err := g.onlyOwnNamespace("spec.includedNamespaces", o.Spec.IncludedNamespaces, refuse); err != nil {
			return err
		}
		if o.Spec.StorageLocation != "" {
			return g.notOtherTenantsBSL(ctx, o.Spec.StorageLocation, refuse)
		}
	case *velerov1.Restore:
		if err := g.onlyOwnNamespace("spec.includedNamespaces", o.Spec.IncludedNamespaces, refuse); err != nil {
			return err
		}
		for from, to := range o.Spec.NamespaceMapping {
			if from != g.op.Object.GetNamespace() || to != g.op.Object.GetNamespace() {
				return refuse(fmt.Sprintf("spec.namespaceMapping maps %s to %s: only namespace %s is the tenant's", from, to, g.op.Object.GetNamespace()))
			}
		}
		if o.Spec.ScheduleName != "" {
			return refuse(fmt.Sprintf("spec.scheduleName %q: a tenant restores only its own backups, named by spec.backupName", o.Spec.ScheduleName))
		}
		return g.tenantBackup(ctx, "spec.backupName", o.Spec.BackupName, refuse)
	case *velerov1.DeleteBackupRequest:
		return g.tenantBackup(ctx, "spec.backupName", o.Spec.BackupName, refuse)
	case *velerov1.DownloadRequest:
		switch nacv1alpha1.DownloadTargetOf(o.Spec.Target.Kind) {
		case "NonAdminBackup":
			return g.tenantBackup(ctx, "spec.target.name", o.Spec.Target.Name, refuse)
		case "NonAdminRestore":
			return g.tenantRestore(ctx, "spec.target.name", o.Spec.Target.Name, refuse)
		default:
			return refuse(fmt.Sprintf("spec.target.kind %q is not a kind of file of a Velero Backup or Restore", o.Spec.Target.Kind))
		}
	}
	return nil
}

// tenantRestore checks that the Velero Restore name in the OADP namespace
// was made for the operation's namespace (its origin-namespace annotation).
func (g *guard) tenantRestore(ctx context.Context, field, name string, refuse func(string) error) error {
	if name == "" {
		return refuse(field + " is empty: it must name a Velero Restore of namespace " + g.op.Object.GetNamespace())
	}
	r := &velerov1.Restore{}
	key := client.ObjectKey{Namespace: g.op.OADPNamespace, Name: name}
	err := g.base.Get(ctx, key, r)
	if apierrors.IsNotFound(err) {
		err = g.live.Get(ctx, key, r) // the cache may be behind
	}
	if apierrors.IsNotFound(err) {
		return refuse(fmt.Sprintf("%s names Velero Restore %s/%s, which does not exist", field, g.op.OADPNamespace, name))
	}
	if err != nil {
		return fmt.Errorf("reading Velero Restore %s/%s: %w", g.op.OADPNamespace, name, err)
	}
	own := g.op.Object.GetNamespace()
	if got := r.Annotations[nacv1alpha1.NarOriginNamespaceAnnotation]; got != own {
		return refuse(fmt.Sprintf("%s names Velero Restore %s/%s, which was not made for namespace %s (annotation %s is %q)",
			field, g.op.OADPNamespace, name, own, nacv1alpha1.NarOriginNamespaceAnnotation, got))
	}
	return nil
}

// ownSecret checks that the Secret name in the OADP namespace carries the
// operation's label.
func (g *guard) ownSecret(ctx context.Context, field, name string, refuse func(string) error) error {
	s := &corev1.Secret{}
	// Secrets are read from the API server: there is no Secret cache.
	err := g.live.Get(ctx, client.ObjectKey{Namespace: g.op.OADPNamespace, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return refuse(fmt.Sprintf("%s names Secret %s/%s, which does not exist: it must be this operation's own copy", field, g.op.OADPNamespace, name))
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", g.op.OADPNamespace, name, err)
	}
	label := g.op.OriginLabel()
	if v, ok := s.Labels[label]; !ok || v != g.op.UUID {
		return refuse(fmt.Sprintf("%s names Secret %s/%s, which is not this operation's own copy: it does not carry the label %s=%s",
			field, g.op.OADPNamespace, name, label, g.op.UUID))
	}
	if !g.op.Owns(s) {
		return refuse(fmt.Sprintf("%s names Secret %s/%s, which is not this operation's own copy: %s",
			field, g.op.OADPNamespace, name, g.op.notOwned(s)))
	}
	return nil
}

// onlyOwnNamespace checks that namespaces is exactly the operation's
// namespace.
func (g *guard) onlyOwnNamespace(field string, namespaces []string, refuse func(string) error) error {
	own := g.op.Object.GetNamespace()
	if len(namespaces) != 1 || namespaces[0] != own {
		return refuse(fmt.Sprintf("%s is %v: it must be exactly [%s], the tenant's namespace", field, namespaces, own))
	}
	return nil
}

// tenantBackup checks that the Velero Backup name in the OADP namespace was
// made for the operation's namespace (its origin-namespace annotation).
func (g *guard) tenantBackup(ctx context.Context, field, name string, refuse func(string) error) error {
	if name == "" {
		return refuse(field + " is empty: it must name a Velero Backup of namespace " + g.op.Object.GetNamespace())
	}
	b := &velerov1.Backup{}
	key := client.ObjectKey{Namespace: g.op.OADPNamespace, Name: name}
	err := g.base.Get(ctx, key, b)
	if apierrors.IsNotFound(err) {
		err = g.live.Get(ctx, key, b) // the cache may be behind
	}
	if apierrors.IsNotFound(err) {
		return refuse(fmt.Sprintf("%s names Velero Backup %s/%s, which does not exist", field, g.op.OADPNamespace, name))
	}
	if err != nil {
		return fmt.Errorf("reading Velero Backup %s/%s: %w", g.op.OADPNamespace, name, err)
	}
	own := g.op.Object.GetNamespace()
	if got := b.Annotations[nacv1alpha1.NabOriginNamespaceAnnotation]; got != own {
		return refuse(fmt.Sprintf("%s names Velero Backup %s/%s, which was not made for namespace %s (annotation %s is %q)",
			field, g.op.OADPNamespace, name, own, nacv1alpha1.NabOriginNamespaceAnnotation, got))
	}
	return nil
}

// notOtherTenantsBSL checks that the Velero BSL name, when it is a tenant's
// (it carries the NABSL origin label), is one of the operation's namespace.
// The admin's locations are the admin's to grant (args.enforce); tenant
// locations are in the manager's cache, so this costs no API call.
func (g *guard) notOtherTenantsBSL(ctx context.Context, name string, refuse func(string) error) error {
	bsl := &velerov1.BackupStorageLocation{}
	err := g.base.Get(ctx, client.ObjectKey{Namespace: g.op.OADPNamespace, Name: name}, bsl)
	if apierrors.IsNotFound(err) {
		return nil // not a tenant's location (or none at all: Velero refuses the backup)
	}
	if err != nil {
		return fmt.Errorf("reading Velero BackupStorageLocation %s/%s: %w", g.op.OADPNamespace, name, err)
	}
	if _, tenant := bsl.Labels[nacv1alpha1.NabslOriginNACUUIDLabel]; !tenant {
		return nil
	}
	own := g.op.Object.GetNamespace()
	if got := bsl.Annotations[nacv1alpha1.NabslOriginNamespaceAnnotation]; got != own {
		return refuse(fmt.Sprintf("spec.storageLocation names Velero BackupStorageLocation %s/%s of namespace %q, not of namespace %s",
			g.op.OADPNamespace, name, got, own))
	}
	return nil
}

// client returns the guarded client over g.base.
func (g *guard) client() client.Client {
	return interceptor.NewClient(noWatch{g.base}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := g.read("get", obj, key.Namespace, key.Name); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := g.read("list", list, listNamespace(opts), ""); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Watch: func(_ context.Context, _ client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			gvk, err := g.kindOf(list)
			if err != nil {
				return nil, err
			}
			return nil, g.violation(RuleRead, "watch", gvk.Kind, listNamespace(opts), "", "phases do not watch: the controller's watches wake them")
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := g.write(ctx, "create", "", obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := g.write(ctx, "update", "", obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := g.write(ctx, "patch", "", obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := g.write(ctx, "delete", "", obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			return g.deleteOwned(ctx, c, obj, opts)
		},
		SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceGetOption) error {
			if err := g.read("get", obj, obj.GetNamespace(), obj.GetName()); err != nil {
				return err
			}
			return c.SubResource(sub).Get(ctx, obj, subObj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if err := g.write(ctx, "create", sub, obj); err != nil {
				return err
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := g.write(ctx, "update", sub, obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := g.write(ctx, "patch", sub, obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

// listNamespace returns the namespace opts list in ("" = all).
func listNamespace(opts []client.ListOption) string {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	return o.Namespace
}

// noWatch adapts a client.Client to the interceptor's client.WithWatch; the
// guard refuses every watch before it gets here.
type noWatch struct{ client.Client }

// Watch implements client.WithWatch.
func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("phases do not watch")
}

// guardedReader is the guarded APIReader.
type guardedReader struct {
	g *guard
	r client.Reader
}

// Get implements client.Reader under RuleRead.
func (r *guardedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.g.read("get", obj, key.Namespace, key.Name); err != nil {
		return err
	}
	return r.r.Get(ctx, key, obj, opts...)
}

// List implements client.Reader under RuleRead.
func (r *guardedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.g.read("list", list, listNamespace(opts), ""); err != nil {
		return err
	}
	return r.r.List(ctx, list, opts...)
}
