package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/controllers"
	"github.com/nacflow/nacflow/internal/runtime/orphangc"
	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
	"github.com/nacflow/nacflow/internal/velero/backupsync"
	"github.com/nacflow/nacflow/phases"
)

// veleroSyncedBackup creates a finished Velero Backup as Velero's own BSL
// sync would after a rebuild: NAC labels and annotations, no NAB anywhere.
func veleroSyncedBackup(c *C, oadp, ns, name, nacuuid string, phase velerov1.BackupPhase) *velerov1.Backup {
	b := &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: oadp, Name: v1alpha1.NACObjectName(ns, name, nacuuid),
			Labels: map[string]string{"openshift.io/oadp": "True", "app.kubernetes.io/managed-by": "oadp-nac-controller",
				v1alpha1.NabOriginNACUUIDLabel: nacuuid, "velero.io/storage-location": "default"},
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: ns, v1alpha1.NabOriginNameAnnotation: name,
				v1alpha1.NabOriginLabelsAnnotation: `{"team":"blue"}`},
		},
		Spec:   velerov1.BackupSpec{IncludedNamespaces: []string{ns}, StorageLocation: "default", ExcludedResources: []string{"secrets"}},
		Status: velerov1.BackupStatus{Phase: phase},
	}
	c.Assert(testClient.Create(context.Background(), b), IsNil)
	return b
}

// defaultBSL makes sure the OADP namespace has a default location.
func defaultBSL(c *C, oadp string) {
	bsl := &velerov1.BackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: oadp, Name: "default"},
		Spec: velerov1.BackupStorageLocationSpec{Provider: "aws", Default: true,
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "velero"}}},
	}
	if err := testClient.Create(context.Background(), bsl); err != nil && !apierrors.IsAlreadyExists(err) {
		c.Fatal(err)
	}
}

// The pass as cmd/nac runs it: the manager's cache with OriginIndex, one
// origin namespace at a time. It syncs each tenant's finished Backup once,
// in that tenant's namespace, and nothing running or of a namespace that
// is gone.
func (s *ControllerSuite) TestBackupSyncByOrigin(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defaultBSL(c, s.oadp)
	a, b := createNamespace(c, "tenant"), createNamespace(c, "tenant")
	veleroSyncedBackup(c, s.oadp, a, "nightly", "0b0b0b0b-1111-5222-8333-444455550001", velerov1.BackupPhaseCompleted)
	veleroSyncedBackup(c, s.oadp, b, "nightly", "0b0b0b0b-1111-5222-8333-444455550002", velerov1.BackupPhaseCompleted)
	running := veleroSyncedBackup(c, s.oadp, a, "running", "0b0b0b0b-1111-5222-8333-444455550003", velerov1.BackupPhaseInProgress)
	// An unfinished Backup holds a place in Velero's queue: the suite's
	// later tests find the queue as it was.
	defer func() { c.Check(testClient.Delete(context.Background(), running), IsNil) }()
	veleroSyncedBackup(c, s.oadp, "gone-"+a, "old", "0b0b0b0b-1111-5222-8333-444455550004", velerov1.BackupPhaseCompleted)

	opts := controllers.CacheOptions(s.oadp, pagedlist.DefaultPageSize)
	opts.Scheme = testScheme
	informers, err := cache.New(testCfg, opts)
	c.Assert(err, IsNil)
	c.Assert(backupsync.IndexOrigin(ctx, informers), IsNil)
	go func() { _ = informers.Start(ctx) }()
	c.Assert(informers.WaitForCacheSync(ctx), Equals, true)
	cached, err := client.New(testCfg, client.Options{Scheme: testScheme, Cache: &client.CacheOptions{Reader: informers}})
	c.Assert(err, IsNil)
	sync := &backupsync.BackupSync{Client: cached, APIReader: testClient, OADPNamespace: s.oadp, TenantSpec: phases.SyncedBackupSpec, ByOrigin: true}

	names := func(ns string) []string {
		list := &v1alpha1.NonAdminBackupList{}
		c.Assert(testClient.List(ctx, list, client.InNamespace(ns)), IsNil)
		var out []string
		for _, n := range list.Items {
			out = append(out, n.Name+" "+n.Labels[v1alpha1.NabSyncedFromNACUUIDLabel])
		}
		return out
	}
	// The cache shows the Backups a moment after their creation.
	eventually(c, 10*time.Second, func() (bool, string) {
		_, err := sync.SyncOnce(ctx)
		return err == nil && len(names(a)) == 1 && len(names(b)) == 1, fmt.Sprintf("%v: %v %v", err, names(a), names(b))
	})
	c.Check(names(a), DeepEquals, []string{"nightly 0b0b0b0b-1111-5222-8333-444455550001"})
	c.Check(names(b), DeepEquals, []string{"nightly 0b0b0b0b-1111-5222-8333-444455550002"})
	// Once the cache shows the NABs, a pass makes nothing more.
	eventually(c, 10*time.Second, func() (bool, string) {
		list := &v1alpha1.NonAdminBackupList{}
		c.Assert(cached.List(ctx, list, client.InNamespace(a)), IsNil)
		return len(list.Items) == 1, fmt.Sprint(len(list.Items))
	})
	_, err = sync.SyncOnce(ctx)
	c.Check(err, IsNil)
	c.Check(names(a), HasLen, 1)
	c.Check(names(b), HasLen, 1)
}

