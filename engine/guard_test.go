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
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// GuardSuite checks each part of the engine's safety rule (DESIGN.md §4)
// with a phase function that does whatever a test asks, through the
// clients a guarded registry hands it.
type GuardSuite struct {
	cl client.Client
}

var _ = Suite(&GuardSuite{})

const (
	oadp   = "oadp"
	tenant = "tenant"
	other  = "other-tenant"
	uuid   = "u-1"
	theirs = "u-2"
)

// probe is a phase function that runs do with the operation it is given.
type probe struct {
	do         func(ctx context.Context, op *engine.Operation) error
	exceptions []engine.Exception
}

func (*probe) Name() string { return "Probe" }
func (*probe) NewArgs() any { return &struct{}{} }
func (p *probe) Run(ctx context.Context, op *engine.Operation, _ any) (engine.Result, error) {
	return engine.Done("", nil), p.do(ctx, op)
}
func (p *probe) SafetyExceptions() []engine.Exception { return p.exceptions }

func labelled(label, id string) map[string]string { return map[string]string{label: id} }

func secret(ns, name string, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func (s *GuardSuite) SetUpTest(c *C) {
	sc := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
	c.Assert(velerov1.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	nabsl, nab := v1alpha1.NabslOriginNACUUIDLabel, v1alpha1.NabOriginNACUUIDLabel
	s.cl = fake.NewClientBuilder().WithScheme(sc).WithObjects(
		secret(oadp, "cloud-credentials", nil),
		secret(oadp, "own-copy", labelled(nabsl, uuid)),
		secret(oadp, "other-copy", labelled(nabsl, theirs)),
		secret(tenant, "creds", nil),
		secret(other, "creds", nil),
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "mine", Labels: labelled(nab, uuid),
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: tenant}}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "theirs", Labels: labelled(nab, theirs),
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: other}}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "theirs-bsl", Labels: labelled(nabsl, theirs),
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: other}}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "own-bsl", Labels: labelled(nabsl, uuid),
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: tenant}},
			Spec: velerov1.BackupStorageLocationSpec{Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "own-copy"}}}},
		&velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "my-restore", Labels: labelled(v1alpha1.NarOriginNACUUIDLabel, uuid),
			Annotations: map[string]string{v1alpha1.NarOriginNamespaceAnnotation: tenant}}},
		&velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "their-restore", Labels: labelled(v1alpha1.NarOriginNACUUIDLabel, theirs),
			Annotations: map[string]string{v1alpha1.NarOriginNamespaceAnnotation: other}}},
		&v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "r1"}},
		&v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "r2"}},
		&v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "r3"}},
		&v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "loc"}},
		&v1alpha1.NonAdminBackupStorageLocationRequest{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "theirs-req", Labels: labelled(nabsl, theirs)}},
	).WithStatusSubresource(&v1alpha1.NonAdminBackupStorageLocationRequest{}, &velerov1.Backup{}, &v1alpha1.NonAdminRestore{}).Build()
}

