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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
)

// nothingCreatedFor checks that the OADP namespace holds no object labelled
// with nacuuid under any NAC origin label.
func nothingCreatedFor(c *C, oadp, nacuuid, about string) {
	for _, label := range []string{v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NabslOriginNACUUIDLabel, v1alpha1.NadrOriginNACUUIDLabel} {
		for _, l := range []client.ObjectList{&velerov1.BackupList{}, &velerov1.RestoreList{}, &velerov1.BackupStorageLocationList{}, &corev1.SecretList{}, &velerov1.DownloadRequestList{}} {
			c.Assert(testClient.List(context.Background(), l, client.InNamespace(oadp), client.MatchingLabels{label: nacuuid}), IsNil)
			items, err := meta.ExtractList(l)
			c.Assert(err, IsNil)
			c.Check(items, HasLen, 0, Commentf("%s: %T created", about, l))
		}
	}
}

// refusedByController waits until obj's plan failed and returns the failed
// phase's message.
func refusedByController(c *C, obj interface {
	client.Object
	GetPlan() *v1alpha1.PlanStatus
}) string {
	var msg string
	eventually(c, 10*time.Second, func() (bool, string) {
		c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj), IsNil)
		p := obj.GetPlan()
		if p == nil || p.State != v1alpha1.PlanFailed {
			return false, fmt.Sprintf("%+v", p)
		}
		for _, ph := range p.Phases {
			if ph.State == v1alpha1.PhaseFailed {
				msg = ph.Message
			}
		}
		return true, ""
	})
	return msg
}