func (s *ControllerSuite) TestBackupSyncAfterRebuild(c *C) {
	ctx := context.Background()
	defaultBSL(c, s.oadp)
	ns := createNamespace(c, "tenant")
	b := veleroSyncedBackup(c, s.oadp, ns, "nightly", "0a0a0a0a-1111-5222-8333-444455556666", velerov1.BackupPhaseCompleted)
	// Not synced: unfinished, or in a namespace that does not exist.
	veleroSyncedBackup(c, s.oadp, ns, "running", "0a0a0a0a-1111-5222-8333-444455556667", velerov1.BackupPhaseInProgress)
	veleroSyncedBackup(c, s.oadp, "gone-namespace", "old", "0a0a0a0a-1111-5222-8333-444455556668", velerov1.BackupPhaseCompleted)

	sync := &backupsync.BackupSync{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp, TenantSpec: phases.SyncedBackupSpec}
	created, err := sync.SyncOnce(ctx)
	c.Assert(err, IsNil)
	c.Check(created, Equals, 1)

	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}}
	var got *v1alpha1.NonAdminBackup
	eventually(c, 10*time.Second, func() (bool, string) {
		got = getNAB(c, nab)
		return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanComplete, fmt.Sprintf("%+v", got.Status.Plan)
	})
	c.Check(got.Labels, DeepEquals, map[string]string{"team": "blue", v1alpha1.NabSyncedFromNACUUIDLabel: "0a0a0a0a-1111-5222-8333-444455556666"})
	c.Check(got.Spec.BackupSpec.StorageLocation, Equals, "", Commentf("the default location maps back to none"))
	c.Check(got.Status.Plan.Action, Equals, "adopt")
	c.Check(got.Status.SpecHash, Equals, v1alpha1.SpecHash(got.Spec.BackupSpec), Commentf("a later edit of the synced spec is reported"))
	var phases []string
	for _, p := range got.Status.Plan.Phases {
		phases = append(phases, p.Func)
	}
	c.Check(phases, DeepEquals, []string{"AdoptVeleroBackup", "SyncStatus", "VerifyBackupContents", "TestRestore"},
		Commentf("a plan that creates nothing but the verification's requests: a synced backup is verified as nacflow first sees it"))
	c.Check(got.Status.Plan.Phase("restoreTest").State, Equals, v1alpha1.PhaseComplete)
	c.Check(got.Status.VeleroBackup.Name, Equals, b.Name)
	c.Check(got.Status.VeleroBackup.NACUUID, Equals, "0a0a0a0a-1111-5222-8333-444455556666")
	c.Check(got.Status.VeleroBackup.Status.Phase, Equals, velerov1.BackupPhaseCompleted)
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	c.Check(veleroBackupsOf(c, s.oadp, "0a0a0a0a-1111-5222-8333-444455556666"), HasLen, 1)

	// A second pass finds the NAB linked: nothing more.
	created, err = sync.SyncOnce(ctx)
	c.Assert(err, IsNil)
	c.Check(created, Equals, 0)

	// A tenant who forges the sync label to claim this backup is refused,
	// and deleting its NAB leaves the backup alone.
	thiefNS := createNamespace(c, "tenant")
	thief := newNAB(thiefNS, "mine-now", velerov1.BackupSpec{})
	thief.Labels = map[string]string{v1alpha1.NabSyncedFromNACUUIDLabel: "0a0a0a0a-1111-5222-8333-444455556666"}
	c.Assert(testClient.Create(ctx, thief), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		g := getNAB(c, thief)
		return g.Status.Plan != nil && g.Status.Plan.State == v1alpha1.PlanFailed, fmt.Sprintf("%+v", g.Status.Plan)
	})
	c.Check(getNAB(c, thief).Status.Plan.Phase("adoptBackup").Message, Equals,
		fmt.Sprintf("label %s: refused: the Velero Backup with NACUUID 0a0a0a0a-1111-5222-8333-444455556666 was not made for namespace %s", v1alpha1.NabSyncedFromNACUUIDLabel, thiefNS))
	c.Assert(testClient.Delete(ctx, thief), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(thief), &v1alpha1.NonAdminBackup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
	})
	c.Check(veleroBackupsOf(c, s.oadp, "0a0a0a0a-1111-5222-8333-444455556666"), HasLen, 1)
}

