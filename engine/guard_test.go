package engine_test

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/engine/enginetest"
)

// GuardSuite checks each part of the engine's safety rule with a phase
// function that does whatever a test asks, through the clients a guarded
// registry hands it.
type GuardSuite struct {
	cl client.Client
	// refs are the registry's reference rules (nil: none).
	refs engine.ReferenceRules
}

var _ = Suite(&GuardSuite{})

const (
	oadp   = "oadp"
	tenant = "tenant"
	other  = "other-tenant"
	uuid   = "u-1"
	theirs = "u-2"
)

func labelled(label, id string) map[string]string { return map[string]string{label: id} }

func secret(ns, name string, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func (s *GuardSuite) SetUpTest(c *C) {
	sc := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	nabsl := v1alpha1.NabslOriginNACUUIDLabel
	s.refs = nil
	s.cl = fake.NewClientBuilder().WithScheme(sc).WithObjects(
		secret(oadp, "cloud-credentials", nil),
		secret(oadp, "own-copy", labelled(nabsl, uuid)),
		secret(oadp, "other-copy", labelled(nabsl, theirs)),
		secret(tenant, "creds", nil),
		secret(other, "creds", nil),
		&v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "r1"}},
		&v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "r2"}},
		&v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "r3"}},
		&v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "loc"}},
		&v1alpha1.NonAdminBackupStorageLocationRequest{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "theirs-req", Labels: labelled(nabsl, theirs)}},
	).WithStatusSubresource(&v1alpha1.NonAdminBackupStorageLocationRequest{}, &v1alpha1.NonAdminRestore{}).Build()
}

// run runs p as phase "hostile" of an operation on obj (uuid u-1), with
// the suite's reference rules, and returns its error.
func (s *GuardSuite) run(_ *C, obj engine.Object, p *enginetest.Probe) error {
	return enginetest.RunGuarded(context.Background(), s.cl, s.refs, engine.Operation{Object: obj, OADPNamespace: oadp, UUID: uuid}, p)
}

func nabslOp() engine.Object {
	return &v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "loc"}}
}
func nabOp() engine.Object {
	return &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "nab"}}
}
func nadrOp() engine.Object {
	return &v1alpha1.NonAdminDownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "nadr"}}
}
func narOp() engine.Object {
	return &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "nar"}}
}

// refused checks that err is a terminal safety violation whose message
// matches msg (a regexp).
func refused(c *C, err error, msg string, about string) {
	c.Check(enginetest.Refusal(err, msg), IsNil, Commentf(about))
}

