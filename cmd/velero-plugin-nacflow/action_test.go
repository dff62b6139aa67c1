package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

func Test(t *testing.T) { TestingT(t) }

type ActionSuite struct {
	log  *logtest.Hook
	act  *action
	kube client.Client
}

var _ = Suite(&ActionSuite{})

// nsAdmin is a small stand-in for the aggregated admin ClusterRole.
var nsAdmin = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "persistentvolumeclaims"}, Verbs: []string{"create", "get", "update", "patch"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"create", "get", "update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"get", "list"}},
}

func (s *ActionSuite) SetUpTest(c *C) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace},
		{corev1.SchemeGroupVersion.WithKind("ResourceQuota"), meta.RESTScopeNamespace},
		{corev1.SchemeGroupVersion.WithKind("PersistentVolume"), meta.RESTScopeRoot},
		{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), meta.RESTScopeNamespace},
		{rbacv1.SchemeGroupVersion.WithKind("Role"), meta.RESTScopeNamespace},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot},
		{networkingv1.SchemeGroupVersion.WithKind("Ingress"), meta.RESTScopeNamespace},
		{corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), meta.RESTScopeNamespace},
		{velerov1.SchemeGroupVersion.WithKind("Backup"), meta.RESTScopeNamespace},
		{velerov1.SchemeGroupVersion.WithKind("BackupStorageLocation"), meta.RESTScopeNamespace},
	} {
		mapper.Add(k.gvk, k.scope)
	}
	scheme := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(scheme), IsNil)
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	s.kube = fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(
		// The admin's location and a backup on it; a tenant's location
		// (OADP's NABSL label) and a backup on it.
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "openshift-adp"}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "on-admin", Namespace: "openshift-adp", UID: "b-admin"}, Spec: velerov1.BackupSpec{StorageLocation: "default"}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "team-own-1", Namespace: "openshift-adp",
			Labels: map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "team-own-1"}}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "on-tenant", Namespace: "openshift-adp"}, Spec: velerov1.BackupSpec{StorageLocation: "team-own-1"}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "on-gone", Namespace: "openshift-adp"}, Spec: velerov1.BackupSpec{StorageLocation: "gone"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Rules: nsAdmin},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: nsAdmin[:1]},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "team"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "team"}},
	).Build()
	logger, hook := logtest.NewNullLogger()
	s.log = hook
	s.act = newAction(logger, func() (clusterClient, error) { return s.kube, nil })
}

// tenantRestore is a Velero Restore as nacflow makes it.
func tenantRestore(annotations map[string]string, policy velerov1.PolicyType) *velerov1.Restore {
	a := map[string]string{v1alpha1.NarOriginNamespaceAnnotation: "team"}
	for k, v := range annotations {
		a[k] = v
	}
	return &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "openshift-adp", UID: "u1",
		Labels: map[string]string{v1alpha1.NarOriginNACUUIDLabel: "id"}, Annotations: a},
		Spec: velerov1.RestoreSpec{BackupName: "on-admin", ExistingResourcePolicy: policy}}
}

func item(js string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(js), &u.Object); err != nil {
		panic(err)
	}
	return u
}

const (
	bindingToEdit         = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"editors","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"u"}]}`
	bindingToClusterAdmin = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"root","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","name":"u"}]}`
	quota                 = `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"quota","namespace":"team"},"spec":{"hard":{"pods":"100"}}}`
	oldConfigMap          = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"old","namespace":"team"}}`
	hostPathPV            = `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"root"},"spec":{"hostPath":{"path":"/"},"claimRef":{"namespace":"team","name":"data"},"persistentVolumeReclaimPolicy":"Retain"}}`
)

func (s *ActionSuite) execute(c *C, r *velerov1.Restore, js string) (*velero.RestoreItemActionExecuteOutput, error) {
	it := item(js)
	return s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: it, ItemFromBackup: it.DeepCopy(), Restore: r})
}