// A Velero Backup as Velero stores it carries fields the tenant never wrote:
// volumeSnapshotLocations (whenever a VolumeSnapshotLocation exists),
// excludedNamespaces (namespaces labelled velero.io/exclude-from-backup) and
// the controller's own exclusions. Sync turns each into a NAB the CRD
// accepts and records what it dropped; a backup the CRD refuses even so is
// skipped, and the nine after it are still synced.
func (s *ControllerSuite) TestBackupSyncVeleroWrittenSpecs(c *C) {
	ctx := context.Background()
	defaultBSL(c, s.oadp)
	ns := createNamespace(c, "tenant")
	mutate := func(b *velerov1.Backup, f func(*velerov1.BackupSpec)) {
		before := b.DeepCopy()
		f(&b.Spec)
		c.Assert(testClient.Patch(ctx, b, client.MergeFrom(before)), IsNil)
	}
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("nightly-%d", i)
		b := veleroSyncedBackup(c, s.oadp, ns, name, fmt.Sprintf("0b0b0b0b-1111-5222-8333-4444555566%02d", i), velerov1.BackupPhaseCompleted)
		switch i {
		case 3:
			// Refused by the NAB CRD whatever the sync does: it is not
			// Velero's addition, so it is not dropped. Removed at the end:
			// the suite's other sync tests share the OADP namespace.
			mutate(b, func(spec *velerov1.BackupSpec) { spec.IncludeClusterResources = ptr(true) })
			defer func() { c.Check(testClient.Delete(ctx, b), IsNil) }()
			continue
		case 5:
			mutate(b, func(spec *velerov1.BackupSpec) {
				spec.IncludedNamespaceScopedResources = []string{"configmaps"}
				spec.ExcludedNamespaceScopedResources = append([]string{"secrets"}, phases.NACResources...)
				spec.ExcludedClusterScopedResources = phases.ClusterExcludedResources
				spec.ExcludedResources = nil
			})
		default:
			mutate(b, func(spec *velerov1.BackupSpec) {
				spec.VolumeSnapshotLocations = []string{"default"}
				spec.ExcludedNamespaces = []string{"velero-excluded"}
				spec.ExcludedResources = append(spec.ExcludedResources, phases.NACResources...)
				spec.ExcludedResources = append(spec.ExcludedResources, phases.ClusterExcludedResources...)
			})
		}
		names = append(names, name)
	}

	sync := &backupsync.BackupSync{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp, TenantSpec: phases.SyncedBackupSpec}
	created, err := sync.SyncOnce(ctx)
	c.Check(created, Equals, 9)
	c.Assert(err, NotNil)
	c.Check(err, ErrorMatches, `(?s)1 of \d+ Velero Backups could not be synced: creating NonAdminBackup `+ns+`/nightly-3 from Velero Backup .*includeClusterResources can not be true.*`)

	nabs := &v1alpha1.NonAdminBackupList{}
	c.Assert(testClient.List(ctx, nabs, client.InNamespace(ns)), IsNil)
	got := map[string]v1alpha1.NonAdminBackup{}
	for _, n := range nabs.Items {
		got[n.Name] = n
	}
	c.Assert(got, HasLen, 9)
	for _, name := range names {
		n, ok := got[name]
		c.Assert(ok, Equals, true, Commentf("%s not synced", name))
		spec := n.Spec.BackupSpec
		c.Check(spec.VolumeSnapshotLocations, IsNil, Commentf(name))
		c.Check(spec.ExcludedNamespaces, IsNil, Commentf(name))
		c.Check(spec.IncludedNamespaces, DeepEquals, []string{ns}, Commentf(name))
		if name == "nightly-5" {
			c.Check(spec.IncludedNamespaceScopedResources, DeepEquals, []string{"configmaps"})
			c.Check(spec.ExcludedNamespaceScopedResources, DeepEquals, []string{"secrets"})
			c.Check(spec.ExcludedClusterScopedResources, IsNil)
			c.Check(spec.ExcludedResources, IsNil)
			c.Check(n.Annotations[v1alpha1.NabSyncedDroppedFieldsAnnotation], Equals,
				`{"excludedClusterScopedResources":["securitycontextconstraints","clusterroles","clusterrolebindings","priorityclasses","customresourcedefinitions","virtualmachineclusterinstancetypes","virtualmachineclusterpreferences"],`+
					`"excludedNamespaceScopedResources":["nonadminbackups.oadp.openshift.io","nonadminrestores.oadp.openshift.io","nonadminbackupstoragelocations.oadp.openshift.io"]}`)
			continue
		}
		c.Check(spec.ExcludedResources, DeepEquals, []string{"secrets"}, Commentf("the tenant's own exclusion stays: %s", name))
		var dropped map[string][]string
		c.Assert(json.Unmarshal([]byte(n.Annotations[v1alpha1.NabSyncedDroppedFieldsAnnotation]), &dropped), IsNil, Commentf(name))
		c.Check(dropped["volumeSnapshotLocations"], DeepEquals, []string{"default"}, Commentf(name))
		c.Check(dropped["excludedNamespaces"], DeepEquals, []string{"velero-excluded"}, Commentf(name))
		c.Check(dropped["excludedResources"], HasLen, len(phases.NACResources)+len(phases.ClusterExcludedResources), Commentf(name))
	}
	c.Check(got["nightly-0"].Status.VeleroBackup, NotNil, Commentf("the link to the Velero Backup is recorded"))

	// The next pass retries the broken one and reports it again; the
	// others are synced already.
	created, err = sync.SyncOnce(ctx)
	c.Check(created, Equals, 0)
	c.Check(err, ErrorMatches, `(?s)1 of \d+ Velero Backups could not be synced: .*nightly-3.*`)
}