func (s *GuardSuite) TestWrites(c *C) {
	ctx := context.Background()
	nabsl := v1alpha1.NabslOriginNACUUIDLabel
	own := func(name string) *corev1.Secret {
		return secret(oadp, name, map[string]string{nabsl: uuid, v1alpha1.OADPLabel: v1alpha1.OADPLabelValue})
	}
	for _, tc := range []struct {
		about string
		do    func(op *engine.Operation) error
		msg   string // "" = allowed
	}{
		{"create in the tenant's namespace", func(op *engine.Operation) error { return op.Client.Create(ctx, own("x")) }, ""},
		{"create outside the OADP namespace", func(op *engine.Operation) error {
			return op.Client.Create(ctx, secret(tenant, "x", labelled(nabsl, uuid)))
		},
			`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not create Secret tenant/x: phases write only in the OADP namespace oadp`},
		{"create without the label", func(op *engine.Operation) error { return op.Client.Create(ctx, secret(oadp, "x", nil)) },
			`safety rule "writes only this operation's objects": phase hostile \(Probe\) may not create Secret oadp/x: it does not carry this operation's label openshift.io/oadp-nabsl-origin-nacuuid=u-1`},
		{"create with another operation's label", func(op *engine.Operation) error {
			return op.Client.Create(ctx, secret(oadp, "x", labelled(nabsl, theirs)))
		},
			`safety rule "writes only this operation's objects": .*`},
		{"delete the admin's Secret", func(op *engine.Operation) error { return op.Client.Delete(ctx, secret(oadp, "cloud-credentials", nil)) },
			`safety rule "writes only this operation's objects": phase hostile \(Probe\) may not delete Secret oadp/cloud-credentials: it does not carry this operation's label openshift.io/oadp-nabsl-origin-nacuuid=u-1`},
		{"delete another operation's Secret, claiming it", func(op *engine.Operation) error { return op.Client.Delete(ctx, own("other-copy")) },
			`safety rule "writes only this operation's objects": phase hostile \(Probe\) may not delete Secret oadp/other-copy: .*`},
		{"patch another operation's Secret, label forged", func(op *engine.Operation) error {
			before := secret(oadp, "other-copy", nil)
			return op.Client.Patch(ctx, own("other-copy"), client.MergeFrom(before))
		}, `safety rule "writes only this operation's objects": phase hostile \(Probe\) may not patch Secret oadp/other-copy: .*`},
		{"update another operation's Secret, label forged", func(op *engine.Operation) error {
			got := &corev1.Secret{}
			if err := s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "other-copy"}, got); err != nil {
				return err
			}
			got.Labels[nabsl] = uuid
			return op.Client.Update(ctx, got)
		}, `safety rule "writes only this operation's objects": phase hostile \(Probe\) may not update Secret oadp/other-copy: .*`},
		{"update dropping the own label", func(op *engine.Operation) error {
			return op.Client.Update(ctx, secret(oadp, "own-copy", nil))
		}, `safety rule "writes only this operation's objects": phase hostile \(Probe\) may not update Secret oadp/own-copy: .*`},
		{"patch own Secret", func(op *engine.Operation) error {
			got := &corev1.Secret{}
			if err := op.Client.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-copy"}, got); err != nil {
				return err
			}
			before := got.DeepCopy()
			got.StringData = map[string]string{"k": "v"}
			return op.Client.Patch(ctx, got, client.MergeFrom(before))
		}, ""},
		{"status patch of another operation's request", func(op *engine.Operation) error {
			got := &v1alpha1.NonAdminBackupStorageLocationRequest{}
			if err := s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "theirs-req"}, got); err != nil {
				return err
			}
			before := got.DeepCopy()
			got.Labels[nabsl] = uuid
			got.Status.Phase = v1alpha1.NonAdminBSLRequestPhaseRejected
			return op.Client.Status().Patch(ctx, got, client.MergeFrom(before))
		}, `safety rule "writes only this operation's objects": phase hostile \(Probe\) may not patch status of NonAdminBackupStorageLocationRequest oadp/theirs-req: .*`},
		{"the operation's own NAC object", func(op *engine.Operation) error {
			return op.Client.Status().Update(ctx, op.Object)
		}, `safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not update status of NonAdminBackupStorageLocation tenant/loc: .*`},
		{"deletecollection outside the OADP namespace", func(op *engine.Operation) error {
			return op.Client.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(tenant))
		}, `safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not deletecollection Secret in namespace tenant: .*`},
		{"deletecollection cluster-wide", func(op *engine.Operation) error {
			return op.Client.DeleteAllOf(ctx, &corev1.Secret{})
		}, `safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not deletecollection Secret cluster-wide: .*`},
	} {
		s.SetUpTest(c)
		err := s.run(c, nabslOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error { return tc.do(op) }})
		if tc.msg == "" {
			c.Check(err, IsNil, Commentf(tc.about))
			continue
		}
		refused(c, err, tc.msg, tc.about)
	}
	// Nothing refused was written.
	for _, name := range []string{"cloud-credentials", "other-copy"} {
		got := &corev1.Secret{}
		c.Assert(s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: name}, got), IsNil)
		c.Check(got.Labels[nabsl], Not(Equals), uuid, Commentf(name))
	}
}