// TestTenantIsolationAttacks applies, as a tenant, every way we know to
// reach beyond its namespace; each is refused (by the API server's CEL
// rules or by the controller, naming the field) and nothing is created in
// the OADP namespace for it.
func (s *ControllerSuite) TestTenantIsolationAttacks(c *C) {
	ctx := context.Background()
	victim, victimBackup := s.createdBackup(c, "victim")
	victimNABSL := newNABSL(victim.Namespace, "victims-bucket", "creds")
	c.Assert(testClient.Create(ctx, victimNABSL), IsNil)
	ns := createNamespace(c, "attacker")

	// Refused when applied.
	for _, tc := range []struct {
		about string
		spec  velerov1.BackupSpec
	}{
		{"own and another namespace", velerov1.BackupSpec{IncludedNamespaces: []string{ns, victim.Namespace}}},
		{"excluded namespaces", velerov1.BackupSpec{ExcludedNamespaces: []string{"kube-system"}}},
		{"cluster resources", velerov1.BackupSpec{IncludeClusterResources: ptr(true)}},
		{"cluster-scoped resources", velerov1.BackupSpec{IncludedClusterScopedResources: []string{"clusterroles"}}},
		{"snapshot locations", velerov1.BackupSpec{VolumeSnapshotLocations: []string{"default"}}},
	} {
		c.Check(testClient.Create(ctx, newNAB(ns, "cel", tc.spec)), NotNil, Commentf(tc.about))
	}

	// Refused by the controller, nothing created.
	for _, tc := range []struct {
		about, name string
		spec        velerov1.BackupSpec
		labels      map[string]string
		namespace   string
		msg         string
	}{
		{"another namespace", "other-ns", velerov1.BackupSpec{IncludedNamespaces: []string{victim.Namespace}}, nil, "",
			"spec.backupSpec.includedNamespaces can not contain namespaces other than"},
		{"a wildcard namespace", "wildcard", velerov1.BackupSpec{IncludedNamespaces: []string{"*"}}, nil, "",
			"spec.backupSpec.includedNamespaces can not contain namespaces other than"},
		{"a Velero BSL named directly", "velero-bsl", velerov1.BackupSpec{StorageLocation: "default"}, nil, "",
			`spec.backupSpec.storageLocation: no NonAdminBackupStorageLocation named "default"`},
		{"another tenant's storage location", "their-bsl", velerov1.BackupSpec{StorageLocation: victimNABSL.Name}, nil, "",
			`spec.backupSpec.storageLocation: no NonAdminBackupStorageLocation named "victims-bucket"`},
		{"a resource policy ConfigMap of the OADP namespace", "policy",
			velerov1.BackupSpec{ResourcePolicy: &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "admin-policy"}}, nil, "",
			"spec.backupSpec.resourcePolicy is restricted"},
		{"a forged sync label for another tenant's backup", "forged-sync", velerov1.BackupSpec{},
			map[string]string{v1alpha1.NabSyncedFromNACUUIDLabel: victim.Status.VeleroBackup.NACUUID}, "", "refused: the Velero Backup with NACUUID"},
		{"a NAB in the OADP namespace itself", "in-oadp", velerov1.BackupSpec{}, nil, s.oadp,
			"metadata.namespace: NonAdminBackups are not served in the OADP namespace"},
		{"an oversized spec (300 KiB of label selector)", "huge",
			velerov1.BackupSpec{OrLabelSelectors: hugeSelectors(300 << 10)}, nil, "",
			"spec.backupSpec is 3"}, // "… is 3xxxxx bytes; at most 262144 are accepted"
	} {
		target := ns
		if tc.namespace != "" {
			target = tc.namespace
		}
		nab := newNAB(target, tc.name, tc.spec)
		nab.Labels = tc.labels
		c.Assert(testClient.Create(ctx, nab), IsNil, Commentf(tc.about))
		msg := refusedByController(c, nab)
		c.Check(strings.Contains(msg, tc.msg), Equals, true, Commentf("%s: %q", tc.about, msg))
		c.Check(strings.Contains(refusedWithStatus(c, nab, tc.about), tc.msg), Equals, true, Commentf(tc.about))
		nothingCreatedFor(c, s.oadp, v1alpha1.NACUUIDOf(nab.UID), tc.about)
	}

	// Restores: another tenant's NAB or Velero backup, a namespace mapping,
	// a resource modifier of the OADP namespace.
	for _, tc := range []struct {
		about, name string
		spec        velerov1.RestoreSpec
		msg         string
	}{
		{"another tenant's NAB", "their-nab", velerov1.RestoreSpec{BackupName: victim.Name}, `no NonAdminBackup named "victim"`},
		{"another tenant's Velero backup", "their-velero", velerov1.RestoreSpec{BackupName: victimBackup.Name}, "no NonAdminBackup named"},
		{"a namespace mapping", "mapping", velerov1.RestoreSpec{BackupName: "x", NamespaceMapping: map[string]string{victim.Namespace: ns}}, "namespaceMapping maps " + victim.Namespace + ": only the NonAdminRestore's own namespace"},
		{"a resource modifier", "modifier", velerov1.RestoreSpec{BackupName: "x",
			ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "admin-modifiers"}}, "resourceModifier: a tenant's resource modifiers need a known requester"},
	} {
		nar := newNAR(ns, tc.name, tc.spec)
		c.Assert(testClient.Create(ctx, nar), IsNil, Commentf(tc.about))
		msg := refusedByController(c, nar)
		c.Check(strings.Contains(msg, tc.msg), Equals, true, Commentf("%s: %q", tc.about, msg))
		c.Check(strings.Contains(refusedWithStatus(c, nar, tc.about), tc.msg), Equals, true, Commentf(tc.about))
		nothingCreatedFor(c, s.oadp, v1alpha1.NACUUIDOf(nar.UID), tc.about)
	}

	// A storage location whose credential is another tenant's Secret (a
	// Secret of that name exists only in the victim's namespace).
	c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: victim.Namespace, Name: "victim-creds"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=victim\naws_secret_access_key=victim-secret\n")}}), IsNil)
	steal := newNABSL(ns, "steal", "victim-creds")
	c.Assert(testClient.Create(ctx, steal), IsNil)
	msg := refusedByController(c, steal)
	c.Check(msg, Matches, `spec.backupStorageLocationSpec.credential: Secret "victim-creds" not found in namespace .*`)
	nothingCreatedFor(c, s.oadp, v1alpha1.DerivedNACUUID(steal), "another tenant's Secret")

	// The victim's backup is untouched through all of it.
	c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(victimBackup), &velerov1.Backup{}), IsNil)
}

// hugeSelectors returns label selectors whose JSON is about size bytes.
func hugeSelectors(size int) []*metav1.LabelSelector {
	var out []*metav1.LabelSelector
	for i := 0; i*40 < size; i++ {
		out = append(out, &metav1.LabelSelector{MatchLabels: map[string]string{fmt.Sprintf("k%d", i): "some-value-x"}})
	}
	return out
}

