package controllers_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/phases"
)

// HostileRestoreSuite runs a controller that knows who asked (the requester
// webhook served on the API server's path, its records verified) and plays
// the tenants who try to make a restore do what its requester did not ask:
// inputs changed between the request and its use, and requesters that are
// not tenants.
type HostileRestoreSuite struct {
	oadp     string
	selector map[string]string
	cancel   context.CancelFunc
	stop     func()
}

var _ = Suite(&HostileRestoreSuite{})

func (s *HostileRestoreSuite) SetUpSuite(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.oadp = createNamespace(c, "hostile-oadp")
	s.selector = map[string]string{"nacflow-test-hostile": s.oadp}
	sg, err := requester.NewSigner([]byte(strings.Repeat("h", requester.MinKeyLength)))
	c.Assert(err, IsNil)
	h := &requester.Handler{Signer: sg, ConfigMaps: func(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
		cm := &corev1.ConfigMap{}
		return cm, testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
	}}
	unregister := serveRequesterWebhook(ctx, c, h, s.selector)
	stop := startController(c, controllerOptions{oadp: s.oadp, restart: true, requesters: phases.Requesters{Signer: sg,
		Installed: func(context.Context) (bool, string, error) { return true, "nacflow-requester-test", nil }}})
	s.stop = func() { stop(); unregister() }
}

func (s *HostileRestoreSuite) TearDownSuite(c *C) {
	s.stop()
	s.cancel()
}

// tenant makes a namespace served by the webhook where alice is admin and
// bob edit (both may create NonAdminRestores), and waits until the webhook
// records alice's NonAdminRestores.
func (s *HostileRestoreSuite) tenant(c *C) string {
	ctx := context.Background()
	ns := labelledNamespace(c, s.selector)
	c.Assert(testClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restorer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"nonadminrestores", "nonadminbackups"},
			Verbs: []string{"create", "get", "list", "patch", "update", "delete"}}}}), IsNil)
	for user, role := range map[string]string{"alice": "admin", "bob": "edit"} {
		for _, ref := range []rbacv1.RoleRef{{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, {APIGroup: rbacv1.GroupName, Kind: "Role", Name: "restorer"}} {
			c.Assert(testClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: user + "-"}, RoleRef: ref,
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}), IsNil)
		}
	}
	// The API server picks a new webhook configuration up within moments.
	eventually(c, 10*time.Second, func() (bool, string) {
		probe := newNAR(ns, "", velerov1.RestoreSpec{BackupName: "probe"})
		probe.GenerateName = "probe-"
		c.Assert(as(c, "alice").Create(ctx, probe), IsNil)
		defer func() { _ = testClient.Delete(ctx, probe) }()
		return probe.Annotations[requester.Annotation] != "", "the webhook records nothing yet"
	})
	return ns
}

// waitingBackup creates NonAdminBackup name in ns and returns it once its
// Velero Backup exists, still running.
func (s *HostileRestoreSuite) waitingBackup(c *C, ns, name string) (*v1alpha1.NonAdminBackup, string) {
	nab := newNAB(ns, name, velerov1.BackupSpec{})
	c.Assert(testClient.Create(context.Background(), nab), IsNil)
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", got.Status)
	})
	return got, got.Status.VeleroBackup.Name
}

// planAt waits until nar's plan is at phase (its current phase's name).
func planAt(c *C, nar *v1alpha1.NonAdminRestore, phase string) *v1alpha1.NonAdminRestore {
	var got *v1alpha1.NonAdminRestore
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAR(c, nar)
		return got.Status.Plan != nil && strings.HasPrefix(got.Status.Plan.Current, phase+":"), fmt.Sprintf("%+v", got.Status.Plan)
	})
	return got
}

// refused waits until nar's plan failed and returns its Accepted
// condition's message; no Velero Restore and no copy of modifiers may
// exist for it.
func (s *HostileRestoreSuite) refused(c *C, nar *v1alpha1.NonAdminRestore) (*v1alpha1.NonAdminRestore, string) {
	var got *v1alpha1.NonAdminRestore
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAR(c, nar)
		return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%+v", got.Status.Plan)
	})
	c.Check(veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID)), HasLen, 0)
	cms := &corev1.ConfigMapList{}
	c.Assert(testClient.List(context.Background(), cms, client.InNamespace(s.oadp), client.MatchingLabels{v1alpha1.NarOriginNACUUIDLabel: v1alpha1.NACUUIDOf(got.UID)}), IsNil)
	c.Check(cms.Items, HasLen, 0)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	return got, cond.Message
}

const harmlessModifiers = "version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  mergePatches:\n  - patchData: '{\"data\": {\"restored\": \"yes\"}}'\n"