// TestDeleteAllOfNarrowed: whatever selector a phase passes, a DeleteAllOf
// deletes only the operation's own objects.
func (s *GuardSuite) TestDeleteAllOfNarrowed(c *C) {
	ctx := context.Background()
	for _, tc := range []struct {
		opts []client.DeleteAllOfOption
		left []string
	}{
		{[]client.DeleteAllOfOption{client.InNamespace(oadp)}, []string{"cloud-credentials", "other-copy"}},
		{[]client.DeleteAllOfOption{client.InNamespace(oadp), client.HasLabels{v1alpha1.NabslOriginNACUUIDLabel}}, []string{"cloud-credentials", "other-copy"}},
		// Another operation's selector: both must hold, nothing matches.
		{[]client.DeleteAllOfOption{client.InNamespace(oadp), client.MatchingLabels{v1alpha1.NabslOriginNACUUIDLabel: theirs}},
			[]string{"cloud-credentials", "other-copy", "own-copy"}},
	} {
		opts := tc.opts
		s.SetUpTest(c)
		err := s.run(c, nabslOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error {
			return op.Client.DeleteAllOf(ctx, &corev1.Secret{}, opts...)
		}})
		c.Assert(err, IsNil)
		left := &corev1.SecretList{}
		c.Assert(s.cl.List(ctx, left, client.InNamespace(oadp)), IsNil)
		var names []string
		for _, sec := range left.Items {
			names = append(names, sec.Name)
		}
		c.Check(names, DeepEquals, tc.left, Commentf("%v", opts))
	}
}

// TestOwnershipNeedsOriginNamespace: an object carrying the operation's
// NACUUID but made for another namespace is never deleted, updated or
// patched by it, and what a phase creates gets the operation's origin
// annotations.
func (s *GuardSuite) TestOwnershipNeedsOriginNamespace(c *C) {
	ctx := context.Background()
	nabsl := v1alpha1.NabslOriginNACUUIDLabel
	plant := func() {
		c.Assert(s.cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "planted", Labels: labelled(nabsl, uuid),
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: other}}}), IsNil)
	}
	for _, tc := range []struct {
		about string
		do    func(op *engine.Operation) error
		msg   string
	}{
		{"deletecollection", func(op *engine.Operation) error {
			return op.Client.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(oadp))
		}, ""},
		{"delete", func(op *engine.Operation) error {
			return op.Client.Delete(ctx, secret(oadp, "planted", labelled(nabsl, uuid)))
		}, `safety rule "writes only this operation's objects": phase hostile \(Probe\) may not delete Secret oadp/planted: it was not made for namespace tenant \(annotation openshift.io/oadp-nabsl-origin-namespace is "other-tenant"\)`},
		{"patch", func(op *engine.Operation) error {
			got := &corev1.Secret{}
			if err := s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "planted"}, got); err != nil {
				return err
			}
			before := got.DeepCopy()
			got.Annotations[v1alpha1.NabslOriginNamespaceAnnotation] = tenant
			return op.Client.Patch(ctx, got, client.MergeFrom(before))
		}, `safety rule "writes only this operation's objects": phase hostile \(Probe\) may not patch Secret oadp/planted: it was not made for namespace tenant .*`},
	} {
		s.SetUpTest(c)
		plant()
		err := s.run(c, nabslOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error { return tc.do(op) }})
		if tc.msg == "" {
			c.Check(err, IsNil, Commentf(tc.about))
		} else {
			refused(c, err, tc.msg, tc.about)
		}
		got := &corev1.Secret{}
		c.Assert(s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "planted"}, got), IsNil, Commentf(tc.about))
		c.Check(got.Annotations[v1alpha1.NabslOriginNamespaceAnnotation], Equals, other, Commentf(tc.about))
		if tc.about == "deletecollection" {
			// It still removed the operation's own copy.
			c.Check(apierrors.IsNotFound(s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-copy"}, &corev1.Secret{})), Equals, true)
		}
	}

	s.SetUpTest(c)
	err := s.run(c, nabslOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, secret(oadp, "new-copy", labelled(nabsl, uuid)))
	}})
	c.Assert(err, IsNil)
	got := &corev1.Secret{}
	c.Assert(s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "new-copy"}, got), IsNil)
	c.Check(got.Annotations, DeepEquals, map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: tenant, v1alpha1.NabslOriginNameAnnotation: "loc"})
	err = s.run(c, nabslOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error {
		o := secret(oadp, "claims-other", labelled(nabsl, uuid))
		o.Annotations = map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: other}
		return op.Client.Create(ctx, o)
	}})
	refused(c, err, `safety rule "writes only this operation's objects": phase hostile \(Probe\) may not create Secret oadp/claims-other: it was not made for namespace tenant .*`, "create for another namespace")
}