// refusedWithStatus waits until obj is refused the way every refusal ends,
// whatever phase made it (OADP NAC): phase BackingOff and Accepted=False;
// it returns the condition's message.
func refusedWithStatus(c *C, obj client.Object, about string) string {
	var msg string
	eventually(c, 20*time.Second, func() (bool, string) {
		c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj), IsNil)
		var phase v1alpha1.NonAdminPhase
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *v1alpha1.NonAdminBackup:
			phase, conds = o.Status.Phase, o.Status.Conditions
		case *v1alpha1.NonAdminRestore:
			phase, conds = o.Status.Phase, o.Status.Conditions
		case *v1alpha1.NonAdminBackupStorageLocation:
			phase, conds = o.Status.Phase, o.Status.Conditions
		case *v1alpha1.NonAdminDownloadRequest:
			phase, conds = o.Status.Phase, o.Status.Conditions
		}
		cond := meta.FindStatusCondition(conds, v1alpha1.ConditionAccepted)
		if cond == nil || cond.Status != metav1.ConditionFalse || phase != v1alpha1.NonAdminPhaseBackingOff {
			return false, fmt.Sprintf("%s: phase %q, Accepted %+v", about, phase, cond)
		}
		msg = cond.Message
		return true, ""
	})
	return msg
}

// adminBSL creates a BackupStorageLocation of the admin in oadp (no NAC
// labels) and returns it.
func adminBSL(c *C, oadp, name, bucket, prefix string) *velerov1.BackupStorageLocation {
	bsl := &velerov1.BackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: name},
		Spec: velerov1.BackupStorageLocationSpec{Provider: "aws",
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: bucket, Prefix: prefix}},
			Config:      map[string]string{"region": "us-east-1"}},
	}
	c.Assert(testClient.Create(context.Background(), bsl), IsNil)
	return bsl
}

