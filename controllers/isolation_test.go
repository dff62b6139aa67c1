package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/controllers"
)

// nothingCreatedFor checks that the OADP namespace holds no object labelled
// with nacuuid under any NAC origin label.
func nothingCreatedFor(c *C, oadp, nacuuid, about string) {
	for _, label := range []string{v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NabslOriginNACUUIDLabel} {
		for _, l := range []client.ObjectList{&velerov1.BackupList{}, &velerov1.RestoreList{}, &velerov1.BackupStorageLocationList{}, &corev1.SecretList{}} {
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
		nothingCreatedFor(c, s.oadp, controllers.NACUUID(nab.UID), tc.about)
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
		{"a namespace mapping", "mapping", velerov1.RestoreSpec{BackupName: "x", NamespaceMapping: map[string]string{victim.Namespace: ns}}, "namespaceMapping is restricted"},
		{"a resource modifier", "modifier", velerov1.RestoreSpec{BackupName: "x",
			ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "admin-modifiers"}}, "resourceModifier is restricted"},
	} {
		nar := newNAR(ns, tc.name, tc.spec)
		c.Assert(testClient.Create(ctx, nar), IsNil, Commentf(tc.about))
		msg := refusedByController(c, nar)
		c.Check(strings.Contains(msg, tc.msg), Equals, true, Commentf("%s: %q", tc.about, msg))
		nothingCreatedFor(c, s.oadp, controllers.NACUUID(nar.UID), tc.about)
	}

	// A storage location whose credential is another tenant's Secret (a
	// Secret of that name exists only in the victim's namespace).
	c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: victim.Namespace, Name: "victim-creds"},
		Data: map[string][]byte{"cloud": []byte("secret")}}), IsNil)
	steal := newNABSL(ns, "steal", "victim-creds")
	c.Assert(testClient.Create(ctx, steal), IsNil)
	msg := refusedByController(c, steal)
	c.Check(msg, Matches, `spec.backupStorageLocationSpec.credential: Secret "victim-creds" not found in namespace .*`)
	nothingCreatedFor(c, s.oadp, controllers.NACUUID(steal.UID), "another tenant's Secret")

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
