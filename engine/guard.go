package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// The safety rule of the engine (docs/architecture.md, "The safety rule"):
// whatever a blueprint says, a phase may only write objects in the OADP
// namespace that carry its operation's NACUUID label, may only read the
// operation's own namespace and the OADP namespace, and an object it creates
// may only reference objects of its own operation (what an object
// references is for the registry's ReferenceRules to say: the engine knows
// no kind's fields). The operation's own NAC object is written by the runner
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
	// objects of its own operation, or of its tenant's namespace, as the
	// registry's ReferenceRules read its fields; a phase that acts on an
	// object it found by a templated name checks it with CheckOwned.
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
	// InRestoreTestSandbox: the restore-test sandbox of the operation's
	// namespace (v1alpha1.RestoreTestSandbox): the cluster-scoped Namespace
	// of that name, and objects in it. Tenants cannot read it; only a
	// restore test writes there, and whatever it writes must carry the
	// operation's restore-test label (checked for the live object too).
	InRestoreTestSandbox Scope = "the operation's restore-test sandbox"
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

// ReferenceRules say what an object a phase writes may point at
// (RuleReferences). What an object references is in fields of its kind,
// which the engine does not know: the phase functions' side, which makes
// those objects, provides the rules (phases.VeleroReferences for Velero's
// kinds) to NewGuardedRegistry.
type ReferenceRules interface {
	// CheckReferences returns nil when obj, which a phase of w.Op is about
	// to create, update or patch in the OADP namespace (the guard has
	// checked that w.Op owns it), references only objects w.Op may use;
	// else the error of w.Refuse, or a read error (retried as the API
	// server's). An object of a kind the rules do not know references
	// nothing.
	CheckReferences(ctx context.Context, w ReferenceCheck, obj client.Object) error
}

// ReferenceCheck is what ReferenceRules see of the write they check.
type ReferenceCheck struct {
	// Op is the operation whose phase writes: its NAC object, OADP
	// namespace and NACUUID.
	Op *Operation
	// Cached reads through the manager's cache; Live reads the API server,
	// for objects the cache may not hold yet, or never holds (Secrets).
	// Neither is guarded: a rule reads only what the object names.
	Cached, Live client.Reader
	// Refuse returns the terminal *SafetyViolation of RuleReferences that
	// refuses this write, with reason (what the object names, and why that
	// is not the operation's).
	Refuse func(reason string) error
}

// NewGuardedRegistry returns a registry of funcs, as NewRegistry, in which
// every function sees, in Operation.Client and Operation.APIReader, clients
// over c and r guarded for the operation and phase it runs: they refuse
// (terminal *SafetyViolation) whatever the safety rule forbids, apart from
// the function's declared Exceptions. Phase functions hold no client of
// their own: this is the only way they reach the cluster. c reads through
// the cache and writes; r reads from the API server (the live objects the
// rule checks). refs check what each object a phase creates or changes
// references (nil: only that the object itself is the operation's). It
// returns an error when a name is empty or used twice, or when an exception
// is malformed (a write anywhere but the operation's namespace, an unknown
// verb).
func NewGuardedRegistry(c client.Client, r client.Reader, refs ReferenceRules, funcs ...Func) (*Registry, error) {
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
				case slices.Contains(writeVerbs, v) && e.Scope != InOperationNamespace && e.Scope != InRestoreTestSandbox:
					return nil, fmt.Errorf("%s: exception %s: writes may be excepted only in %s or %s", f.Name(), e, InOperationNamespace, InRestoreTestSandbox)
				}
			}
			if e.Scope != InOperationNamespace && e.Scope != InAnyNamespace && e.Scope != InRestoreTestSandbox {
				return nil, fmt.Errorf("%s: exception %s: unknown scope", f.Name(), e)
			}
		}
		g := &guardedFunc{Func: f, client: c, reader: r, rules: refs, exceptions: exceptions}
		if d, ok := f.(Documented); ok {
			guarded[i] = &documentedGuardedFunc{guardedFunc: g, doc: d}
		} else {
			guarded[i] = g
		}
	}
	return NewRegistry(guarded...)
}

// KeepsMessage implements MessageKeeper for a wrapped Func that does.
func (g *guardedFunc) KeepsMessage(message string) bool {
	k, ok := g.Func.(MessageKeeper)
	return ok && k.KeepsMessage(message)
}

// guardedFunc runs a Func with the operation's guarded clients.
type guardedFunc struct {
	Func
	client     client.Client
	reader     client.Reader
	rules      ReferenceRules
	exceptions []Exception
}

// SafetyExceptions implements Excepted: the wrapped function's.
func (g *guardedFunc) SafetyExceptions() []Exception { return g.exceptions }