// TestTenantRestore: in a restore nacflow made, what a namespace admin
// could create passes unchanged, the rest is skipped with a log line.
func (s *ActionSuite) TestTenantRestore(c *C) {
	for _, t := range []struct {
		item   string
		policy velerov1.PolicyType
		skip   bool
		log    string
	}{
		{bindingToEdit, "", false, ""},
		{bindingToClusterAdmin, "", true, `nacflow: not restoring rolebindings.rbac.authorization.k8s.io team/root: RoleBinding root binds ClusterRole cluster-admin, which grants what the tenant role does not hold: .*`},
		{quota, velerov1.PolicyTypeUpdate, true, `nacflow: not restoring resourcequotas team/quota: the tenant role does not allow create on resourcequotas`},
		{oldConfigMap, velerov1.PolicyTypeUpdate, false, ""},
		{hostPathPV, "", true, `nacflow: not restoring persistentvolumes root: PersistentVolume root: volume source spec.hostPath is not one .*`},
	} {
		s.log.Reset()
		out, err := s.execute(c, tenantRestore(nil, t.policy), t.item)
		c.Assert(err, IsNil, Commentf(t.item))
		c.Check(out.SkipRestore, Equals, t.skip, Commentf(t.item))
		c.Check(out.UpdatedItem.UnstructuredContent(), DeepEquals, item(t.item).Object, Commentf(t.item))
		if t.log == "" {
			c.Check(s.log.Entries, HasLen, 0, Commentf(t.item))
			continue
		}
		c.Assert(s.log.LastEntry(), NotNil, Commentf(t.item))
		c.Check(s.log.LastEntry().Level, Equals, logrus.WarnLevel)
		c.Check(s.log.LastEntry().Message, Matches, t.log)
	}
}

// TestOtherRestores: a restore nacflow did not make passes through, even
// one the policy would cut, and the cluster is not even read.
func (s *ActionSuite) TestOtherRestores(c *C) {
	s.act = newAction(logrus.New(), func() (clusterClient, error) { return nil, errors.New("must not connect") })
	r := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "admin-restore", Namespace: "openshift-adp",
		Annotations: map[string]string{v1alpha1.NarOriginNamespaceAnnotation: "team"}}}
	out, err := s.execute(c, r, bindingToClusterAdmin)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
}

// TestSettingsFromAnnotations: nacflow's annotations choose the tenant role
// and the admin-owned resources.
func (s *ActionSuite) TestSettingsFromAnnotations(c *C) {
	// cluster-admin as the bound: the binding passes.
	out, err := s.execute(c, tenantRestore(map[string]string{restorepolicy.TenantRoleAnnotation: "cluster-admin"}, ""), bindingToClusterAdmin)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
	// configmaps admin-owned: the existing one is kept.
	out, err = s.execute(c, tenantRestore(map[string]string{restorepolicy.AdminOwnedAnnotation: "configmaps"}, velerov1.PolicyTypeUpdate), oldConfigMap)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, true)
	_, err = s.execute(c, tenantRestore(map[string]string{restorepolicy.AdminOwnedAnnotation: "Bad Value"}, ""), oldConfigMap)
	c.Check(err, ErrorMatches, `restore r: annotation nacflow.io/restore-admin-owned-resources: .*`)
}

// TestFailsClosed: no namespace annotation, a missing tenant role, an
// unknown kind or an unreachable cluster is an error (Velero leaves the item
// out), never a pass.
func (s *ActionSuite) TestFailsClosed(c *C) {
	r := tenantRestore(nil, "")
	delete(r.Annotations, v1alpha1.NarOriginNamespaceAnnotation)
	_, err := s.execute(c, r, bindingToEdit)
	c.Check(err, ErrorMatches, `restore r is a tenant's .* but has no annotation openshift.io/oadp-nar-origin-namespace: not restoring its items`)

	_, err = s.execute(c, tenantRestore(map[string]string{restorepolicy.TenantRoleAnnotation: "missing"}, ""), bindingToEdit)
	c.Check(err, ErrorMatches, `reading the tenant role, ClusterRole missing: .*not found`)

	_, err = s.execute(c, tenantRestore(nil, ""), `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"team"}}`)
	c.Check(err, ErrorMatches, `restore r: mapping kind example.com/v1, Kind=Widget of item team/w to a resource: .*`)

	s.act = newAction(logrus.New(), func() (clusterClient, error) { return nil, errors.New("no route") })
	_, err = s.execute(c, tenantRestore(nil, ""), bindingToEdit)
	c.Check(err, ErrorMatches, `nacflow restore plugin: connecting to the cluster: no route`)
}