// orphanMeta returns labels and annotations of an object made for a NAC
// object that does not exist.
func orphanMeta(label, nsAnn, nameAnn, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		GenerateName: "orphan-",
		Labels:       map[string]string{"openshift.io/oadp": "True", label: "feedface-0000-5000-8000-000000000000"},
		Annotations:  map[string]string{nsAnn: ns, nameAnn: "does-not-exist"},
	}
}

func (s *ControllerSuite) TestGarbageCollection(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "tenant")
	withNS := func(m metav1.ObjectMeta) metav1.ObjectMeta { m.Namespace = s.oadp; return m }
	nabMeta := withNS(orphanMeta(v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NabOriginNamespaceAnnotation, v1alpha1.NabOriginNameAnnotation, ns))
	narMeta := withNS(orphanMeta(v1alpha1.NarOriginNACUUIDLabel, v1alpha1.NarOriginNamespaceAnnotation, v1alpha1.NarOriginNameAnnotation, ns))
	bslMeta := withNS(orphanMeta(v1alpha1.NabslOriginNACUUIDLabel, v1alpha1.NabslOriginNamespaceAnnotation, v1alpha1.NabslOriginNameAnnotation, ns))
	goneNSMeta := withNS(orphanMeta(v1alpha1.NabOriginNACUUIDLabel, v1alpha1.NabOriginNamespaceAnnotation, v1alpha1.NabOriginNameAnnotation, "no-such-namespace"))
	orphans := []client.Object{
		&velerov1.Backup{ObjectMeta: nabMeta, Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseInProgress}},
		&velerov1.Backup{ObjectMeta: goneNSMeta, Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted}},
		&velerov1.DeleteBackupRequest{ObjectMeta: nabMeta, Spec: velerov1.DeleteBackupRequestSpec{BackupName: "x"}},
		&velerov1.Restore{ObjectMeta: narMeta, Spec: velerov1.RestoreSpec{BackupName: "x"}},
		&velerov1.BackupStorageLocation{ObjectMeta: bslMeta, Spec: velerov1.BackupStorageLocationSpec{Provider: "aws",
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "b"}}}},
		&corev1.Secret{ObjectMeta: bslMeta},
		&v1alpha1.NonAdminBackupStorageLocationRequest{ObjectMeta: bslMeta},
	}
	// Kept: a finished Backup whose namespace exists (backup sync's to
	// bring back), and objects whose NAC object exists.
	syncable := &velerov1.Backup{ObjectMeta: nabMeta, Status: velerov1.BackupStatus{Phase: velerov1.BackupPhaseCompleted}}
	live, liveBackup := s.createdBackup(c, "alive")
	for _, o := range append(append([]client.Object{}, orphans...), syncable) {
		c.Assert(testClient.Create(ctx, o), IsNil)
	}

	gc := &orphangc.GarbageCollector{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp}
	deleted, err := gc.CollectOnce(ctx)
	c.Assert(err, IsNil)
	for kind, min := range map[string]int{"Backup": 2, "DeleteBackupRequest": 1, "Restore": 1, "BackupStorageLocation": 1, "Secret": 1, "NonAdminBackupStorageLocationRequest": 1} {
		c.Check(deleted[kind] >= min, Equals, true, Commentf("%s: %v", kind, deleted))
	}
	for _, o := range orphans {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		c.Check(apierrors.IsNotFound(err), Equals, true, Commentf("%T %s: %v", o, o.GetName(), err))
	}
	c.Check(testClient.Get(ctx, client.ObjectKeyFromObject(syncable), &velerov1.Backup{}), IsNil)
	c.Check(testClient.Get(ctx, client.ObjectKeyFromObject(liveBackup), &velerov1.Backup{}), IsNil)
	c.Check(testClient.Get(ctx, client.ObjectKeyFromObject(live), &v1alpha1.NonAdminBackup{}), IsNil)
}