// Run implements Func: it runs the wrapped function on a copy of op whose
// Client and APIReader are guarded for op, this phase and this function.
func (g *guardedFunc) Run(ctx context.Context, op *Operation, args any) (Result, error) {
	o := *op
	gd := &guard{op: &o, fn: g.Name(), exceptions: g.exceptions, rules: g.rules, base: g.client, live: g.reader}
	o.Func, o.Client, o.APIReader = g.Name(), gd.client(), &guardedReader{g: gd, r: g.reader}
	return g.Func.Run(ctx, &o, args)
}

type documentedGuardedFunc struct {
	*guardedFunc
	doc Documented
}

// Doc implements Documented: the wrapped function's.
func (g *documentedGuardedFunc) Doc() FuncDoc { return g.doc.Doc() }

// Owns reports whether obj, an object of the OADP namespace, is op's: it
// carries op's origin label with op.UUID, or with one of also, and was not
// made for another namespace — its origin-namespace annotation, which every
// object nacflow makes carries (OwnerMeta; the guard stamps it on what
// phases create), names op's namespace, or it has none (RuleWriteOwn).
// Every object of another tenant is thus excluded, whatever its label.
func (op *Operation) Owns(obj client.Object, also ...string) bool {
	o := op.Object.OriginKeys()
	if o.Label == "" {
		return false
	}
	got, labelled := obj.GetLabels()[o.Label]
	if !labelled || got == "" || (got != op.UUID && !slices.Contains(also, got)) {
		return false
	}
	ns, made := obj.GetAnnotations()[o.NamespaceAnnotation]
	return !made || ns == op.Object.GetNamespace()
}

// OriginLabel returns the key of the label holding op's NACUUID on the
// objects it creates, as op.Object's OriginKeys say
// (openshift.io/oadp-<nab|nar|nabsl|nadr|nas>-origin-nacuuid; "" for an
// object whose kind makes nothing).
func (op *Operation) OriginLabel() string {
	return op.Object.OriginKeys().Label
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
	if o := op.Object.OriginKeys(); o.Label != "" {
		labels[o.Label] = op.UUID
		annotations[o.NameAnnotation] = op.Object.GetName()
		annotations[o.NamespaceAnnotation] = op.Object.GetNamespace()
	}
	return labels, annotations
}

// ObjectMeta returns the metadata of an object op creates in the OADP
// namespace: name, the OADP namespace, and OwnerMeta's labels and
// annotations (new maps, which the caller may add to).
func (op *Operation) ObjectMeta(name string) metav1.ObjectMeta {
	labels, annotations := op.OwnerMeta()
	return metav1.ObjectMeta{Name: name, Namespace: op.OADPNamespace, Labels: labels, Annotations: annotations}
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
		Namespace: obj.GetNamespace(), Name: obj.GetName(), Reason: op.WhyNotOwned(obj, also...)})
}

// WhyNotOwned says why op does not own obj (Owns is false): its label is
// neither op.UUID nor one of also, or it was made for another namespace (its
// origin-namespace annotation). Refusals quote it.
func (op *Operation) WhyNotOwned(obj client.Object, also ...string) string {
	o := op.Object.OriginKeys()
	if o.Label == "" {
		return "this operation's kind makes no objects"
	}
	if got := obj.GetLabels()[o.Label]; got == "" || (got != op.UUID && !slices.Contains(also, got)) {
		return fmt.Sprintf("it does not carry this operation's label %s=%s", o.Label, op.UUID)
	}
	return fmt.Sprintf("it was not made for namespace %s (annotation %s is %q)", op.Object.GetNamespace(), o.NamespaceAnnotation, obj.GetAnnotations()[o.NamespaceAnnotation])
}

