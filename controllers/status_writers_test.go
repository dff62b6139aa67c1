package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "gopkg.in/check.v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// installPolicy creates the ValidatingAdmissionPolicy and its binding of
// config/admission/file on the test API server and returns what deletes
// them.
func installPolicy(c *C, file string) func() {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "config", "admission", file))
	c.Assert(err, IsNil)
	docs := strings.Split(string(data), "\n---\n")
	c.Assert(docs, HasLen, 2)
	policy, binding := &admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}
	c.Assert(yaml.UnmarshalStrict([]byte(docs[0]), policy), IsNil)
	c.Assert(yaml.UnmarshalStrict([]byte(docs[1]), binding), IsNil)
	c.Assert(testClient.Create(ctx, policy), IsNil)
	c.Assert(testClient.Create(ctx, binding), IsNil)
	return func() {
		_ = testClient.Delete(ctx, binding)
		_ = testClient.Delete(ctx, policy)
	}
}

// TestOnlyNacflowWritesStatus installs config/admission/status_writers.yaml
// on the real API server: a tenant an admin granted `*` on the NAC group
// (status subresources included) may create and edit its NonAdminBackup but
// not write its status — no rewriting of a plan or an accepted spec
// between phases — while a user holding only nacflow's generated
// ClusterRole (config/rbac/role.yaml) may, as nacflow's ServiceAccount does.
func (s *RBACSuite) TestOnlyNacflowWritesStatus(c *C) {
	ctx := context.Background()
	defer installPolicy(c, "status_writers.yaml")()

	ns := createNamespace(c, "status-writers")
	star := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nac-star-" + ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	c.Assert(testClient.Create(ctx, star), IsNil)
	defer func() { _ = testClient.Delete(ctx, star) }()
	nacflowRole, _ := generatedRBAC(c)
	nacflowRole.Name = "nacflow-manager-" + ns
	c.Assert(testClient.Create(ctx, nacflowRole), IsNil)
	defer func() { _ = testClient.Delete(ctx, nacflowRole) }()
	for user, role := range map[string]string{"stella": star.Name, "nacflow-sa": nacflowRole.Name} {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
		c.Assert(testClient.Create(ctx, crb), IsNil)
		defer func() { _ = testClient.Delete(ctx, crb) }()
	}

	nab := newNAB(ns, "mine", velerov1.BackupSpec{})
	stella := as(c, "stella")
	c.Assert(stella.Create(ctx, nab), IsNil, Commentf("the tenant makes its own NonAdminBackup"))
	forge := func(cl client.Client, phase v1alpha1.NonAdminPhase) error {
		got := &v1alpha1.NonAdminBackup{}
		if err := testClient.Get(ctx, client.ObjectKeyFromObject(nab), got); err != nil {
			return err
		}
		before := got.DeepCopy()
		got.Status.Phase = phase
		return cl.Status().Patch(ctx, got, client.MergeFrom(before))
	}
	// The policy takes effect within seconds of its creation.
	var refusal error
	eventually(c, 30*time.Second, func() (bool, string) {
		refusal = forge(stella, v1alpha1.NonAdminPhaseCreated)
		return apierrors.IsForbidden(refusal) || apierrors.IsInvalid(refusal), fmt.Sprintf("stella's status write: %v", refusal)
	})
	c.Check(refusal, ErrorMatches, `.*the status of nonadminbackups is written by nacflow alone; stella may not write it \(it lacks write on statuses.nacflow.io\).*`)
	c.Check(forge(as(c, "nacflow-sa"), v1alpha1.NonAdminPhaseBackingOff), IsNil, Commentf("nacflow's own role writes status"))
	c.Check(getNAB(c, nab).Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	// The tenant still edits what is its own: the spec.
	got := getNAB(c, nab)
	got.Spec.BackupSpec.TTL = metav1.Duration{Duration: time.Hour}
	c.Check(stella.Update(ctx, got), IsNil)
}

// TestStatusPolicyCoversEveryKind: config/admission/status_writers.yaml
// names the status subresource of every NAC kind of the registry (and of
// the approval requests), so a new kind cannot be left writable by tenants.
func (s *RBACSuite) TestStatusPolicyCoversEveryKind(c *C) {
	data, err := os.ReadFile(filepath.Join("..", "config", "admission", "status_writers.yaml"))
	c.Assert(err, IsNil)
	policy := &admissionv1.ValidatingAdmissionPolicy{}
	c.Assert(yaml.UnmarshalStrict([]byte(strings.Split(string(data), "\n---\n")[0]), policy), IsNil)
	listed := map[string]bool{}
	for _, rule := range policy.Spec.MatchConstraints.ResourceRules {
		for _, r := range rule.Resources {
			listed[r] = true
		}
	}
	want := []string{"nonadminbackupstoragelocationrequests/status"}
	for _, k := range v1alpha1.Kinds() {
		want = append(want, k.Resource+"/status")
	}
	for _, r := range want {
		c.Check(listed[r], Equals, true, Commentf("status_writers.yaml does not name %s", r))
	}
	c.Check(listed, HasLen, len(want), Commentf("listed: %v", listed))
}