// A Velero Backup synced from a bucket carries whatever was written there:
// a tenant's own location is a bucket the tenant writes. Origin labels that
// are JSON null (once a panic that stopped the manager for every tenant),
// not an object, or not labels never stop the pass: the NAB is made with
// the labels the API server accepts.
func (s *ControllerSuite) TestBackupSyncHostileOriginLabels(c *C) {
	ctx := context.Background()
	defaultBSL(c, s.oadp)
	ns := createNamespace(c, "tenant")
	want := map[string]map[string]string{
		"null":   {},
		"list":   {},
		"number": {},
		"mixed":  {"ok": "yes", "example.com/team": "blue"},
	}
	for name, raw := range map[string]string{
		"null":   `null`,
		"list":   `["a","b"]`,
		"number": `7`,
		"mixed":  `{"ok":"yes","example.com/team":"blue","bad key!":"x","long":"` + strings.Repeat("v", 64) + `","/":"","a":"b c"}`,
	} {
		b := veleroSyncedBackup(c, s.oadp, ns, name, NACUUIDFor(name), velerov1.BackupPhaseCompleted)
		before := b.DeepCopy()
		b.Annotations[v1alpha1.NabOriginLabelsAnnotation] = raw
		c.Assert(testClient.Patch(ctx, b, client.MergeFrom(before)), IsNil)
		// The suite's other sync tests share the OADP namespace.
		defer func() { c.Check(testClient.Delete(ctx, b), IsNil) }()
	}
	sync := &backupsync.BackupSync{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp, TenantSpec: phases.SyncedBackupSpec}
	created, err := sync.SyncOnce(ctx)
	c.Assert(err, IsNil)
	c.Check(created, Equals, len(want))
	for name, labels := range want {
		got := getNAB(c, &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		labels[v1alpha1.NabSyncedFromNACUUIDLabel] = NACUUIDFor(name)
		c.Check(got.Labels, DeepEquals, labels, Commentf(name))
	}
}

// NACUUIDFor returns a fixed NACUUID-shaped string for a test backup name.
func NACUUIDFor(name string) string {
	return fmt.Sprintf("0c0c0c0c-1111-5222-8333-%012x", []byte(name + "\x00\x00\x00\x00\x00\x00")[:6])
}

// A tenant's own bucket may hold a backup whose metadata carries another
// tenant's NACUUID (the tenant wrote velero-backup.json itself). Velero
// syncs it into the OADP namespace next to the victim's real Backup, and
// backup sync makes a NonAdminBackup of it in the tenant's namespace. That
// NAB's deleteBackup and plain deletion touch only what was made for the
// tenant's namespace: the victim's Velero Backup stays, and no
// DeleteBackupRequest ever names it.
func (s *ControllerSuite) TestPlantedNACUUIDFromATenantBucket(c *C) {
	ctx := context.Background()
	defaultBSL(c, s.oadp)
	victimNAB, victimBackup := s.createdBackup(c, "theirs")
	victimUUID := victimBackup.Labels[v1alpha1.NabOriginNACUUIDLabel]
	c.Assert(victimUUID, Not(Equals), "")

	attacker := createNamespace(c, "tenant")
	c.Assert(testClient.Create(ctx, newNABSL(attacker, "own", "creds")), IsNil)
	loc := &velerov1.BackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: "planted-" + attacker,
			Labels:      map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "0d0d0d0d-1111-5222-8333-444455556666"},
			Annotations: map[string]string{v1alpha1.NabslOriginNamespaceAnnotation: attacker, v1alpha1.NabslOriginNameAnnotation: "own"}},
		Spec: velerov1.BackupStorageLocationSpec{Provider: "aws",
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "tenants", Prefix: attacker}}},
	}
	c.Assert(testClient.Create(ctx, loc), IsNil)
	defer func() { c.Check(client.IgnoreNotFound(testClient.Delete(ctx, loc)), IsNil) }()
	planted := veleroSyncedBackup(c, s.oadp, attacker, "mine", victimUUID, velerov1.BackupPhaseCompleted)
	before := planted.DeepCopy()
	planted.Spec.StorageLocation = loc.Name
	planted.Labels["velero.io/storage-location"] = loc.Name
	c.Assert(testClient.Patch(ctx, planted, client.MergeFrom(before)), IsNil)
	defer func() { c.Check(client.IgnoreNotFound(testClient.Delete(ctx, planted)), IsNil) }()

	sync := &backupsync.BackupSync{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp, TenantSpec: phases.SyncedBackupSpec}
	_, _ = sync.SyncOnce(ctx) // other tests' leftovers may fail to sync; this one must not
	mine := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "mine"}}
	eventually(c, 15*time.Second, func() (bool, string) {
		g := getNAB(c, mine)
		return g.Status.Plan != nil && (g.Status.Plan.State == v1alpha1.PlanComplete || g.Status.Plan.State == v1alpha1.PlanFailed), fmt.Sprintf("%+v", g.Status.Plan)
	})
	c.Check(getNAB(c, mine).Labels[v1alpha1.NabSyncedFromNACUUIDLabel], Equals, victimUUID)

	// A plain deletion (finalize) removes what was made for the tenant's
	// namespace only.
	c.Assert(testClient.Delete(ctx, getNAB(c, mine)), IsNil)
	gone(c, "the tenant's NAB", mine)
	exists(c, "the victim's objects after finalize", victimBackup, victimNAB)

	// deleteBackup on a second planted backup: the DeleteBackupRequest it
	// makes names the planted backup, never the victim's.
	again := veleroSyncedBackup(c, s.oadp, attacker, "mine-again", victimUUID, velerov1.BackupPhaseCompleted)
	before = again.DeepCopy()
	again.Spec.StorageLocation = loc.Name
	again.Labels["velero.io/storage-location"] = loc.Name
	c.Assert(testClient.Patch(ctx, again, client.MergeFrom(before)), IsNil)
	defer func() { c.Check(client.IgnoreNotFound(testClient.Delete(ctx, again)), IsNil) }()
	_, _ = sync.SyncOnce(ctx)
	mine = &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "mine-again"}}
	eventually(c, 15*time.Second, func() (bool, string) {
		g := getNAB(c, mine)
		return g.Status.Plan != nil && (g.Status.Plan.State == v1alpha1.PlanComplete || g.Status.Plan.State == v1alpha1.PlanFailed), fmt.Sprintf("%+v", g.Status.Plan)
	})
	g := getNAB(c, mine)
	patched := g.DeepCopy()
	patched.Spec.DeleteBackup = true
	c.Assert(testClient.Patch(ctx, patched, client.MergeFrom(g)), IsNil)
	eventually(c, 15*time.Second, func() (bool, string) {
		g := getNAB(c, mine)
		return g.Status.Plan != nil && g.Status.Plan.Action == "delete" && g.Status.Plan.Current != "", fmt.Sprintf("%+v", g.Status.Plan)
	})
	time.Sleep(time.Second)
	dbrs := &velerov1.DeleteBackupRequestList{}
	c.Assert(testClient.List(ctx, dbrs, client.InNamespace(s.oadp)), IsNil)
	for _, d := range dbrs.Items {
		c.Check(d.Spec.BackupName, Not(Equals), victimBackup.Name, Commentf("DeleteBackupRequest %s", d.Name))
	}
	c.Logf("the tenant's delete action: %s", getNAB(c, mine).Status.Plan.Current)
	exists(c, "the victim's objects", victimBackup, victimNAB)
	v := getNAB(c, victimNAB)
	c.Check(v.Status.VeleroBackup.Name, Equals, victimBackup.Name)
	c.Check(v.Status.Plan.State, Equals, v1alpha1.PlanComplete)
}