// tenantWithCreds creates a tenant namespace holding the Secret "creds".
func tenantWithCreds(c *C) string {
	ns := createNamespace(c, "storage-tenant")
	c.Assert(testClient.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=x\naws_secret_access_key=x-secret\n")}}), IsNil)
	return ns
}

// nabslOn returns a location of ns on bucket/prefix with the Secret "creds".
func nabslOn(ns, name, bucket, prefix string) *v1alpha1.NonAdminBackupStorageLocation {
	l := newNABSL(ns, name, "creds")
	l.Spec.BackupStorageLocationSpec.ObjectStorage = &velerov1.ObjectStorageLocation{Bucket: bucket, Prefix: prefix}
	return l
}

// approveAndAvailable approves nabsl's request, waits for its Velero BSL and
// plays Velero: the BSL turns Available. It returns the BSL.
func (s *ControllerSuite) approveAndAvailable(c *C, nabsl *v1alpha1.NonAdminBackupStorageLocation) *velerov1.BackupStorageLocation {
	ctx := context.Background()
	nacuuid := v1alpha1.DerivedNACUUID(getNABSL(c, nabsl))
	var req *v1alpha1.NonAdminBackupStorageLocationRequest
	eventually(c, 10*time.Second, func() (bool, string) {
		req, _, _ = bslObjects(c, s.oadp, nacuuid)
		return req != nil, "no request yet"
	})
	decide(c, req, v1alpha1.ApprovalApprove)
	var bsl *velerov1.BackupStorageLocation
	eventually(c, 10*time.Second, func() (bool, string) {
		_, bsl, _ = bslObjects(c, s.oadp, nacuuid)
		return bsl != nil, "no Velero BSL yet"
	})
	before := bsl.DeepCopy()
	bsl.Status.Phase = velerov1.BackupStorageLocationPhaseAvailable
	c.Assert(testClient.Patch(ctx, bsl, client.MergeFrom(before)), IsNil)
	return bsl
}

// TestStorageAttacks: no tenant location may overlap another location's
// storage (the admin's or another tenant's), use an admin's bucket, or
// escape its folder with a path trick; each is refused naming the field
// and what it collides with, nothing is created in the OADP namespace, and
// the admin's location is never touched.
func (s *ControllerSuite) TestStorageAttacks(c *C) {
	ctx := context.Background()
	admin := adminBSL(c, s.oadp, "admin-default", "admin-bucket", "")
	defer func() { c.Check(testClient.Delete(ctx, admin), IsNil) }()
	ns := tenantWithCreds(c)

	for i, tc := range []struct {
		about, bucket, prefix, msg string
	}{
		{"the admin's bucket", "admin-bucket", "mine",
			`spec.backupStorageLocationSpec.objectStorage.bucket: bucket "admin-bucket" is used by BackupStorageLocation ` + s.oadp + `/admin-default (admin); a tenant location may use an admin's bucket only when an admin shares it (ValidateBSLSpec args.sharedBuckets)`},
		{"a parent-directory prefix", "own-bucket", "../victim",
			`spec.backupStorageLocationSpec.objectStorage.prefix "../victim" must be a clean relative path: no ".." segment`},
		{"an empty segment", "own-bucket", "a//b",
			`spec.backupStorageLocationSpec.objectStorage.prefix "a//b" must be a clean relative path: no leading, trailing or doubled "/"`},
		{"a dot segment", "own-bucket", "./a",
			`spec.backupStorageLocationSpec.objectStorage.prefix "./a" must be a clean relative path: no "." segment`},
		{"a backslash", "own-bucket", `a\..\b`,
			`spec.backupStorageLocationSpec.objectStorage.prefix "a\\..\\b" must not contain a backslash`},
		{"a bucket with a folder in it", "admin-bucket/x", "",
			`spec.backupStorageLocationSpec.objectStorage.bucket "admin-bucket/x" must be a bucket name.*`},
	} {
		l := nabslOn(ns, fmt.Sprintf("attack-%d", i), tc.bucket, tc.prefix)
		c.Assert(testClient.Create(ctx, l), IsNil, Commentf(tc.about))
		msg := refusedWithStatus(c, l, tc.about)
		c.Check(msg, Matches, regexpQuoteMeta(tc.msg), Commentf(tc.about))
		nothingCreatedFor(c, s.oadp, v1alpha1.DerivedNACUUID(l), tc.about)
	}

	// Two locations of one tenant: the later one inside the earlier one's
	// folder is refused, naming it; the earlier one keeps working.
	first := nabslOn(ns, "first", "own-bucket", "")
	c.Assert(testClient.Create(ctx, first), IsNil)
	bsl := s.approveAndAvailable(c, first)
	c.Check(bsl.Spec.ObjectStorage.Prefix, Equals, ns)
	inside := nabslOn(ns, "inside", "own-bucket", "nested")
	c.Assert(testClient.Create(ctx, inside), IsNil)
	msg := refusedWithStatus(c, inside, "inside another location")
	c.Check(msg, Matches, fmt.Sprintf(`spec\.backupStorageLocationSpec\.objectStorage\.prefix: aws own-bucket prefix %s/nested overlaps NonAdminBackupStorageLocation %s/first .*`, ns, ns))
	nothingCreatedFor(c, s.oadp, v1alpha1.DerivedNACUUID(inside), "inside another location")
	_, still, _ := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(first))
	c.Check(still, NotNil, Commentf("the earlier location keeps its Velero BSL"))

	// An admin location added later on that folder's bucket: within a
	// credential check period (1s here) the tenant location runs again and
	// turns BackingOff (its Velero BSL withdrawn); the admin's is untouched.
	later := adminBSL(c, s.oadp, "admin-later", "own-bucket", "")
	defer func() { c.Check(testClient.Delete(ctx, later), IsNil) }()
	msg = refusedWithStatus(c, first, "an admin location added later")
	c.Check(msg, Matches, `.*bucket "own-bucket" is used by BackupStorageLocation `+s.oadp+`/admin-later \(admin\).*`)
	eventually(c, 10*time.Second, func() (bool, string) {
		_, b, sec := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(first))
		return b == nil && sec == nil, "the overlapping tenant BSL and Secret copy are not withdrawn yet"
	})
	for _, a := range []*velerov1.BackupStorageLocation{admin, later} {
		got := &velerov1.BackupStorageLocation{}
		c.Assert(testClient.Get(ctx, client.ObjectKeyFromObject(a), got), IsNil)
		c.Check(got.Spec, DeepEquals, a.Spec, Commentf("admin location %s touched", a.Name))
	}
}

// regexpQuoteMeta quotes a message for Matches, keeping a trailing ".*".
func regexpQuoteMeta(s string) string {
	if strings.HasSuffix(s, ".*") {
		return regexp.QuoteMeta(strings.TrimSuffix(s, ".*")) + ".*"
	}
	return regexp.QuoteMeta(s)
}