// guard decides, for one operation, phase and function, what the safety
// rule allows.
type guard struct {
	op         *Operation
	fn         string
	exceptions []Exception
	// rules check what a written object references (nil: none).
	rules ReferenceRules
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
// kind in namespace (name: the object's, "" for a list).
func (g *guard) excepted(verb string, kind schema.GroupKind, namespace, name string) bool {
	own := g.op.Object.GetNamespace()
	for _, e := range g.exceptions {
		if e.Kind != kind || !slices.Contains(e.Verbs, verb) {
			continue
		}
		switch e.Scope {
		case InAnyNamespace:
			return true
		case InOperationNamespace:
			if namespace != "" && namespace == own {
				return true
			}
		case InRestoreTestSandbox:
			sandbox := nacv1alpha1.RestoreTestSandbox(own)
			if namespace == sandbox || (namespace == "" && kind == namespaceKind && name == sandbox) {
				return true
			}
		}
	}
	return false
}

// namespaceKind is the kind of the cluster-scoped Namespace objects.
var namespaceKind = schema.GroupKind{Kind: "Namespace"}

// sandboxed reports whether an excepted write of obj (kind) lands in the
// operation's restore-test sandbox: there, the object (and, but for a
// create, the live one) must carry the operation's restore-test label.
func (g *guard) sandboxed(kind schema.GroupKind, obj client.Object) bool {
	sandbox := nacv1alpha1.RestoreTestSandbox(g.op.Object.GetNamespace())
	return obj.GetNamespace() == sandbox || (obj.GetNamespace() == "" && kind == namespaceKind && obj.GetName() == sandbox)
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
	if g.excepted(verb, gvk.GroupKind(), namespace, name) {
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
	if g.excepted(exceptionVerb, gvk.GroupKind(), ns, name) {
		if g.sandboxed(gvk.GroupKind(), obj) {
			return g.sandboxWrite(ctx, verb, gvk, obj)
		}
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
		return g.violation(RuleWriteOwn, verb, gvk.Kind, ns, name, g.op.WhyNotOwned(obj))
	}
	if verb != "create" {
		current, err := g.liveObject(ctx, gvk, ns, name)
		if err != nil {
			return err
		}
		if !g.op.Owns(current) {
			return g.violation(RuleWriteOwn, verb, gvk.Kind, ns, name, g.op.WhyNotOwned(current))
		}
	}
	if verb == "delete" || sub != "" {
		return nil
	}
	return g.references(ctx, verb, gvk.Kind, obj)
}

// liveObject reads ns/name, of kind gvk, from the API server: the object a
// write would change, which the rule judges rather than the one sent.
// Errors: the API server's, as it says them (NotFound, or retryable); a
// kind the scheme cannot make is terminal.
func (g *guard) liveObject(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (client.Object, error) {
	liveObj, err := g.base.Scheme().New(gvk)
	if err != nil {
		return nil, Terminalf("safety rule: phase %s (%s): %w", g.op.Phase, g.fn, err)
	}
	current, ok := liveObj.(client.Object)
	if !ok {
		return nil, Terminalf("safety rule: phase %s (%s): %s is not an object", g.op.Phase, g.fn, gvk)
	}
	if err := g.live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, current); err != nil {
		return nil, err
	}
	return current, nil
}

// sandboxWrite checks a write in the operation's restore-test sandbox: the
// object sent (create, update, patch) and the live one (all but create) carry
// the operation's restore-test label, so a phase never touches a namespace,
// or an object in it, that another operation's test made or that an admin
// happened to name like a sandbox.
func (g *guard) sandboxWrite(ctx context.Context, verb string, gvk schema.GroupVersionKind, obj client.Object) error {
	ns, name := obj.GetNamespace(), obj.GetName()
	mine := func(o client.Object) bool { return o.GetLabels()[nacv1alpha1.RestoreTestLabel] == g.op.UUID }
	if verb != "delete" && !mine(obj) {
		return g.violation(RuleWriteOwn, verb, gvk.Kind, ns, name, fmt.Sprintf("objects of the restore-test sandbox carry label %s=%s", nacv1alpha1.RestoreTestLabel, g.op.UUID))
	}
	if verb == "create" {
		return nil
	}
	current, err := g.liveObject(ctx, gvk, ns, name)
	if err != nil {
		return err
	}
	if !mine(current) {
		return g.violation(RuleWriteOwn, verb, gvk.Kind, ns, name, fmt.Sprintf("it does not carry label %s=%s: not this operation's restore test", nacv1alpha1.RestoreTestLabel, g.op.UUID))
	}
	return nil
}

// stampOrigin gives obj, about to be created, the origin name and namespace
// annotations of the operation (OwnerMeta's) where it has none, so that
// everything a phase creates is tied to its NAC object; a value that differs
// is left for Owns to refuse.
func (g *guard) stampOrigin(obj client.Object) {
	o := g.op.Object.OriginKeys()
	if o.Label == "" {
		return
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if _, set := a[o.NamespaceAnnotation]; !set {
		a[o.NamespaceAnnotation] = g.op.Object.GetNamespace()
	}
	if _, set := a[o.NameAnnotation]; !set {
		a[o.NameAnnotation] = g.op.Object.GetName()
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
				"rule", RuleWriteOwn, "kind", gvk.Kind, "name", item.GetName(), "reason", g.op.WhyNotOwned(item))
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

// references has the registry's ReferenceRules check what obj, about to be
// created, updated or patched, points at (RuleReferences); without rules it
// points at nothing the guard knows of.
func (g *guard) references(ctx context.Context, verb, kind string, obj client.Object) error {
	if g.rules == nil {
		return nil
	}
	return g.rules.CheckReferences(ctx, ReferenceCheck{Op: g.op, Cached: g.base, Live: g.live,
		Refuse: func(reason string) error {
			return g.violation(RuleReferences, verb, kind, obj.GetNamespace(), obj.GetName(), reason)
		}}, obj)
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