// modifiers creates ConfigMap name of ns holding rules, as alice.
func modifiers(c *C, ns, name, rules string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"modifiers.yaml": rules}}
	c.Assert(as(c, "alice").Create(context.Background(), cm), IsNil)
	return cm
}

// TestModifiersChangedWhileTheRestoreWaits: alice asks for a restore with
// her modifiers while its backup still runs; bob, an editor, rewrites the
// ConfigMap (or deletes and re-creates it) meanwhile. The restore is
// refused naming what changed, and never carries bob's rules; the restore
// that nobody meddles with carries exactly alice's, in nacflow's copy.
func (s *HostileRestoreSuite) TestModifiersChangedWhileTheRestoreWaits(c *C) {
	ctx := context.Background()
	ns := s.tenant(c)
	_, backup := s.waitingBackup(c, ns, "nightly")
	bob := as(c, "bob")
	hostile := "version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  mergePatches:\n  - patchData: '{\"data\": {\"bob\": \"was here\"}}'\n"

	edited := modifiers(c, ns, "edited", harmlessModifiers)
	recreated := modifiers(c, ns, "recreated", harmlessModifiers)
	untouched := modifiers(c, ns, "untouched", harmlessModifiers)
	var nars []*v1alpha1.NonAdminRestore
	for _, cm := range []*corev1.ConfigMap{edited, recreated, untouched} {
		nar := newNAR(ns, cm.Name, velerov1.RestoreSpec{BackupName: "nightly", ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: cm.Name}})
		c.Assert(as(c, "alice").Create(ctx, nar), IsNil)
		planAt(c, nar, "waitForBackup")
		nars = append(nars, nar)
	}
	edited.Data["modifiers.yaml"] = hostile
	c.Assert(bob.Update(ctx, edited), IsNil)
	c.Assert(bob.Delete(ctx, recreated), IsNil)
	c.Assert(bob.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recreated"}, Data: map[string]string{"modifiers.yaml": harmlessModifiers}}), IsNil)
	completeBackup(c, s.oadp, backup, velerov1.BackupPhaseCompleted)

	_, msg := s.refused(c, nars[0])
	c.Check(msg, Matches, `spec.restoreSpec.resourceModifier: ConfigMap "edited" of namespace `+ns+` changed after alice created the NonAdminRestore \(content sha256:\w{12}, recorded sha256:\w{12}; last written by field manager ".*" \(Update\) at .*\): refusing to apply modifiers they did not ask for; create a new NonAdminRestore`)
	_, msg = s.refused(c, nars[1])
	c.Check(msg, Matches, `spec.restoreSpec.resourceModifier: ConfigMap "recreated" of namespace `+ns+` was deleted and created again after alice created the NonAdminRestore .*`)

	got := planAt(c, nars[2], "waitForRestore")
	restores := veleroRestoresOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID))
	c.Assert(restores, HasLen, 1)
	r := restores[0]
	c.Assert(r.Spec.ResourceModifier, NotNil)
	c.Check(r.Spec.ResourceModifier.Name, Equals, r.Name+"-modifiers")
	c.Check(r.Annotations[v1alpha1.RestoreModifiersDigestAnnotation], Equals, requester.ConfigMapDigest(untouched))
	c.Check(r.Annotations[v1alpha1.RestoreBackupUIDAnnotation], Not(Equals), "")
	copied := &corev1.ConfigMap{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: r.Spec.ResourceModifier.Name}, copied), IsNil)
	c.Check(copied.Data, DeepEquals, untouched.Data)
	c.Check(got.Status.VeleroRestore.Spec.ResourceModifier, IsNil, Commentf("the accepted spec names no tenant ConfigMap: Velero would read that name in the OADP namespace"))
}