func (s *GuardSuite) TestReads(c *C) {
	ctx := context.Background()
	get := func(ns, name string) func(op *engine.Operation) error {
		return func(op *engine.Operation) error {
			return op.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})
		}
	}
	for _, tc := range []struct {
		about string
		do    func(op *engine.Operation) error
		msg   string
	}{
		{"own namespace", get(tenant, "creds"), ""},
		{"OADP namespace", get(oadp, "cloud-credentials"), ""},
		{"API reader, own namespace", func(op *engine.Operation) error {
			return op.APIReader.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "creds"}, &corev1.Secret{})
		}, ""},
		{"another tenant's Secret", get(other, "creds"),
			`safety rule "reads only in the operation's namespace and the OADP namespace": phase hostile \(Probe\) may not get Secret other-tenant/creds: phases read only namespace tenant and the OADP namespace oadp`},
		{"another tenant's Secret from the API server", func(op *engine.Operation) error {
			return op.APIReader.Get(ctx, client.ObjectKey{Namespace: other, Name: "creds"}, &corev1.Secret{})
		}, `safety rule "reads only in the operation's namespace and the OADP namespace": phase hostile \(Probe\) may not get Secret other-tenant/creds: .*`},
		{"list cluster-wide", func(op *engine.Operation) error { return op.Client.List(ctx, &corev1.SecretList{}) },
			`safety rule "reads only in the operation's namespace and the OADP namespace": phase hostile \(Probe\) may not list Secret cluster-wide: .*`},
		{"list cluster-wide from the API server", func(op *engine.Operation) error { return op.APIReader.List(ctx, &v1alpha1.NonAdminRestoreList{}) },
			`safety rule "reads only in the operation's namespace and the OADP namespace": phase hostile \(Probe\) may not list NonAdminRestore cluster-wide: .*`},
		{"list another namespace", func(op *engine.Operation) error {
			return op.Client.List(ctx, &v1alpha1.NonAdminRestoreList{}, client.InNamespace(other))
		}, `safety rule "reads only .*": phase hostile \(Probe\) may not list NonAdminRestore in namespace other-tenant: .*`},
		{"a cluster-scoped object", func(op *engine.Operation) error {
			return op.Client.Get(ctx, client.ObjectKey{Name: "kube-system"}, &corev1.Namespace{})
		}, `safety rule "reads only .*": phase hostile \(Probe\) may not get Namespace kube-system: .*`},
		{"a watch", func(op *engine.Operation) error {
			_, err := op.Client.(client.WithWatch).Watch(ctx, &corev1.SecretList{}, client.InNamespace(tenant))
			return err
		}, `safety rule "reads only .*": phase hostile \(Probe\) may not watch Secret in namespace tenant: phases do not watch.*`},
	} {
		err := s.run(c, nabOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error { return tc.do(op) }})
		if tc.msg == "" {
			c.Check(err, IsNil, Commentf(tc.about))
			continue
		}
		refused(c, err, tc.msg, tc.about)
	}
}