// TestRestoreScopeAttacks: a NonAdminRestore may not restore cluster-scoped
// objects: includeClusterResources true is refused at apply, cluster-scoped
// kinds in includedResources by the controller, with a message naming the
// field; no Velero Restore is made.
func (s *ControllerSuite) TestRestoreScopeAttacks(c *C) {
	ctx := context.Background()
	nab, _ := s.createdBackup(c, "scope")
	ns := nab.Namespace
	err := testClient.Create(ctx, newNAR(ns, "cluster", velerov1.RestoreSpec{BackupName: nab.Name, IncludeClusterResources: ptr(true)}))
	c.Check(err, ErrorMatches, `.*spec\.restoreSpec\.includeClusterResources can not be true.*`)
	for _, tc := range []struct {
		name     string
		included []string
		found    string
	}{
		{"clusterroles", []string{"configmaps", "clusterroles.rbac.authorization.k8s.io"}, "clusterroles.rbac.authorization.k8s.io"},
		{"crds", []string{"customresourcedefinitions"}, "customresourcedefinitions"},
		{"pvs", []string{"pv"}, "pv"},
		{"discovered", []string{"namespaces", "nodes", "ingressclasses.networking.k8s.io"}, "namespaces, nodes, ingressclasses.networking.k8s.io"},
		{"by-discovery", []string{"mutatingwebhookconfigurations.admissionregistration.k8s.io", "runtimeclasses.node.k8s.io"},
			"mutatingwebhookconfigurations.admissionregistration.k8s.io, runtimeclasses.node.k8s.io"},
	} {
		nar := newNAR(ns, tc.name, velerov1.RestoreSpec{BackupName: nab.Name, IncludedResources: tc.included})
		c.Assert(testClient.Create(ctx, nar), IsNil, Commentf(tc.name))
		msg := refusedWithStatus(c, nar, tc.name)
		c.Check(msg, Equals, "spec.restoreSpec.includedResources: cluster-scoped kinds can not be restored by a NonAdminRestore: found "+tc.found)
		nothingCreatedFor(c, s.oadp, v1alpha1.NACUUIDOf(nar.UID), tc.name)
	}
}

// TestLocationNotReadyYetWaits: the README's one-file example applies a
// location and a NAB using it together; the NAB waits (saying why) until
// the location is approved and Available, then backs up into it.
func (s *ControllerSuite) TestLocationNotReadyYetWaits(c *C) {
	ctx := context.Background()
	ns := tenantWithCreds(c)
	l := nabslOn(ns, "fresh", "fresh-bucket", "")
	c.Assert(testClient.Create(ctx, l), IsNil)
	nab := newNAB(ns, "into-fresh", velerov1.BackupSpec{StorageLocation: "fresh"})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNAB(c, nab)
		p := g.Status.Plan
		return p != nil && p.Current == "validate: waiting" &&
			strings.Contains(p.Phases[0].Message, `NonAdminBackupStorageLocation "fresh" to be approved by a cluster admin`), fmt.Sprintf("%+v", p)
	})
	bsl := s.approveAndAvailable(c, l)
	eventually(c, 20*time.Second, func() (bool, string) {
		g := getNAB(c, nab)
		vb := g.Status.VeleroBackup
		return vb != nil && vb.Name != "" && vb.Spec != nil && vb.Spec.StorageLocation == bsl.Name, fmt.Sprintf("%+v %+v", g.Status.Plan, vb)
	})
	c.Check(meta.IsStatusConditionTrue(getNAB(c, nab).Status.Conditions, v1alpha1.ConditionAccepted), Equals, true)
}