// TestSpecFixedAtCreation: once created, a NonAdminRestore's spec can not be
// changed by anyone — not the editor who did not ask, not the requester —
// while a rewrite with Velero's zero values (OADP NAC's updates) passes.
// A ConfigMap named by the spec that does not exist when the restore is
// asked for is not one the requester asked with: refused.
func (s *HostileRestoreSuite) TestSpecFixedAtCreation(c *C) {
	ctx := context.Background()
	ns := s.tenant(c)
	s.waitingBackup(c, ns, "nightly")
	nar := newNAR(ns, "plain", velerov1.RestoreSpec{BackupName: "nightly"})
	c.Assert(as(c, "alice").Create(ctx, nar), IsNil)
	modifiers(c, ns, "later", harmlessModifiers)
	for _, who := range []string{"bob", "alice"} {
		for what, patch := range map[string]string{
			"resourceModifier": `{"spec":{"restoreSpec":{"resourceModifier":{"kind":"ConfigMap","name":"later"}}}}`,
			"namespaceMapping": `{"spec":{"restoreSpec":{"namespaceMapping":{"` + ns + `":"elsewhere"}}}}`,
			"hooks":            `{"spec":{"restoreSpec":{"hooks":{"resources":[{"name":"h","postHooks":[{"exec":{"command":["sh"]}}]}]}}}}`,
		} {
			err := as(c, who).Patch(ctx, getNAR(c, nar), client.RawPatch("application/merge-patch+json", []byte(patch)))
			c.Check(err, ErrorMatches, `.*spec.restoreSpec is immutable.*`, Commentf("%s changing %s", who, what))
		}
	}
	zero := `{"spec":{"restoreSpec":{"hooks":{},"itemOperationTimeout":"0s"}}}`
	c.Check(testClient.Patch(ctx, getNAR(c, nar), client.RawPatch("application/merge-patch+json", []byte(zero))), IsNil)

	missing := newNAR(ns, "missing", velerov1.RestoreSpec{BackupName: "nightly", ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "not-yet"}})
	c.Assert(as(c, "alice").Create(ctx, missing), IsNil)
	modifiers(c, ns, "not-yet", harmlessModifiers)
	_, msg := s.refused(c, missing)
	c.Check(msg, Equals, `spec.restoreSpec.resourceModifier: no ConfigMap "not-yet" existed in namespace `+ns+` when alice created the NonAdminRestore, so nothing records what they asked the restore to apply: create the ConfigMap first, then a new NonAdminRestore`)
}

// TestRequestersThatAreNotTenants: a NonAdminRestore recorded as made by
// the cluster's admin (system:masters), by Velero's service account, by a
// system identity, or by anyone who may create Velero Restores in the OADP
// namespace runs with the tenant role alone — as an admin's Velero restore
// re-creating a tenant's NonAdminRestores makes them — and may neither map
// namespaces nor carry modifiers.
func (s *HostileRestoreSuite) TestRequestersThatAreNotTenants(c *C) {
	ctx := context.Background()
	ns := s.tenant(c)
	s.waitingBackup(c, ns, "nightly")
	victim := createNamespace(c, "victim")
	modifiers(c, ns, "mods", harmlessModifiers)
	c.Assert(testClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: "velero-restorer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{velerov1.SchemeGroupVersion.Group}, Resources: []string{"restores"}, Verbs: []string{"create"}}}}), IsNil)
	c.Assert(testClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: "restore-operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "velero-restorer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "operator"}}}), IsNil)
	for _, tc := range []struct {
		user   string
		groups []string
		why    string
	}{
		{"cluster-admin-person", []string{"system:masters"}, "a member of system:masters"},
		{"system:serviceaccount:" + s.oadp + ":velero", []string{"system:serviceaccounts", "system:serviceaccounts:" + s.oadp}, "a service account of the OADP namespace " + s.oadp + " (Velero's or nacflow's own identity)"},
		{"system:kube-controller-manager", nil, "a system identity of the cluster"},
		{"operator", nil, "allowed to create Velero Restores in the OADP namespace " + s.oadp + " (an admin)"},
	} {
		// Velero and the system identities may create anything anywhere;
		// here, NonAdminRestores in the tenant's namespace.
		c.Assert(testClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "not-a-tenant-"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "restorer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tc.user}}}), IsNil)
		for _, spec := range []velerov1.RestoreSpec{
			{BackupName: "nightly", NamespaceMapping: map[string]string{ns: victim}},
			{BackupName: "nightly", ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "mods"}},
		} {
			nar := newNAR(ns, "", spec)
			nar.GenerateName = "planted-"
			c.Assert(as(c, tc.user, tc.groups...).Create(ctx, nar), IsNil)
			got, msg := s.refused(c, nar)
			c.Check(msg, Matches, `spec.restoreSpec.(namespaceMapping|resourceModifier).*(known requester|whoever asked).*RequesterNotATenant\)`, Commentf("%s", tc.user))
			cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRequesterVerified)
			c.Assert(cond, NotNil)
			c.Check(cond.Reason, Equals, v1alpha1.ReasonRequesterNotATenant)
			c.Check(cond.Message, Matches, "created by "+tc.user+`, who is not a tenant \(`+regexp.QuoteMeta(tc.why)+`\): .*`)
		}
	}
	// A tenant's own restore, same spec, is held to what alice may do.
	nar := newNAR(ns, "alices", velerov1.RestoreSpec{BackupName: "nightly"})
	c.Assert(as(c, "alice").Create(ctx, nar), IsNil)
	got := planAt(c, nar, "waitForBackup")
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRequesterVerified)
	c.Assert(cond, NotNil)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonRequesterRecorded)
}