// TestExceptions: a function's declared exception allows exactly what it
// says, nothing more; a malformed one is refused at registration.
func (s *GuardSuite) TestExceptions(c *C) {
	ctx := context.Background()
	deleteNARs := []engine.Exception{{Verbs: []string{"delete"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(),
		Scope: engine.InOperationNamespace, Why: "cascade"}}
	deleteNAR := func(ns, name string) func(ctx context.Context, op *engine.Operation) error {
		return func(ctx context.Context, op *engine.Operation) error {
			return op.Client.Delete(ctx, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		}
	}
	// Without the exception: refused.
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Do: deleteNAR(tenant, "r1")}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not delete NonAdminRestore tenant/r1: .*`, "no exception")
	// With it: only in the operation's namespace.
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Do: deleteNAR(other, "r2"), Exceptions: deleteNARs}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not delete NonAdminRestore other-tenant/r2: .*`, "another namespace")
	// Nor another kind or verb.
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Exceptions: deleteNARs, Do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Delete(ctx, secret(tenant, "creds", nil))
	}}), `safety rule "writes only in the OADP namespace": .* may not delete Secret tenant/creds: .*`, "another kind")
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Exceptions: deleteNARs, Do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "new"}})
	}}), `safety rule "writes only in the OADP namespace": .* may not create NonAdminRestore tenant/new: .*`, "another verb")
	c.Check(s.run(c, nabOp(), &enginetest.Probe{Do: deleteNAR(tenant, "r1"), Exceptions: deleteNARs}), IsNil)
	c.Check(apierrors.IsNotFound(s.cl.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "r1"}, &v1alpha1.NonAdminRestore{})), Equals, true)
	c.Check(s.cl.Get(ctx, client.ObjectKey{Namespace: other, Name: "r2"}, &v1alpha1.NonAdminRestore{}), IsNil)

	// A status exception covers the status subresource only, and only in
	// the operation's namespace.
	patchNARStatus := []engine.Exception{{Verbs: []string{"patch status"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(),
		Scope: engine.InOperationNamespace, Why: "link"}}
	patchStatus := func(ns, name string) func(ctx context.Context, op *engine.Operation) error {
		return func(ctx context.Context, op *engine.Operation) error {
			nar := &v1alpha1.NonAdminRestore{}
			if err := op.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nar); err != nil {
				return err
			}
			before := nar.DeepCopy()
			nar.Status.Phase = v1alpha1.NonAdminPhaseCreated
			return op.Client.Status().Patch(ctx, nar, client.MergeFrom(before))
		}
	}
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Do: patchStatus(tenant, "r3")}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not patch status of NonAdminRestore tenant/r3: .*`, "no status exception")
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Do: patchStatus(tenant, "r3"), Exceptions: deleteNARs}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not patch status of NonAdminRestore tenant/r3: .*`, "a delete exception")
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Exceptions: patchNARStatus, Do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Patch(ctx, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "r3"}}, client.RawPatch(types.MergePatchType, []byte(`{}`)))
	}}), `safety rule "writes only in the OADP namespace": .* may not patch NonAdminRestore tenant/r3: .*`, "the object itself")
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Exceptions: patchNARStatus, Do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Status().Patch(ctx, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "r2"}}, client.RawPatch(types.MergePatchType, []byte(`{}`)))
	}}),
		`safety rule "writes only in the OADP namespace": .* may not patch status of NonAdminRestore other-tenant/r2: .*`, "status in another namespace")
	c.Check(s.run(c, nabOp(), &enginetest.Probe{Do: patchStatus(tenant, "r3"), Exceptions: patchNARStatus}), IsNil)

	// A read exception in any namespace.
	readNABSL := func(ctx context.Context, op *engine.Operation) error {
		return op.APIReader.Get(ctx, client.ObjectKey{Namespace: other, Name: "loc"}, &v1alpha1.NonAdminBackupStorageLocation{})
	}
	refused(c, s.run(c, nabslOp(), &enginetest.Probe{Do: readNABSL}), `safety rule "reads only .*`, "no read exception")
	c.Check(s.run(c, nabslOp(), &enginetest.Probe{Do: readNABSL, Exceptions: []engine.Exception{{Verbs: []string{"get"},
		Kind: v1alpha1.GroupVersion.WithKind("NonAdminBackupStorageLocation").GroupKind(), Scope: engine.InAnyNamespace}}}), IsNil)

	// Malformed exceptions.
	for _, e := range []engine.Exception{
		{Verbs: []string{"delete"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(), Scope: engine.InAnyNamespace},
		{Verbs: []string{"deletecollection"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(), Scope: engine.InOperationNamespace},
		{Verbs: []string{"get"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(), Scope: "the moon"},
	} {
		_, err := engine.NewGuardedRegistry(s.cl, s.cl, nil, &enginetest.Probe{Exceptions: []engine.Exception{e}})
		c.Check(err, NotNil, Commentf("%s", e))
	}
}

// TestSandboxException: InRestoreTestSandbox lets a function create, read
// and delete the restore-test sandbox of its operation's namespace and
// objects in it, when they carry the operation's restore-test label: never
// another tenant's sandbox, another namespace, nor a sandbox-named
// namespace someone else made.
func (s *GuardSuite) TestSandboxException(c *C) {
	ctx := context.Background()
	nsKind := schema.GroupKind{Kind: "Namespace"}
	exceptions := []engine.Exception{
		{Verbs: []string{"get", "create", "delete"}, Kind: nsKind, Scope: engine.InRestoreTestSandbox, Why: "test"},
		{Verbs: []string{"create"}, Kind: schema.GroupKind{Kind: "ConfigMap"}, Scope: engine.InRestoreTestSandbox, Why: "test"},
	}
	mine := labelled(v1alpha1.RestoreTestLabel, uuid)
	sandbox := v1alpha1.RestoreTestSandbox(tenant)
	namespace := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	probe := func(do func(context.Context, *engine.Operation) error) error {
		return s.run(c, nabOp(), &enginetest.Probe{Exceptions: exceptions, Do: do})
	}
	c.Check(probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, namespace(sandbox, mine))
	}), IsNil)
	c.Check(probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sandbox, Name: "q", Labels: mine}})
	}), IsNil)
	c.Check(probe(func(ctx context.Context, op *engine.Operation) error {
		return op.APIReader.Get(ctx, client.ObjectKey{Name: sandbox}, &corev1.Namespace{})
	}), IsNil)
	refused(c, probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sandbox, Name: "unlabelled"}})
	}), `safety rule "writes only this operation's objects": .* objects of the restore-test sandbox carry label openshift.io/oadp-nacflow-restore-test=u-1`, "unlabelled object in the sandbox")
	refused(c, probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, namespace(v1alpha1.RestoreTestSandbox(other), mine))
	}), `safety rule "writes only in the OADP namespace": .*`, "another tenant's sandbox")
	refused(c, probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, namespace("kube-system-2", mine))
	}),
		`safety rule "writes only in the OADP namespace": .*`, "a namespace of another name")
	refused(c, probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "q", Labels: mine}})
	}), `safety rule "writes only in the OADP namespace": .*`, "the tenant's own namespace is not the sandbox")
	// A sandbox-named namespace another operation made is not this one's.
	c.Assert(s.cl.Delete(ctx, namespace(sandbox, nil)), IsNil)
	c.Assert(s.cl.Create(ctx, namespace(sandbox, labelled(v1alpha1.RestoreTestLabel, theirs))), IsNil)
	refused(c, probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Delete(ctx, namespace(sandbox, nil))
	}),
		`safety rule "writes only this operation's objects": .* it does not carry label openshift.io/oadp-nacflow-restore-test=u-1.*`, "their sandbox")
	refused(c, probe(func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Delete(ctx, namespace("default", nil))
	}),
		`safety rule "writes only in the OADP namespace": .*`, "deleting another namespace")
	// Without the exception, nothing of it.
	refused(c, s.run(c, nabOp(), &enginetest.Probe{Do: func(ctx context.Context, op *engine.Operation) error {
		return op.APIReader.Get(ctx, client.ObjectKey{Name: sandbox}, &corev1.Namespace{})
	}}), `safety rule "reads only in the operation's namespace and the OADP namespace": .*`, "no exception")
}

