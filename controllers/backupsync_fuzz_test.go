package controllers_test

import (
	"context"
	"encoding/json"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/backupsync"
	"github.com/nacflow/nacflow/phases"
)

// FuzzBackupSync: a Velero Backup that Velero synced from a tenant's own
// bucket carries whatever the tenant wrote there — labels, annotations
// (the origin labels are JSON), spec and status. Backup sync reads it and
// never panics; a NonAdminBackup it makes is in the namespace of the
// location the Backup lives in, only there, and carries the sync label of
// the Backup's NACUUID; a Backup of a tenant location naming another
// namespace makes nothing. (Narrow unit test on the fake client: the
// integration suite covers sync against a real API server.)
func FuzzBackupSync(f *testing.F) {
	f.Add("team", "nab", "uuid-1", `{"app":"x"}`, `{"includedNamespaces":["team"]}`, `{"phase":"Completed"}`)
	f.Add("victim", "nab", "uuid-2", `not json`, `{"includedNamespaces":["victim"],"excludedNamespaces":["a"]}`, `{"phase":"Completed"}`)
	f.Add("team", "", "", `{"openshift.io/oadp-nab-synced-from-nacuuid":"other"}`, `{}`, `{"phase":"Failed","validationErrors":["x"]}`)
	f.Add("team", "n", "u", `null`, `{"hooks":{"resources":[{"name":"h"}]},"storageLocation":"elsewhere"}`, `{"phase":"PartiallyFailed"}`)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, velerov1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, originNS, originName, nacuuid, originLabels, specJSON, statusJSON string) {
		b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: "synced",
			Labels: map[string]string{v1alpha1.NabOriginNACUUIDLabel: nacuuid},
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: originNS, v1alpha1.NabOriginNameAnnotation: originName,
				v1alpha1.NabOriginLabelsAnnotation: originLabels}}}
		if json.Unmarshal([]byte(specJSON), &b.Spec) != nil || json.Unmarshal([]byte(statusJSON), &b.Status) != nil ||
			len(validation.IsValidLabelValue(nacuuid)) > 0 {
			return // the API server holds only valid label values
		}
		b.Spec.StorageLocation = "tenant-bsl"
		tenantBSL := &velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: "tenant-bsl",
			Labels:      map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "bsl-uuid"},
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: "team", v1alpha1.NabslOriginNameAnnotation: "own"}}}
		objs := []client.Object{b, tenantBSL,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "victim"}},
			&v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "own"}}}
		// Both ways a pass reads the Backups: one List, and one origin
		// namespace at a time through the index (cmd/nac's).
		for _, byOrigin := range []bool{false, true} {
			checkSynced(t, scheme, objs, byOrigin, nacuuid)
		}
	})
}

// checkSynced runs one pass over copies of objs and checks what it made.
func checkSynced(t *testing.T, scheme *runtime.Scheme, objs []client.Object, byOrigin bool, nacuuid string) {
	copies := make([]client.Object, len(objs))
	for i := range objs {
		copies[i] = objs[i].DeepCopyObject().(client.Object)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(copies...).
		WithStatusSubresource(&v1alpha1.NonAdminBackup{}).
		WithIndex(&velerov1.Backup{}, backupsync.OriginIndex, backupsync.OriginNamespaceOf).Build()
	s := &backupsync.BackupSync{Client: cl, APIReader: cl, OADPNamespace: "oadp", TenantSpec: phases.SyncedBackupSpec, ByOrigin: byOrigin}
	created, _ := s.SyncOnce(context.Background())
	nabs := &v1alpha1.NonAdminBackupList{}
	if err := cl.List(context.Background(), nabs); err != nil {
		t.Fatal(err)
	}
	if created != len(nabs.Items) {
		t.Fatalf("byOrigin %v: reported %d NABs created, %d exist", byOrigin, created, len(nabs.Items))
	}
	for _, n := range nabs.Items {
		if n.Namespace != "team" {
			t.Fatalf("byOrigin %v: a Backup of team's location made a NonAdminBackup in %q", byOrigin, n.Namespace)
		}
		if n.Labels[v1alpha1.NabSyncedFromNACUUIDLabel] != nacuuid || n.Spec.BackupSpec == nil || n.Spec.BackupSpec.StorageLocation != "own" {
			t.Fatalf("synced NonAdminBackup without its link: labels %v, spec %+v", n.Labels, n.Spec.BackupSpec)
		}
		for _, ns := range n.Spec.BackupSpec.IncludedNamespaces {
			if ns != "team" {
				t.Fatalf("synced NonAdminBackup asks for namespace %q", ns)
			}
		}
		if len(n.Spec.BackupSpec.ExcludedNamespaces) > 0 || len(n.Spec.BackupSpec.VolumeSnapshotLocations) > 0 {
			t.Fatalf("synced NonAdminBackup keeps fields a tenant may not set: %+v", n.Spec.BackupSpec)
		}
	}
}