// TestStatusNotRestoredBeyondTheTenant: an item whose backup holds a status
// — whether it asks Velero to restore it (velero.io/restore-status "true"),
// the restore sets restoreStatus, or it asks nothing — comes back with the
// annotation "false" (which Velero reads after this action and which wins
// over both) when the tenant role may not update its status subresource;
// an item whose status the tenant may write is returned as it is.
func (s *ActionSuite) TestStatusNotRestoredBeyondTheTenant(c *C) {
	const (
		asking  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lb","namespace":"team","annotations":{"velero.io/restore-status":"true"}},"status":{"x":"forged"}}`
		quiet   = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"q","namespace":"team"},"status":{"x":"y"}}`
		noAnnos = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n","namespace":"team"},"status":{"x":"y"}}`
	)
	out, err := s.execute(c, tenantRestore(nil, ""), asking)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
	c.Check(out.UpdatedItem.(*unstructured.Unstructured).GetAnnotations()[restorepolicy.StatusRestoreAnnotation], Equals, "false")
	c.Check(s.log.LastEntry().Message, Equals, "nacflow: not restoring the status of configmaps team/lb: the tenant role does not allow update on configmaps/status")

	// An item that asks nothing gets "false" too: another action could ask
	// after this one, and Velero decides on the item as it creates it.
	out, err = s.execute(c, tenantRestore(nil, ""), quiet)
	c.Assert(err, IsNil)
	c.Check(out.UpdatedItem.(*unstructured.Unstructured).GetAnnotations(), DeepEquals, map[string]string{restorepolicy.StatusRestoreAnnotation: "false"})

	r := tenantRestore(nil, "")
	r.Spec.RestoreStatus = &velerov1.RestoreStatusSpec{IncludedResources: []string{"configmaps"}}
	out, err = s.execute(c, r, noAnnos)
	c.Assert(err, IsNil)
	c.Check(out.UpdatedItem.(*unstructured.Unstructured).GetAnnotations(), DeepEquals, map[string]string{restorepolicy.StatusRestoreAnnotation: "false"})

	// A role that may write the status: Velero restores it.
	out, err = s.execute(c, tenantRestore(map[string]string{restorepolicy.TenantRoleAnnotation: "cluster-admin"}, ""), asking)
	c.Assert(err, IsNil)
	c.Check(out.UpdatedItem.UnstructuredContent(), DeepEquals, item(asking).Object)
}

// TestBucketOnly: a restore of a backup on a tenant's location (OADP's NABSL
// label), or on a location or backup that cannot be found, restores no
// PersistentVolume — not even one Velero gave a new volume from the
// snapshot the bucket names — and hands its claims over for a new volume;
// a backup on the admin's location restores a volume Velero made from its
// snapshot, and its claims keep their volume name.
func (s *ActionSuite) TestBucketOnly(c *C) {
	const (
		restoredPV = `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d","volumeHandle":"from-snapshot"},"claimRef":{"namespace":"team","name":"data"}}}`
		backupPV   = `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},"spec":{"csi":{"driver":"d","volumeHandle":"old"},"claimRef":{"namespace":"team","name":"data"}}}`
		claim      = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"team","annotations":{"pv.kubernetes.io/bind-completed":"yes"}},"spec":{"volumeName":"pv1","storageClassName":"fast"}}`
		newClaim   = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"team","annotations":{}},"spec":{"storageClassName":"fast"}}`
	)
	restore := func(uid, backup string) *velerov1.Restore {
		r := tenantRestore(nil, "")
		r.UID, r.Spec.BackupName = types.UID(uid), backup
		return r
	}
	pv := func(r *velerov1.Restore) *velero.RestoreItemActionExecuteOutput {
		out, err := s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: item(restoredPV), ItemFromBackup: item(backupPV), Restore: r})
		c.Assert(err, IsNil)
		return out
	}
	for _, backup := range []string{"on-tenant", "on-gone", "missing"} {
		r := restore("u-"+backup, backup)
		s.log.Reset()
		c.Check(pv(r).SkipRestore, Equals, true, Commentf(backup))
		c.Check(s.log.LastEntry().Message, Matches, `nacflow: not restoring persistentvolumes pv1: PersistentVolume pv1: the backup is in a bucket the tenant writes, .*`, Commentf(backup))
		out, err := s.execute(c, r, claim)
		c.Assert(err, IsNil)
		c.Check(out.SkipRestore, Equals, false)
		c.Check(out.UpdatedItem.UnstructuredContent(), DeepEquals, item(newClaim).Object, Commentf(backup))
		c.Check(s.log.LastEntry().Message, Equals, "nacflow: claim team/data gets a new volume: the backup is in a bucket the tenant writes, and its volumes are restored only from data in the bucket")
	}
	r := restore("u-admin", "on-admin")
	c.Check(pv(r).SkipRestore, Equals, false)
	out, err := s.execute(c, r, claim)
	c.Assert(err, IsNil)
	c.Check(out.UpdatedItem.UnstructuredContent(), DeepEquals, item(claim).Object)
}