// referenceRules are test rules: check is called for each write they see.
type referenceRules struct {
	check func(ctx context.Context, w engine.ReferenceCheck, obj client.Object) error
}

func (r *referenceRules) CheckReferences(ctx context.Context, w engine.ReferenceCheck, obj client.Object) error {
	return r.check(ctx, w, obj)
}

// TestReferenceRules: the registry's reference rules see every create,
// update and patch of an object the operation owns, with the operation and
// both readers, and refuse it under RuleReferences; deletes, status writes
// and writes the guard refused already never reach them. (The rules of
// Velero's kinds are tested with them, in phases.)
func (s *GuardSuite) TestReferenceRules(c *C) {
	ctx := context.Background()
	nabsl := v1alpha1.NabslOriginNACUUIDLabel
	own := func(name string) *corev1.Secret {
		return secret(oadp, name, map[string]string{nabsl: uuid})
	}
	var seen []string
	rules := &referenceRules{check: func(ctx context.Context, w engine.ReferenceCheck, obj client.Object) error {
		seen = append(seen, obj.GetName())
		c.Check(w.Op.UUID, Equals, uuid)
		c.Check(w.Op.Phase, Equals, "hostile")
		c.Check(w.Op.Object.GetName(), Equals, "loc")
		// The rules' readers are not the phase's: they read what an
		// object names, wherever the guard lets it be written.
		c.Check(w.Cached.Get(ctx, client.ObjectKey{Namespace: other, Name: "creds"}, &corev1.Secret{}), IsNil)
		c.Check(w.Live.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "cloud-credentials"}, &corev1.Secret{}), IsNil)
		if obj.GetAnnotations()["points-at"] != "" {
			return w.Refuse("it points at " + obj.GetAnnotations()["points-at"])
		}
		return nil
	}}
	const refs = `safety rule "references only this operation's objects": phase hostile \(Probe\) may not `
	for _, tc := range []struct {
		about string
		do    func(op *engine.Operation) error
		seen  []string
		msg   string // "" = allowed
	}{
		{"create", func(op *engine.Operation) error { return op.Client.Create(ctx, own("x")) }, []string{"x"}, ""},
		{"create pointing elsewhere", func(op *engine.Operation) error {
			o := own("x")
			o.Annotations = map[string]string{"points-at": "the admin's"}
			return op.Client.Create(ctx, o)
		}, []string{"x"}, refs + `create Secret oadp/x: it points at the admin's`},
		{"patch pointing elsewhere", func(op *engine.Operation) error {
			got := &corev1.Secret{}
			if err := op.Client.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-copy"}, got); err != nil {
				return err
			}
			before := got.DeepCopy()
			got.Annotations = map[string]string{"points-at": "another tenant's"}
			return op.Client.Patch(ctx, got, client.MergeFrom(before))
		}, []string{"own-copy"}, refs + `patch Secret oadp/own-copy: it points at another tenant's`},
		{"update", func(op *engine.Operation) error {
			got := &corev1.Secret{}
			if err := op.Client.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-copy"}, got); err != nil {
				return err
			}
			return op.Client.Update(ctx, got)
		}, []string{"own-copy"}, ""},
		{"delete", func(op *engine.Operation) error { return op.Client.Delete(ctx, own("own-copy")) }, nil, ""},
		{"status patch", func(op *engine.Operation) error {
			req := &v1alpha1.NonAdminBackupStorageLocationRequest{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "own-req", Labels: labelled(nabsl, uuid)}}
			if err := s.cl.Create(ctx, req); err != nil {
				return err
			}
			before := req.DeepCopy()
			req.Status.Phase = v1alpha1.NonAdminBSLRequestPhaseApproved
			return op.Client.Status().Patch(ctx, req, client.MergeFrom(before))
		}, nil, ""},
		{"create refused as another operation's", func(op *engine.Operation) error {
			return op.Client.Create(ctx, secret(oadp, "x", labelled(nabsl, theirs)))
		}, nil, `safety rule "writes only this operation's objects": .*`},
	} {
		s.SetUpTest(c)
		s.refs, seen = rules, nil
		err := s.run(c, nabslOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error { return tc.do(op) }})
		c.Check(seen, DeepEquals, tc.seen, Commentf(tc.about))
		if tc.msg == "" {
			c.Check(err, IsNil, Commentf(tc.about))
			continue
		}
		refused(c, err, tc.msg, tc.about)
	}

	// A read error of the rules is returned as it is: retried, not refused.
	s.SetUpTest(c)
	s.refs = &referenceRules{check: func(ctx context.Context, w engine.ReferenceCheck, obj client.Object) error {
		return w.Live.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "missing"}, &corev1.Secret{})
	}}
	err := s.run(c, nabslOp(), &enginetest.Probe{Do: func(_ context.Context, op *engine.Operation) error { return op.Client.Create(ctx, own("x")) }})
	c.Check(apierrors.IsNotFound(err), Equals, true, Commentf("%v", err))
	c.Check(engine.IsSafetyViolation(err), Equals, false)
}

