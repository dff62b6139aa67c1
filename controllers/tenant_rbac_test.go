package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// aggregated waits until kube-controller-manager's clusterrole-aggregation
// controller has put the rules of the ClusterRole from into the built-in
// role name (admin, edit, view): the cluster's work, not the test's.
func aggregated(c *C, name, from string) {
	ctx := context.Background()
	want := &rbacv1.ClusterRole{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Name: from}, want), IsNil)
	eventually(c, 30*time.Second, func() (bool, string) {
		role := &rbacv1.ClusterRole{}
		c.Assert(testClient.Get(ctx, client.ObjectKey{Name: name}, role), IsNil)
		for _, w := range want.Rules {
			if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, w) }) {
				return false, fmt.Sprintf("%s lacks %v of %s", name, w, from)
			}
		}
		return true, ""
	})
}

// as returns a client acting as user in groups (impersonation, the API
// server's RBAC).
func as(c *C, user string, groups ...string) client.Client {
	cfg := rest.CopyConfig(testCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cl, err := client.New(cfg, client.Options{Scheme: testScheme})
	c.Assert(err, IsNil)
	return cl
}

// TestTenantRolesAggregate installs config/rbac/tenant_roles.yaml and checks,
// as real users bound only to Kubernetes' built-in roles in their namespace,
// that nacflow fits them: a namespace admin (and an editor) can back up and
// restore their namespace and bring a bucket with no extra RoleBinding, but
// not in another namespace; a viewer can only read, and never a
// NonAdminDownloadRequest (its status holds a pre-signed URL, a
// BackupContents one to the namespace's Secrets, which view may not read);
// nobody reaches Velero's objects, the OADP namespace or Blueprints.
func (s *RBACSuite) TestTenantRolesAggregate(c *C) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "config", "rbac", "tenant_roles.yaml"))
	c.Assert(err, IsNil)
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		c.Assert(yaml.UnmarshalStrict([]byte(doc), role), IsNil)
		err := testClient.Create(ctx, role)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		c.Assert(err, IsNil)
	}
	for builtin, from := range map[string]string{"admin": "nacflow-tenant-edit", "edit": "nacflow-tenant-edit", "view": "nacflow-tenant-view"} {
		aggregated(c, builtin, from)
	}
	oadp, mine, theirs := createNamespace(c, "rbac-oadp"), createNamespace(c, "rbac-team"), createNamespace(c, "rbac-other")
	for user, role := range map[string]string{"alice": "admin", "eddie": "edit", "vera": "view"} {
		c.Assert(testClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}), IsNil)
	}
	forbidden := func(err error, what string) {
		c.Check(apierrors.IsForbidden(err), Equals, true, Commentf("%s: %v", what, err))
	}

	for _, user := range []string{"alice", "eddie"} {
		cl := as(c, user)
		c.Check(cl.Create(ctx, newNAB(mine, user+"-backup", velerov1.BackupSpec{})), IsNil, Commentf("%s: NAB in own namespace", user))
		c.Check(cl.Create(ctx, newNAR(mine, user+"-restore", velerov1.RestoreSpec{BackupName: user + "-backup"})), IsNil, Commentf("%s: NAR", user))
		c.Check(cl.Create(ctx, newNABSL(mine, user+"-bucket", "creds")), IsNil, Commentf("%s: NABSL", user))
		c.Check(cl.Create(ctx, newNADR(mine, user+"-log", velerov1.DownloadTargetKindBackupLog, user+"-backup")), IsNil, Commentf("%s: NADR", user))
		forbidden(cl.List(ctx, &velerov1.DownloadRequestList{}, client.InNamespace(oadp)), user+": Velero DownloadRequests")
		c.Check(cl.List(ctx, &v1alpha1.NonAdminBackupList{}, client.InNamespace(mine)), IsNil)
		nab := &v1alpha1.NonAdminBackup{}
		c.Assert(cl.Get(ctx, client.ObjectKey{Namespace: mine, Name: user + "-backup"}, nab), IsNil)
		c.Check(cl.Delete(ctx, nab), IsNil, Commentf("%s: delete own NAB", user))

		forbidden(cl.Create(ctx, newNAB(theirs, "intrusion", velerov1.BackupSpec{})), user+": NAB in another namespace")
		forbidden(cl.List(ctx, &v1alpha1.NonAdminBackupList{}, client.InNamespace(theirs)), user+": list another namespace's NABs")
		forbidden(cl.List(ctx, &velerov1.BackupList{}, client.InNamespace(oadp)), user+": Velero Backups in the OADP namespace")
		forbidden(cl.List(ctx, &velerov1.BackupList{}, client.InNamespace(mine)), user+": Velero Backups, even in own namespace")
		forbidden(cl.Create(ctx, &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "direct"}}), user+": a Velero Restore directly")
		forbidden(cl.List(ctx, &corev1.SecretList{}, client.InNamespace(oadp)), user+": Secrets of the OADP namespace")
		forbidden(cl.List(ctx, &v1alpha1.BlueprintList{}, client.InNamespace(oadp)), user+": Blueprints")
		forbidden(cl.Create(ctx, &v1alpha1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "mine"}}), user+": a Blueprint in own namespace")
		forbidden(cl.List(ctx, &v1alpha1.NonAdminBackupStorageLocationRequestList{}, client.InNamespace(oadp)), user+": approval requests")
	}

	viewer := as(c, "vera")
	c.Check(viewer.List(ctx, &v1alpha1.NonAdminBackupList{}, client.InNamespace(mine)), IsNil)
	c.Check(viewer.List(ctx, &v1alpha1.NonAdminBackupStorageLocationList{}, client.InNamespace(mine)), IsNil)
	forbidden(viewer.Create(ctx, newNAB(mine, "viewer-backup", velerov1.BackupSpec{})), "vera: NAB with view only")
	forbidden(viewer.List(ctx, &v1alpha1.NonAdminDownloadRequestList{}, client.InNamespace(mine)), "vera: list NADRs with view only")
	forbidden(viewer.Get(ctx, client.ObjectKey{Namespace: mine, Name: "eddie-log"}, &v1alpha1.NonAdminDownloadRequest{}), "vera: get a NADR with view only")
	forbidden(viewer.Create(ctx, newNADR(mine, "viewer-log", velerov1.DownloadTargetKindBackupLog, "x")), "vera: NADR with view only")
	// Not one rule of the aggregated view names download requests, while
	// edit and admin (view is aggregated into them) still read them.
	view := &rbacv1.ClusterRole{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Name: "view"}, view), IsNil)
	for _, r := range view.Rules {
		for _, res := range r.Resources {
			c.Check(strings.HasPrefix(res, "nonadmindownloadrequests"), Equals, false, Commentf("view grants %v on %s", r.Verbs, res))
		}
	}
	for _, user := range []string{"alice", "eddie"} {
		c.Check(as(c, user).List(ctx, &v1alpha1.NonAdminDownloadRequestList{}, client.InNamespace(mine)), IsNil, Commentf("%s: list NADRs", user))
	}
	forbidden(viewer.List(ctx, &v1alpha1.NonAdminBackupList{}, client.InNamespace(theirs)), "vera: another namespace")
}