// withModifiers returns a tenant restore whose resource modifiers are the
// ConfigMap nacflow copies into the OADP namespace (labelled with the
// restore's NACUUID), holding rules, with their digest on the restore as
// nacflow writes it.
func (s *ActionSuite) withModifiers(c *C, uid, rules string, annotations map[string]string) *velerov1.Restore {
	r := tenantRestore(annotations, "")
	r.UID = types.UID(uid)
	name := "r-" + uid + "-modifiers"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openshift-adp",
		Labels: map[string]string{v1alpha1.NarOriginNACUUIDLabel: "id"}}, Data: map[string]string{"m.yaml": "version: v1\nresourceModifierRules:\n" + rules}}
	c.Assert(s.kube.Create(context.Background(), cm), IsNil)
	r.Spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: name}
	r.Annotations[v1alpha1.RestoreModifiersDigestAnnotation] = requester.ConfigMapDigest(cm)
	return r
}

// TestModifiersAsAsked: nacflow's copy of a tenant's modifiers is applied
// only when its content is what the requester asked for (the digest on the
// Restore): other content, or no digest, fails every item.
func (s *ActionSuite) TestModifiersAsAsked(c *C) {
	const rules = "- conditions: {groupResource: configmaps}\n  mergePatches: [{patchData: '{\"data\": {\"k\": \"v\"}}'}]\n"
	r := s.withModifiers(c, "u-asked", rules, nil)
	_, err := s.execute(c, r, oldConfigMap)
	c.Check(err, IsNil)
	for about, digest := range map[string]string{"other content": "sha256:0000", "no digest": ""} {
		r := s.withModifiers(c, "u-"+strings.ReplaceAll(about, " ", "-"), rules, nil)
		if digest == "" {
			delete(r.Annotations, v1alpha1.RestoreModifiersDigestAnnotation)
		} else {
			r.Annotations[v1alpha1.RestoreModifiersDigestAnnotation] = digest
		}
		_, err := s.execute(c, r, oldConfigMap)
		c.Check(err, ErrorMatches, `restore r: its resource modifiers, ConfigMap openshift-adp/r-u-.*-modifiers, are not what its requester asked for .*`, Commentf(about))
	}
}

// TestBackupPinned: a Restore pinned to a Backup's UID restores nothing of
// a Backup of that name with another UID (made again since nacflow
// checked it).
func (s *ActionSuite) TestBackupPinned(c *C) {
	r := tenantRestore(map[string]string{v1alpha1.RestoreBackupUIDAnnotation: "b-admin"}, "")
	_, err := s.execute(c, r, oldConfigMap)
	c.Check(err, IsNil)
	r = tenantRestore(map[string]string{v1alpha1.RestoreBackupUIDAnnotation: "b-before"}, "")
	r.UID = "u-pinned"
	_, err = s.execute(c, r, oldConfigMap)
	c.Check(err, ErrorMatches, `restore r: Velero Backup on-admin is not the one nacflow checked \(UID b-before\): not restoring its items`)
}