func (s *GuardSuite) TestCheckOwned(c *C) {
	op := &engine.Operation{Object: nabOp(), OADPNamespace: oadp, UUID: uuid, Phase: "sync"}
	mine := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "mine", Labels: labelled(v1alpha1.NabOriginNACUUIDLabel, uuid)}}
	adopted := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "adopted", Labels: labelled(v1alpha1.NabOriginNACUUIDLabel, "u-0")}}
	c.Check(op.CheckOwned("mirror", "Velero Backup", mine), IsNil)
	c.Check(op.CheckOwned("mirror", "Velero Backup", adopted, "u-0"), IsNil)
	err := op.CheckOwned("mirror", "Velero Backup", adopted)
	refused(c, err, `safety rule "references only this operation's objects": phase sync may not mirror Velero Backup oadp/adopted: it does not carry this operation's label openshift.io/oadp-nab-origin-nacuuid=u-1`, "not linked")
	// This operation's NACUUID on an object made for another namespace (a
	// label written into a Backup synced from a tenant's bucket) is not
	// enough.
	planted := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "planted", Labels: labelled(v1alpha1.NabOriginNACUUIDLabel, uuid),
		Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: other}}}
	refused(c, op.CheckOwned("mirror", "Velero Backup", planted), `safety rule "references only this operation's objects": phase sync may not mirror Velero Backup oadp/planted: it was not made for namespace tenant \(annotation openshift.io/oadp-nab-origin-namespace is "other-tenant"\)`, "planted")
	// An empty label never matches an empty "also".
	unlabelled := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "admin"}}
	refused(c, op.CheckOwned("mirror", "Velero Backup", unlabelled, ""), `safety rule .*`, "unlabelled")
}

