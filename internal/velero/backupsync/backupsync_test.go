package backupsync_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/backupsync"
	"github.com/nacflow/nacflow/phases"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

// SyncSuite: the two ways a pass reads the Velero Backups (one List of
// all, one origin namespace at a time through OriginIndex) judge alike.
// Narrow unit tests on the fake client; the integration suite syncs
// against a real API server and cache (controllers, TestBackupSyncByOrigin).
type SyncSuite struct{}

var _ = Suite(&SyncSuite{})

const oadp = "oadp"

func backup(ns, name, nacuuid string, phase velerov1.BackupPhase, location string) *velerov1.Backup {
	return &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: v1alpha1.NACObjectName(ns, name, nacuuid),
			Labels:      map[string]string{v1alpha1.NabOriginNACUUIDLabel: nacuuid},
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: ns, v1alpha1.NabOriginNameAnnotation: name}},
		Spec:   velerov1.BackupSpec{IncludedNamespaces: []string{ns}, StorageLocation: location},
		Status: velerov1.BackupStatus{Phase: phase},
	}
}

// world is a cluster after a rebuild: Backups of three tenants, some of
// which must not be synced, and what must be there beside them.
func world() []client.Object {
	unlabeled := backup("team-a", "unlabeled", "u-5", velerov1.BackupPhaseCompleted, "default")
	delete(unlabeled.Labels, v1alpha1.NabOriginNACUUIDLabel)
	noOrigin := backup("team-a", "no-origin", "u-6", velerov1.BackupPhaseCompleted, "default")
	delete(noOrigin.Annotations, v1alpha1.NabOriginNamespaceAnnotation)
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "default"},
			Spec: velerov1.BackupStorageLocationSpec{Default: true}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "b-bucket",
			Labels:      map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "bsl-b"},
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: "team-b", v1alpha1.NabslOriginNameAnnotation: "own"}}},
		&v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "own"}},
		// Synced: finished, in the default location or the tenant's own.
		backup("team-a", "nightly", "u-1", velerov1.BackupPhaseCompleted, "default"),
		backup("team-a", "weekly", "u-2", velerov1.BackupPhasePartiallyFailed, "default"),
		backup("team-b", "mine", "u-3", velerov1.BackupPhaseCompleted, "b-bucket"),
		// Not synced: running; its NAB exists (by name, by link);
		// another tenant's location; a namespace that is gone; no NAC label;
		// no origin namespace.
		backup("team-a", "running", "u-4", velerov1.BackupPhaseInProgress, "default"),
		backup("team-a", "kept", "u-7", velerov1.BackupPhaseCompleted, "default"),
		&v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "kept"}},
		backup("team-a", "renamed", "u-8", velerov1.BackupPhaseCompleted, "default"),
		&v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new-name"},
			Status: v1alpha1.NonAdminBackupStatus{VeleroBackup: &v1alpha1.VeleroBackup{NACUUID: "u-8"}}},
		backup("team-a", "stolen", "u-9", velerov1.BackupPhaseCompleted, "b-bucket"),
		backup("gone", "old", "u-10", velerov1.BackupPhaseCompleted, "default"),
		unlabeled, noOrigin,
	}
}

func newClient(c *C, objs []client.Object) client.Client {
	scheme, err := v1alpha1.NewScheme()
	c.Assert(err, IsNil)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.NonAdminBackup{}).
		WithIndex(&velerov1.Backup{}, backupsync.OriginIndex, backupsync.OriginNamespaceOf).Build()
}

// nabs lists every NAB as namespace/name, with the NACUUID it links.
func nabs(c *C, cl client.Client) []string {
	list := &v1alpha1.NonAdminBackupList{}
	c.Assert(cl.List(context.Background(), list), IsNil)
	var out []string
	for _, n := range list.Items {
		link := ""
		if n.Status.VeleroBackup != nil {
			link = n.Status.VeleroBackup.NACUUID
		}
		out = append(out, fmt.Sprintf("%s/%s %s %s", n.Namespace, n.Name, link, n.Labels[v1alpha1.NabSyncedFromNACUUIDLabel]))
	}
	sort.Strings(out)
	return out
}

func (s *SyncSuite) TestByOriginJudgesAsOneList(c *C) {
	want := []string{
		"team-a/kept  ", "team-a/new-name u-8 ",
		"team-a/nightly u-1 u-1", "team-a/weekly u-2 u-2", "team-b/mine u-3 u-3",
	}
	for _, byOrigin := range []bool{false, true} {
		cl := newClient(c, world())
		sync := &backupsync.BackupSync{Client: cl, APIReader: cl, OADPNamespace: oadp, TenantSpec: phases.SyncedBackupSpec, ByOrigin: byOrigin}
		created, err := sync.SyncOnce(context.Background())
		c.Assert(err, IsNil, Commentf("byOrigin %v", byOrigin))
		c.Check(created, Equals, 3, Commentf("byOrigin %v", byOrigin))
		c.Check(nabs(c, cl), DeepEquals, want, Commentf("byOrigin %v", byOrigin))
		// A second pass finds every one synced.
		created, err = sync.SyncOnce(context.Background())
		c.Check(err, IsNil)
		c.Check(created, Equals, 0, Commentf("byOrigin %v", byOrigin))
	}
}

// The index holds only what a pass would sync from: a Backup with the
// NAC label (even empty, as HasLabels matches) and an origin namespace.
func (s *SyncSuite) TestOriginIndex(c *C) {
	b := backup("team-a", "nightly", "u-1", velerov1.BackupPhaseCompleted, "default")
	c.Check(backupsync.OriginNamespaceOf(b), DeepEquals, []string{"team-a"})
	b.Labels[v1alpha1.NabOriginNACUUIDLabel] = ""
	c.Check(backupsync.OriginNamespaceOf(b), DeepEquals, []string{"team-a"})
	delete(b.Labels, v1alpha1.NabOriginNACUUIDLabel)
	c.Check(backupsync.OriginNamespaceOf(b), IsNil)
	b = backup("", "nightly", "u-1", velerov1.BackupPhaseCompleted, "default")
	c.Check(backupsync.OriginNamespaceOf(b), IsNil)
}