// TestTenantModifiersRefusedAtParse: a tenant's modifiers (nacflow's copy
// in the OADP namespace) are read with nacflow's rules for a tenant's
// modifiers, as the pre-check reads them: a rule with a matches condition
// (here on an annotation the item carries, which Velero may have stripped
// by the time it evaluates it) refuses every item of the restore, whatever
// the item.
func (s *ActionSuite) TestTenantModifiersRefusedAtParse(c *C) {
	r := s.withModifiers(c, "u-matches", "- conditions: {groupResource: configmaps, matches: [{path: /metadata/annotations/velero.io~1must-include-additional-items, value: \"true\"}]}\n"+
		"  patches: [{operation: add, path: /data/k, value: '\"v\"'}]\n", nil)
	const annotated = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team","annotations":{"velero.io/must-include-additional-items":"true"}},"data":{}}`
	_, err := s.execute(c, r, annotated)
	c.Check(err, ErrorMatches, `restore r: ConfigMap r-u-matches-modifiers: resourceModifierRules\[0\]: conditions.matches: Velero evaluates it on the item after .*`)
	// The admin's enforced modifiers (no NAR label) are Velero's to accept.
	c.Assert(s.kube.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "enforced", Namespace: "openshift-adp"},
		Data: map[string]string{"m.yaml": "version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps, matches: [{path: /data/k, value: v}]}\n  patches: [{operation: add, path: /data/j, value: '\"w\"'}]\n"}}), IsNil)
	r = tenantRestore(nil, "")
	r.UID = "u-enforced"
	r.Spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "enforced"}
	out, err := s.execute(c, r, annotated)
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
}

// ingressAdmin may create ingresses but not update their status, as
// Kubernetes' admin role.
var ingressAdmin = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ingress-admin"}, Rules: append([]rbacv1.PolicyRule{
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"create", "get", "update", "patch"}},
}, nsAdmin...)}

// TestStatusDecidedOnTheBackup: Velero strips an item's status before any
// restore item action and writes the backup's afterwards, with its own
// rights: whether the status is written is decided on the item from the
// backup. An Ingress whose backup holds a status.loadBalancer and asks for
// it (velero.io/restore-status "true") comes back, for a tenant role that
// may not update ingresses/status, with the annotation "false" — with or
// without resource modifiers (never left out for its status), when only
// the backup's copy has the status, and when the backup's copy is unknown
// (deny by default); an item whose backup copy has no status is returned
// as it is.
func (s *ActionSuite) TestStatusDecidedOnTheBackup(c *C) {
	c.Assert(s.kube.Create(context.Background(), ingressAdmin.DeepCopy()), IsNil)
	role := map[string]string{restorepolicy.TenantRoleAnnotation: "ingress-admin"}
	const (
		stripped = `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web","namespace":"team","annotations":{"velero.io/restore-status":"true"}},"spec":{}}`
		backedUp = `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web","namespace":"team","annotations":{"velero.io/restore-status":"true"}},"spec":{},"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}}`
		noStatus = `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web","namespace":"team"},"spec":{}}`
	)
	annotation := func(out *velero.RestoreItemActionExecuteOutput) string {
		return out.UpdatedItem.(*unstructured.Unstructured).GetAnnotations()[restorepolicy.StatusRestoreAnnotation]
	}
	const logged = "nacflow: not restoring the status of ingresses.networking.k8s.io team/web: the tenant role does not allow update on ingresses.networking.k8s.io/status"

	// Only the backup's copy has the status, as Velero hands the item over.
	s.log.Reset()
	out, err := s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: item(stripped), ItemFromBackup: item(backedUp), Restore: tenantRestore(role, "")})
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
	c.Check(annotation(out), Equals, "false")
	if c.Check(s.log.LastEntry(), NotNil) {
		c.Check(s.log.LastEntry().Message, Equals, logged)
	}

	// With the tenant's resource modifiers: the same, never left out.
	r := s.withModifiers(c, "u-status", "- conditions: {groupResource: ingresses.networking.k8s.io}\n  mergePatches:\n  - patchData: '{\"metadata\":{\"labels\":{\"restored\":\"yes\"}}}'\n", role)
	out, err = s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: item(backedUp), ItemFromBackup: item(backedUp), Restore: r})
	c.Assert(err, IsNil)
	c.Check(out.SkipRestore, Equals, false)
	c.Check(annotation(out), Equals, "false")

	// The backup's copy unknown: it may have a status.
	out, err = s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: item(noStatus), Restore: tenantRestore(role, "")})
	c.Assert(err, IsNil)
	c.Check(annotation(out), Equals, "false")

	// A backup copy without status: nothing to decide.
	out, err = s.act.Execute(&velero.RestoreItemActionExecuteInput{Item: item(noStatus), ItemFromBackup: item(noStatus), Restore: tenantRestore(role, "")})
	c.Assert(err, IsNil)
	c.Check(out.UpdatedItem.UnstructuredContent(), DeepEquals, item(noStatus).Object)
}