// TestOwnerMeta: the one builder of the OADP ownership keys, by kind.
func (s *GuardSuite) TestOwnerMeta(c *C) {
	for _, tc := range []struct {
		obj               engine.Object
		label, name, nsAn string
	}{
		{nabOp(), v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NabOriginNameAnnotation, v1alpha1.NabOriginNamespaceAnnotation},
		{narOp(), v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NarOriginNameAnnotation, v1alpha1.NarOriginNamespaceAnnotation},
		{nabslOp(), v1alpha1.NabslOriginNACUUIDLabel, v1alpha1.NabslOriginNameAnnotation, v1alpha1.NabslOriginNamespaceAnnotation},
	} {
		op := &engine.Operation{Object: tc.obj, UUID: uuid}
		labels, annotations := op.OwnerMeta()
		c.Check(op.OriginLabel(), Equals, tc.label)
		c.Check(labels, DeepEquals, map[string]string{v1alpha1.OADPLabel: "True", v1alpha1.ManagedByLabel: v1alpha1.ManagedByLabelValue, tc.label: uuid})
		c.Check(annotations, DeepEquals, map[string]string{tc.name: tc.obj.GetName(), tc.nsAn: tenant})
		labels["x"] = "y" // new maps each time
		again, _ := op.OwnerMeta()
		c.Check(again["x"], Equals, "", Commentf(fmt.Sprintf("%T", tc.obj)))
	}
}