// TestApprovalCoversSpec: an approval covers the spec it approved. With the
// default onSpecChange (pending), an approved location whose bucket is
// edited goes back to pending, its Velero BSL and Secret copy withdrawn
// until an admin approves the new spec; with onSpecChange: refuse (OADP's
// behaviour) the edit is refused. Rotating the credential's content needs
// no new approval.
func (s *ControllerSuite) TestApprovalCoversSpec(c *C) {
	ctx := context.Background()
	ns := tenantWithCreds(c)
	l := nabslOn(ns, "approved", "approved-bucket", "")
	c.Assert(testClient.Create(ctx, l), IsNil)
	s.approveAndAvailable(c, l)
	nacuuid := v1alpha1.DerivedNACUUID(getNABSL(c, l))
	eventually(c, 10*time.Second, func() (bool, string) {
		req, _, _ := bslObjects(c, s.oadp, nacuuid)
		return req.Status.ApprovedSpec != nil && req.Status.ApprovedSpec.ObjectStorage.Bucket == "approved-bucket", fmt.Sprintf("%+v", req.Status)
	})

	// Rotation: the copy follows, the approval stays.
	secret := &corev1.Secret{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret), IsNil)
	before := secret.DeepCopy()
	secret.Data["cloud"] = []byte("[default]\naws_access_key_id=rotated\naws_secret_access_key=rotated-secret\n")
	c.Assert(testClient.Patch(ctx, secret, client.MergeFrom(before)), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		_, _, sec := bslObjects(c, s.oadp, nacuuid)
		return sec != nil && string(sec.Data["cloud"]) == "[default]\naws_access_key_id=rotated\naws_secret_access_key=rotated-secret\n", "copy not rotated yet"
	})
	req, bsl, _ := bslObjects(c, s.oadp, nacuuid)
	c.Check(req.Spec.ApprovalDecision, Equals, v1alpha1.ApprovalApprove)
	c.Check(bsl, NotNil)

	// The bucket is edited: back to pending, nothing in force until approved.
	got := getNABSL(c, l)
	beforeL := got.DeepCopy()
	got.Spec.BackupStorageLocationSpec.ObjectStorage.Bucket = "elsewhere"
	c.Assert(testClient.Patch(ctx, got, client.MergeFrom(beforeL)), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		req, bsl, sec := bslObjects(c, s.oadp, nacuuid)
		got = getNABSL(c, l)
		return req.Spec.ApprovalDecision == v1alpha1.ApprovalPending && bsl == nil && sec == nil &&
				got.Status.Phase == v1alpha1.NonAdminPhaseNew && got.Status.Plan.Current == "approval: waiting",
			fmt.Sprintf("decision %s, bsl %v, phase %s, %s", req.Spec.ApprovalDecision, bsl != nil, got.Status.Phase, got.Status.Plan.Current)
	})
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSpecUpdateApproved)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	c.Check(cond.Message, Matches, `spec changed after approval \(objectStorage\.bucket\): waiting for a cluster admin to approve .*`)
	req, _, _ = bslObjects(c, s.oadp, nacuuid)
	c.Check(req.Status.Requested().ObjectStorage.Bucket, Equals, "elsewhere")
	c.Check(req.Status.ApprovedSpec, IsNil)
	// Approved again: the new bucket is in force.
	bsl = s.approveAndAvailable(c, l)
	c.Check(bsl.Spec.ObjectStorage.Bucket, Equals, "elsewhere")
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNABSL(c, l)
		return meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionSpecUpdateApproved), fmt.Sprintf("%+v", got.Status.Conditions)
	})

	// onSpecChange: refuse, for tenants labelled approval=strict.
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackupStorageLocation"))
	c.Assert(err, IsNil)
	bp.Name = "strict-approvals"
	bp.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"approval": "strict"}}
	create := bp.Spec.Actions["create"]
	for i := range create.Phases {
		if create.Phases[i].Func == "RequestApproval" {
			create.Phases[i].Args = map[string]apiextensionsv1.JSON{"onSpecChange": {Raw: []byte(`"refuse"`)}}
		}
	}
	bp.Spec.Actions = map[string]v1alpha1.BlueprintAction{"create": create}
	defer applyBlueprints(c, s.oadp, bp)()
	strict := labelledNamespace(c, map[string]string{"approval": "strict"})
	c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: strict, Name: "creds"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id=x\naws_secret_access_key=x-secret\n")}}), IsNil)
	sl := nabslOn(strict, "strict", "strict-bucket", "")
	c.Assert(testClient.Create(ctx, sl), IsNil)
	s.approveAndAvailable(c, sl)
	got = getNABSL(c, sl)
	c.Check(got.Status.Plan.Blueprint, Equals, "strict-approvals")
	beforeL = got.DeepCopy()
	got.Spec.BackupStorageLocationSpec.ObjectStorage.Prefix = "moved"
	c.Assert(testClient.Patch(ctx, got, client.MergeFrom(beforeL)), IsNil)
	msg := refusedWithStatus(c, sl, "an edit of an approved spec")
	c.Check(msg, Matches, `spec\.backupStorageLocationSpec: changing objectStorage\.prefix of an approved location is not allowed; .*`)
	got = getNABSL(c, sl)
	cond = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSpecUpdateApproved)
	c.Assert(cond, NotNil)
	c.Check(cond.Reason, Equals, "BslSpecUpdateRejected", Commentf("OADP NAC's reason"))
	eventually(c, 10*time.Second, func() (bool, string) {
		req, b, sec := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(got))
		return b == nil && sec == nil && req.Spec.ApprovalDecision == v1alpha1.ApprovalApprove, "the refused location's BSL is not withdrawn yet"
	})
}
