package controllers_test

import (
	"context"
	"fmt"
	"time"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/phases"
)

// TestNacflowMakesSandboxesOnly installs config/admission/sandboxes.yaml on
// the real API server and acts as nacflow's ServiceAccount, bound to the
// generated ClusterRole (which must grant create and delete on every
// Namespace): the Namespace a restore test creates (phases.SandboxNamespace)
// and its quota are allowed, and deleting it; creating, deleting or putting a
// quota in any other Namespace is refused, as is a sandbox-labelled Namespace
// not named or labelled as a sandbox. The cluster admin is not concerned.
func (s *RBACSuite) TestNacflowMakesSandboxesOnly(c *C) {
	ctx := context.Background()
	defer installPolicy(c, "sandboxes.yaml")()

	tenant := createNamespace(c, "sandboxes")
	victim := createNamespace(c, "sandboxes-victim")
	const sa = "system:serviceaccount:nacflow-install:nacflow"
	role, _ := generatedRBAC(c)
	role.Name = "nacflow-manager-" + tenant
	c.Assert(testClient.Create(ctx, role), IsNil)
	defer func() { _ = testClient.Delete(ctx, role) }()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "nacflow-install", Name: "nacflow"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}}
	c.Assert(testClient.Create(ctx, crb), IsNil)
	defer func() { _ = testClient.Delete(ctx, crb) }()
	nacflow := as(c, sa)
	gone := func(name string) {
		_ = testClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}

	// The policy takes effect within seconds of its creation: until then the
	// probe's Namespace is made, and removed again by the admin.
	probe := "sandboxes-probe-" + tenant
	var refusal error
	eventually(c, 30*time.Second, func() (bool, string) {
		refusal = nacflow.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probe}})
		if refusal == nil {
			gone(probe)
		}
		return apierrors.IsForbidden(refusal) || apierrors.IsInvalid(refusal), fmt.Sprintf("nacflow's create of a plain Namespace: %v", refusal)
	})
	c.Check(refusal, ErrorMatches, `.*`+sa+` may create Namespaces of restore-test sandboxes only \(label openshift.io/oadp-nacflow-restore-test\); Namespace `+probe+` is none.*`)

	err := nacflow.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}})
	c.Check(err, ErrorMatches, `.*may delete Namespaces of restore-test sandboxes only.*Namespace `+victim+` is none.*`)
	quota := func(ns string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: phases.SandboxQuotaName},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	}
	err = nacflow.Create(ctx, quota(victim))
	c.Check(err, ErrorMatches, `.*may create ResourceQuotas in Namespaces of restore-test sandboxes only.*Namespace `+victim+` is none.*`)
	live := &corev1.Namespace{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Name: victim}, live), IsNil)
	c.Check(live.DeletionTimestamp.IsZero(), Equals, true, Commentf("the refused delete left the tenant's Namespace"))
	quotas := &corev1.ResourceQuotaList{}
	c.Assert(testClient.List(ctx, quotas, client.InNamespace(victim)), IsNil)
	c.Check(quotas.Items, HasLen, 0)

	// Labelled as a sandbox but not one: another name, or no Pod Security.
	nab := newNAB(tenant, "mine", velerov1.BackupSpec{})
	fake := phases.SandboxNamespace(nab, "0f0f0f0f-0000-4000-8000-000000000000")
	fake.Name = "kube-" + tenant
	err = nacflow.Create(ctx, fake)
	c.Check(err, ErrorMatches, `.*may create a Namespace only as a restore-test sandbox.*Namespace kube-`+tenant+` is not.*`)
	lax := phases.SandboxNamespace(nab, "0f0f0f0f-0000-4000-8000-000000000000")
	delete(lax.Labels, "pod-security.kubernetes.io/enforce")
	err = nacflow.Create(ctx, lax)
	c.Check(err, ErrorMatches, `.*may create a Namespace only as a restore-test sandbox.*`)

	// The restore test's own Namespace, its quota, and its deletion pass.
	sandbox := phases.SandboxNamespace(nab, "0f0f0f0f-0000-4000-8000-000000000000")
	c.Check(sandbox.Name, Equals, v1alpha1.RestoreTestSandbox(tenant))
	c.Assert(nacflow.Create(ctx, sandbox), IsNil)
	defer gone(sandbox.Name)
	c.Check(nacflow.Create(ctx, quota(sandbox.Name)), IsNil)
	c.Check(nacflow.Delete(ctx, sandbox), IsNil)

	// The admin is not concerned.
	plain := "sandboxes-admin-" + tenant
	c.Assert(testClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plain}}), IsNil)
	c.Check(testClient.Create(ctx, quota(plain)), IsNil)
	c.Check(testClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plain}}), IsNil)
}