// TestGCStaleSandboxes: the collector deletes a restore test's sandbox
// whose NonAdminBackup is gone, once Velero has finished its Restore (the
// Restore first); it keeps one whose NonAdminBackup still runs its plan,
// one whose Restore Velero still runs, and a namespace that carries the
// label but is not named as a sandbox of its origin.
func (s *ControllerSuite) TestGCStaleSandboxes(c *C) {
	ctx := context.Background()
	gone, running, busy := createNamespace(c, "sbx-gone"), createNamespace(c, "sbx-running"), createNamespace(c, "sbx-busy")
	sandbox := func(name, origin, nab, id string) *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.RestoreTestLabel: id},
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: origin, v1alpha1.NabOriginNameAnnotation: nab}}}
		c.Assert(testClient.Create(ctx, ns), IsNil)
		return ns
	}
	restore := func(origin, id string, phase velerov1.RestorePhase) *velerov1.Restore {
		r := &velerov1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, GenerateName: "rt-",
			Labels:      map[string]string{v1alpha1.RestoreTestLabel: id, v1alpha1.NabOriginNACUUIDLabel: id},
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: origin}},
			Status: velerov1.RestoreStatus{Phase: phase}} // Velero's CRD has no status subresource
		c.Assert(testClient.Create(ctx, r), IsNil)
		return r
	}
	defer func() {
		// Other suites' restore tests count live sandboxes against their cap.
		for _, name := range []string{v1alpha1.RestoreTestSandbox(running), gone + "-lookalike", v1alpha1.RestoreTestSandbox(busy), v1alpha1.RestoreTestSandbox(gone)} {
			_ = testClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	}()
	goneSandbox := sandbox(v1alpha1.RestoreTestSandbox(gone), gone, "deleted-nab", "id-gone")
	goneRestore := restore(gone, "id-gone", velerov1.RestorePhaseCompleted)
	busySandbox := sandbox(v1alpha1.RestoreTestSandbox(busy), busy, "deleted-nab", "id-busy")
	busyRestore := restore(busy, "id-busy", velerov1.RestorePhaseInProgress)
	misnamed := sandbox(gone+"-lookalike", gone, "deleted-nab", "id-x")
	runningSandbox := sandbox(v1alpha1.RestoreTestSandbox(running), running, "nab", "id-running")
	// The suite's controller runs this NAB's plan: it waits for a Velero
	// Backup nobody completes.
	defaultBSL(c, s.oadp)
	nab := newNAB(running, "nab", velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, nab), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		return got.Status.Plan != nil && got.Status.Plan.State == v1alpha1.PlanRunning, fmt.Sprintf("plan %+v", got.Status.Plan)
	})

	terminating := func(obj client.Object) bool {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err) || err == nil && !obj.GetDeletionTimestamp().IsZero()
	}
	young := &orphangc.GarbageCollector{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp}
	_, err := young.CollectOnce(ctx)
	c.Assert(err, IsNil)
	c.Check(terminating(goneSandbox), Equals, false, Commentf("a sandbox younger than 10 minutes is not judged"))

	gc := &orphangc.GarbageCollector{Client: testClient, APIReader: testClient, OADPNamespace: s.oadp, SandboxAge: time.Nanosecond}
	deleted, err := gc.CollectOnce(ctx)
	c.Assert(err, IsNil)
	c.Check(deleted["Namespace"] >= 1, Equals, true, Commentf("%v", deleted))
	c.Check(terminating(goneSandbox), Equals, true, Commentf("its NonAdminBackup is gone"))
	c.Check(terminating(goneRestore), Equals, true, Commentf("its Restore goes first"))
	c.Check(terminating(busySandbox), Equals, false, Commentf("Velero still restores into it"))
	c.Check(terminating(busyRestore), Equals, false)
	c.Check(terminating(misnamed), Equals, false, Commentf("not named as a sandbox of its origin"))
	c.Check(terminating(runningSandbox), Equals, false, Commentf("its NonAdminBackup runs its plan"))

	busyRestore.Status.Phase = velerov1.RestorePhasePartiallyFailed
	c.Assert(testClient.Update(ctx, busyRestore), IsNil)
	_, err = gc.CollectOnce(ctx)
	c.Assert(err, IsNil)
	c.Check(terminating(busySandbox), Equals, true, Commentf("Velero has finished"))
	c.Check(terminating(busyRestore), Equals, true)
	c.Check(terminating(runningSandbox), Equals, false)
}