// run runs p as phase "hostile" of an operation on obj (uuid u-1) and
// returns its error.
func (s *GuardSuite) run(c *C, obj engine.Object, p *probe) error {
	reg, err := engine.NewGuardedRegistry(s.cl, s.cl, p)
	c.Assert(err, IsNil)
	fn, _ := reg.Get("Probe")
	_, err = fn.Run(context.Background(), &engine.Operation{Object: obj, OADPNamespace: oadp, UUID: uuid, Phase: "hostile"}, fn.NewArgs())
	return err
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
	c.Check(engine.IsSafetyViolation(err), Equals, true, Commentf("%s: %v", about, err))
	c.Check(engine.IsTerminal(err), Equals, true, Commentf("%s: %v", about, err))
	if err != nil {
		c.Check(err.Error(), Matches, msg, Commentf(about))
	}
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
		err := s.run(c, nabslOp(), &probe{do: func(_ context.Context, op *engine.Operation) error { return tc.do(op) }})
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
		err := s.run(c, nabslOp(), &probe{do: func(_ context.Context, op *engine.Operation) error {
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
		err := s.run(c, nabslOp(), &probe{do: func(_ context.Context, op *engine.Operation) error { return tc.do(op) }})
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
	err := s.run(c, nabslOp(), &probe{do: func(_ context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, secret(oadp, "new-copy", labelled(nabsl, uuid)))
	}})
	c.Assert(err, IsNil)
	got := &corev1.Secret{}
	c.Assert(s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "new-copy"}, got), IsNil)
	c.Check(got.Annotations, DeepEquals, map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: tenant, v1alpha1.NabslOriginNameAnnotation: "loc"})
	err = s.run(c, nabslOp(), &probe{do: func(_ context.Context, op *engine.Operation) error {
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
		err := s.run(c, nabOp(), &probe{do: func(_ context.Context, op *engine.Operation) error { return tc.do(op) }})
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
	refused(c, s.run(c, nabOp(), &probe{do: deleteNAR(tenant, "r1")}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not delete NonAdminRestore tenant/r1: .*`, "no exception")
	// With it: only in the operation's namespace.
	refused(c, s.run(c, nabOp(), &probe{do: deleteNAR(other, "r2"), exceptions: deleteNARs}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not delete NonAdminRestore other-tenant/r2: .*`, "another namespace")
	// Nor another kind or verb.
	refused(c, s.run(c, nabOp(), &probe{exceptions: deleteNARs, do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Delete(ctx, secret(tenant, "creds", nil))
	}}), `safety rule "writes only in the OADP namespace": .* may not delete Secret tenant/creds: .*`, "another kind")
	refused(c, s.run(c, nabOp(), &probe{exceptions: deleteNARs, do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Create(ctx, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "new"}})
	}}), `safety rule "writes only in the OADP namespace": .* may not create NonAdminRestore tenant/new: .*`, "another verb")
	c.Check(s.run(c, nabOp(), &probe{do: deleteNAR(tenant, "r1"), exceptions: deleteNARs}), IsNil)
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
	refused(c, s.run(c, nabOp(), &probe{do: patchStatus(tenant, "r3")}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not patch status of NonAdminRestore tenant/r3: .*`, "no status exception")
	refused(c, s.run(c, nabOp(), &probe{do: patchStatus(tenant, "r3"), exceptions: deleteNARs}),
		`safety rule "writes only in the OADP namespace": phase hostile \(Probe\) may not patch status of NonAdminRestore tenant/r3: .*`, "a delete exception")
	refused(c, s.run(c, nabOp(), &probe{exceptions: patchNARStatus, do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Patch(ctx, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "r3"}}, client.RawPatch(types.MergePatchType, []byte(`{}`)))
	}}), `safety rule "writes only in the OADP namespace": .* may not patch NonAdminRestore tenant/r3: .*`, "the object itself")
	refused(c, s.run(c, nabOp(), &probe{exceptions: patchNARStatus, do: func(ctx context.Context, op *engine.Operation) error {
		return op.Client.Status().Patch(ctx, &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "r2"}}, client.RawPatch(types.MergePatchType, []byte(`{}`)))
	}}),
		`safety rule "writes only in the OADP namespace": .* may not patch status of NonAdminRestore other-tenant/r2: .*`, "status in another namespace")
	c.Check(s.run(c, nabOp(), &probe{do: patchStatus(tenant, "r3"), exceptions: patchNARStatus}), IsNil)

	// A read exception in any namespace.
	readNABSL := func(ctx context.Context, op *engine.Operation) error {
		return op.APIReader.Get(ctx, client.ObjectKey{Namespace: other, Name: "loc"}, &v1alpha1.NonAdminBackupStorageLocation{})
	}
	refused(c, s.run(c, nabslOp(), &probe{do: readNABSL}), `safety rule "reads only .*`, "no read exception")
	c.Check(s.run(c, nabslOp(), &probe{do: readNABSL, exceptions: []engine.Exception{{Verbs: []string{"get"},
		Kind: v1alpha1.GroupVersion.WithKind("NonAdminBackupStorageLocation").GroupKind(), Scope: engine.InAnyNamespace}}}), IsNil)

	// Malformed exceptions.
	for _, e := range []engine.Exception{
		{Verbs: []string{"delete"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(), Scope: engine.InAnyNamespace},
		{Verbs: []string{"deletecollection"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(), Scope: engine.InOperationNamespace},
		{Verbs: []string{"get"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminRestore").GroupKind(), Scope: "the moon"},
	} {
		_, err := engine.NewGuardedRegistry(s.cl, s.cl, &probe{exceptions: []engine.Exception{e}})
		c.Check(err, NotNil, Commentf("%s", e))
	}
}

// TestReferences: an object a phase creates or changes references only the
// operation's own objects.
func (s *GuardSuite) TestReferences(c *C) {
	ctx := context.Background()
	nabsl := v1alpha1.NabslOriginNACUUIDLabel
	bsl := func(secretName string) *velerov1.BackupStorageLocation {
		b := &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-bsl", Labels: labelled(nabsl, uuid)}}
		if secretName != "" {
			b.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: "cloud"}
		}
		return b
	}
	restore := func(backup string, edit func(*velerov1.Restore)) *velerov1.Restore {
		r := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-restore", Labels: labelled(v1alpha1.NarOriginNACUUIDLabel, uuid)},
			Spec: velerov1.RestoreSpec{BackupName: backup, IncludedNamespaces: []string{tenant}}}
		if edit != nil {
			edit(r)
		}
		return r
	}
	backup := func(edit func(*velerov1.Backup)) *velerov1.Backup {
		b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-backup", Labels: labelled(v1alpha1.NabOriginNACUUIDLabel, uuid)},
			Spec: velerov1.BackupSpec{IncludedNamespaces: []string{tenant}}}
		if edit != nil {
			edit(b)
		}
		return b
	}
	dbr := func(backup string) *velerov1.DeleteBackupRequest {
		return &velerov1.DeleteBackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-dbr", Labels: labelled(v1alpha1.NabOriginNACUUIDLabel, uuid)},
			Spec: velerov1.DeleteBackupRequestSpec{BackupName: backup}}
	}
	download := func(label string, kind velerov1.DownloadTargetKind, target string) *velerov1.DownloadRequest {
		return &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "new-dr", Labels: labelled(label, uuid)},
			Spec: velerov1.DownloadRequestSpec{Target: velerov1.DownloadTarget{Kind: kind, Name: target}}}
	}
	nadr := v1alpha1.NadrOriginNACUUIDLabel
	const refs = `safety rule "references only this operation's objects": phase hostile \(Probe\) may not `
	for _, tc := range []struct {
		about string
		op    engine.Object
		obj   client.Object
		msg   string
	}{
		{"BSL on its own Secret copy", nabslOp(), bsl("own-copy"), ""},
		{"BSL on the admin's credentials", nabslOp(), bsl("cloud-credentials"),
			refs + `create BackupStorageLocation oadp/new-bsl: spec.credential names Secret oadp/cloud-credentials, which is not this operation's own copy: it does not carry the label openshift.io/oadp-nabsl-origin-nacuuid=u-1`},
		{"BSL on another operation's copy", nabslOp(), bsl("other-copy"), refs + `create BackupStorageLocation oadp/new-bsl: spec.credential names Secret oadp/other-copy, which is not this operation's own copy: .*`},
		{"BSL on a missing Secret", nabslOp(), bsl("nope"), refs + `create BackupStorageLocation oadp/new-bsl: spec.credential names Secret oadp/nope, which does not exist: .*`},
		{"BSL without a credential (Velero's own)", nabslOp(), bsl(""), refs + `create BackupStorageLocation oadp/new-bsl: spec.credential must name this operation's own Secret copy.*`},
		{"Restore of the tenant's backup", narOp(), restore("mine", nil), ""},
		{"Restore of another tenant's backup", narOp(), restore("theirs", nil),
			refs + `create Restore oadp/new-restore: spec.backupName names Velero Backup oadp/theirs, which was not made for namespace tenant .*`},
		{"Restore of a schedule", narOp(), restore("mine", func(r *velerov1.Restore) { r.Spec.ScheduleName = "admin-daily" }), refs + `create Restore .*: spec.scheduleName "admin-daily": .*`},
		{"Restore into another namespace", narOp(), restore("mine", func(r *velerov1.Restore) { r.Spec.NamespaceMapping = map[string]string{tenant: other} }),
			refs + `create Restore .*: spec.namespaceMapping maps tenant to other-tenant: .*`},
		{"Restore of other namespaces", narOp(), restore("mine", func(r *velerov1.Restore) { r.Spec.IncludedNamespaces = []string{"*"} }),
			refs + `create Restore .*: spec.includedNamespaces is \[\*\]: it must be exactly \[tenant\], the tenant's namespace`},
		{"Backup of the tenant's namespace", nabOp(), backup(nil), ""},
		{"Backup on the admin's location", nabOp(), backup(func(b *velerov1.Backup) { b.Spec.StorageLocation = "default" }), ""},
		{"Backup on another tenant's location", nabOp(), backup(func(b *velerov1.Backup) { b.Spec.StorageLocation = "theirs-bsl" }),
			refs + `create Backup oadp/new-backup: spec.storageLocation names Velero BackupStorageLocation oadp/theirs-bsl of namespace "other-tenant", not of namespace tenant`},
		{"Backup of another namespace", nabOp(), backup(func(b *velerov1.Backup) { b.Spec.IncludedNamespaces = []string{tenant, other} }),
			refs + `create Backup .*: spec.includedNamespaces is \[tenant other-tenant\]: .*`},
		{"DeleteBackupRequest of the tenant's backup", nabOp(), dbr("mine"), ""},
		{"DeleteBackupRequest of another tenant's backup", nabOp(), dbr("theirs"), refs + `create DeleteBackupRequest oadp/new-dbr: spec.backupName names Velero Backup oadp/theirs, which was not made for namespace tenant .*`},
		{"DownloadRequest of the tenant's backup log", nadrOp(), download(nadr, velerov1.DownloadTargetKindBackupLog, "mine"), ""},
		{"DownloadRequest of the tenant's restore log", nadrOp(), download(nadr, velerov1.DownloadTargetKindRestoreLog, "my-restore"), ""},
		{"DownloadRequest of a backup's resource list, for its verification", nabOp(), download(v1alpha1.NabOriginNACUUIDLabel, velerov1.DownloadTargetKindBackupResourceList, "mine"), ""},
		{"DownloadRequest of another tenant's backup", nadrOp(), download(nadr, velerov1.DownloadTargetKindBackupContents, "theirs"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.name names Velero Backup oadp/theirs, which was not made for namespace tenant .*`},
		{"DownloadRequest of another tenant's restore", nadrOp(), download(nadr, velerov1.DownloadTargetKindRestoreResults, "their-restore"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.name names Velero Restore oadp/their-restore, which was not made for namespace tenant .*`},
		{"DownloadRequest of a Restore kind naming a backup", nadrOp(), download(nadr, velerov1.DownloadTargetKindRestoreLog, "mine"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.name names Velero Restore oadp/mine, which does not exist`},
		{"DownloadRequest of a kind Velero does not serve", nadrOp(), download(nadr, "BackupSecrets", "mine"),
			refs + `create DownloadRequest oadp/new-dr: spec.target.kind "BackupSecrets" is not a kind of file of a Velero Backup or Restore`},
	} {
		s.SetUpTest(c)
		err := s.run(c, tc.op, &probe{do: func(ctx context.Context, op *engine.Operation) error { return op.Client.Create(ctx, tc.obj) }})
		if tc.msg == "" {
			c.Check(err, IsNil, Commentf(tc.about))
			continue
		}
		refused(c, err, tc.msg, tc.about)
	}

	// A patch is checked like a create: no repointing an existing BSL.
	s.SetUpTest(c)
	err := s.run(c, nabslOp(), &probe{do: func(ctx context.Context, op *engine.Operation) error {
		got := &velerov1.BackupStorageLocation{}
		if err := op.Client.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-bsl"}, got); err != nil {
			return err
		}
		before := got.DeepCopy()
		got.Spec.Credential.Name = "cloud-credentials"
		return op.Client.Patch(ctx, got, client.MergeFrom(before))
	}})
	refused(c, err, refs+`patch BackupStorageLocation oadp/own-bsl: spec.credential names Secret oadp/cloud-credentials, .*`, "repoint")
	got := &velerov1.BackupStorageLocation{}
	c.Assert(s.cl.Get(ctx, client.ObjectKey{Namespace: oadp, Name: "own-bsl"}, got), IsNil)
	c.Check(got.Spec.Credential.Name, Equals, "own-copy")
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
