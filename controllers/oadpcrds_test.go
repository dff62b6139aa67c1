package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmware-tanzu/velero/config/crd/v1/crds"
	v2alpha1crds "github.com/vmware-tanzu/velero/config/crd/v2alpha1/crds"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/controllers"
	"github.com/nacflow/nacflow/dpa"
	"github.com/nacflow/nacflow/engine"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
	"github.com/nacflow/nacflow/internal/runtime/capabilities"
	"github.com/nacflow/nacflow/internal/runtime/events"
	"github.com/nacflow/nacflow/internal/runtime/orphangc"
	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
	"github.com/nacflow/nacflow/internal/runtime/planstore"
	"github.com/nacflow/nacflow/internal/runtime/restmapper"
	"github.com/nacflow/nacflow/internal/velero/backupsync"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
	"github.com/nacflow/nacflow/phases"
)

// OADPCRDSuite runs nacflow as the OADP operator runs its non-admin
// controller: on a control plane of its own holding OADP NAC's CRDs
// (testdata/oadp/crds, from migtools/oadp-non-admin) instead of nacflow's,
// and as a user bound to OADP's ClusterRole for that controller
// (testdata/oadp/rbac/role.yaml), not as an admin.
type OADPCRDSuite struct {
	env   *envtest.Environment
	admin client.Client
	// cfg is the controller's identity: OADP's non-admin-controller role.
	cfg  *rest.Config
	oadp string
	caps capabilities.Capabilities
	stop func()
	// gc and sync are the manager's periodic passes, as cmd/nac makes them.
	gc   *orphangc.GarbageCollector
	sync *backupsync.BackupSync
}

var _ = Suite(&OADPCRDSuite{})

func (s *OADPCRDSuite) SetUpSuite(c *C) {
	assets := os.Getenv("NACFLOW_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "bin")
	}
	s.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		// OADP NAC's CRDs, OADP's DataProtectionApplication (stand-in) and
		// Velero's: no Blueprint, no NonAdminSchedule, no status.plan.
		CRDDirectoryPaths:     []string{filepath.Join("testdata", "oadp", "crds"), filepath.Join("..", "test", "crds")},
		CRDs:                  append(append(crds.CRDs[:0:0], crds.CRDs...), v2alpha1crds.CRDs...),
		ErrorIfCRDPathMissing: true,
	}
	adminCfg, err := s.env.Start()
	c.Assert(err, IsNil)
	s.admin, err = client.New(adminCfg, client.Options{Scheme: testScheme})
	c.Assert(err, IsNil)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-adp"}}
	c.Assert(s.admin.Create(ctx, ns), IsNil)
	s.oadp = ns.Name

	// The controller's identity: OADP's service account, bound to OADP's
	// ClusterRole for it, as the operator's bundle binds it.
	raw, err := os.ReadFile(filepath.Join("testdata", "oadp", "rbac", "role.yaml"))
	c.Assert(err, IsNil)
	role := &rbacv1.ClusterRole{}
	c.Assert(yaml.Unmarshal(raw, role), IsNil)
	c.Assert(s.admin.Create(ctx, role), IsNil)
	user := "system:serviceaccount:" + s.oadp + ":non-admin-controller"
	c.Assert(s.admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "non-admin-controller-rolebinding"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}), IsNil)
	au, err := s.env.AddUser(envtest.User{Name: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}}, nil)
	c.Assert(err, IsNil)
	s.cfg = au.Config()

	dc, err := discovery.NewDiscoveryClientForConfig(s.cfg)
	c.Assert(err, IsNil)
	userClient, err := client.New(s.cfg, client.Options{Scheme: testScheme})
	c.Assert(err, IsNil)
	s.caps, err = capabilities.Detect(ctx, dc, userClient, s.oadp)
	c.Assert(err, IsNil)
	s.stop = s.start(c)
}

func (s *OADPCRDSuite) TearDownSuite(c *C) {
	if s.stop != nil {
		s.stop()
	}
	if s.env != nil {
		c.Check(s.env.Stop(), IsNil)
	}
}

// start starts the controllers in a manager as cmd/nac does, with the
// detected capabilities, and returns a func that stops it.
func (s *OADPCRDSuite) start(c *C) func() {
	restart := true
	broadcaster := events.NewBroadcaster(0, 0, 0)
	mgr, err := ctrl.NewManager(s.cfg, ctrl.Options{
		Scheme:           testScheme,
		Metrics:          metricsserver.Options{BindAddress: "0"},
		Cache:            s.caps.TrimCache(controllers.CacheOptions(s.oadp, pagedlist.DefaultPageSize)),
		MapperProvider:   restmapper.New,
		EventBroadcaster: broadcaster, //nolint:staticcheck // shut down below
		Controller:       config.Controller{SkipNameValidation: &restart},
	})
	c.Assert(err, IsNil)
	queue := veleroqueue.NewBackupQueue()
	settings := &dpa.Source{Reader: mgr.GetAPIReader(), Namespace: s.oadp}
	turns := veleroqueue.NewTurns(mgr.GetClient(), s.oadp)
	registry, err := phases.NewRegistry(phases.Clients{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor("nacflow-blueprint"), Queue: queue, Turns: turns},
		phases.Options{Settings: settings, Resolver: testDNS, Endpoints: veleroDownloads.endpoints(c), RestorePrecheck: s.caps.RestorePrecheck,
			MaxBackupsInVelero: phases.DefaultMaxBackupsInVelero})
	c.Assert(err, IsNil)
	deps := func(kind string) controllers.Deps {
		recorder := mgr.GetEventRecorderFor(strings.ToLower(kind) + "-controller")
		var plans *planstore.PlanStore
		if !s.caps.Plan[kind] {
			plans = &planstore.PlanStore{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: s.oadp}
		}
		return controllers.Deps{
			Plans:         plans,
			Client:        mgr.GetClient(),
			APIReader:     mgr.GetAPIReader(),
			Runner:        &engine.Runner{Registry: registry, Recorder: recorder, Observer: nacmetrics.Observer{Kind: kind}},
			Recorder:      recorder,
			Blueprints:    &blueprints.Resolver{Reader: s.caps.BlueprintReader(mgr.GetClient()), Namespace: s.oadp},
			OADPNamespace: s.oadp,
			Observe:       reconciled.observe,
		}
	}
	// The registry's kinds whose CRDs are installed, as cmd/nac starts them.
	reconcilers, err := controllers.NewReconcilers(&controllers.Shared{Deps: deps,
		Queue: queue, Turns: turns, QueueRefreshWindow: time.Second,
		NoServerStatusRequests: !s.caps.RestorePrecheck,
		Settings:               settings, CredentialCheckPeriod: time.Second, EndpointRevision: phases.EndpointRevision(testDNS)})
	c.Assert(err, IsNil)
	for kind, r := range reconcilers {
		if s.caps.Runs(kind) {
			c.Assert(r.SetupWithManager(mgr), IsNil)
		}
	}
	if s.caps.Runs("Blueprint") {
		bpr := &controllers.BlueprintReconciler{Client: mgr.GetClient(), Registry: registry,
			Recorder: mgr.GetEventRecorderFor("blueprint-controller"), OADPNamespace: s.oadp}
		c.Assert(bpr.SetupWithManager(mgr), IsNil)
	}
	s.gc = &orphangc.GarbageCollector{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), OADPNamespace: s.oadp, Off: s.caps.Off()}
	// As cmd/nac runs it: one origin namespace at a time, through the index.
	c.Assert(backupsync.IndexOrigin(context.Background(), mgr.GetFieldIndexer()), IsNil)
	s.sync = &backupsync.BackupSync{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), OADPNamespace: s.oadp,
		TenantSpec: phases.SyncedBackupSpec, ByOrigin: true}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// The manager must come up: a controller whose kind or RBAC is missing
	// would make it fail (after the cache sync timeout).
	started := time.Now()
	for !mgr.GetCache().WaitForCacheSync(ctx) && time.Since(started) < 30*time.Second {
	}
	return func() {
		cancel()
		c.Check(<-done, IsNil)
		broadcaster.Shutdown()
	}
}

// TestCapabilities: what DetectCapabilities finds under OADP's CRDs.
func (s *OADPCRDSuite) TestCapabilities(c *C) {
	c.Check(s.caps.Served["NonAdminBackup"], Equals, true)
	c.Check(s.caps.Served["NonAdminRestore"], Equals, true)
	c.Check(s.caps.Served["Blueprint"], Equals, false)
	c.Check(s.caps.Served["NonAdminSchedule"], Equals, false)
	c.Check(s.caps.Plan["NonAdminBackup"], Equals, false)
	c.Check(s.caps.Runs("NonAdminBackupStorageLocation"), Equals, true)
	c.Check(s.caps.Events, Equals, false)
	c.Check(s.caps.RestorePrecheck, Equals, false)
	c.Check(s.caps.TenantLocations, Equals, false)
	c.Check(s.caps.Webhook, Equals, false)
	c.Check(s.caps.PlanUnknown, Equals, "")
	reg := prometheus.NewRegistry()
	c.Assert(reg.Register(s.caps.Collector()), IsNil)
	families, err := reg.Gather()
	c.Assert(err, IsNil)
	gauge := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			gauge[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	c.Check(gauge, DeepEquals, map[string]float64{
		"Blueprint": 0, "NonAdminBackupStorageLocationRequest": 1, "events": 0, "restorePrecheck": 0, "tenantLocations": 0, "webhook": 0,
		"NonAdminBackup": 1, "NonAdminBackup.status.plan": 0, "NonAdminRestore": 1, "NonAdminRestore.status.plan": 0,
		"NonAdminBackupStorageLocation": 1, "NonAdminBackupStorageLocation.status.plan": 0,
		"NonAdminDownloadRequest": 1, "NonAdminDownloadRequest.status.plan": 0,
		"NonAdminSchedule": 0, "NonAdminSchedule.status.plan": 0,
	})
	limits := strings.Join(s.caps.Limits(), "\n")
	for _, want := range []string{"no Blueprint CRD", "no NonAdminSchedule CRD", "the NonAdminBackup CRD has no status.plan",
		"the NonAdminRestore CRD has no status.plan", "may not create Events", "the restore pre-check (CheckRestoreItems) is off",
		"tenant locations are not recorded", "the requester webhook is not served"} {
		c.Check(strings.Contains(limits, want), Equals, true, Commentf("%q missing from:\n%s", want, limits))
	}
}

// With nacflow's own CRDs (the package's shared control plane) and an
// admin's rights, nothing is missing.
func (s *OADPCRDSuite) TestCapabilitiesOfNacflowCRDs(c *C) {
	dc, err := discovery.NewDiscoveryClientForConfig(testCfg)
	c.Assert(err, IsNil)
	caps, err := capabilities.Detect(context.Background(), dc, testClient, "openshift-adp")
	c.Assert(err, IsNil)
	c.Check(caps.Served["DataProtectionApplication"], Equals, true) // OADP's, which nacflow only reads
	delete(caps.Served, "DataProtectionApplication")
	c.Check(caps, DeepEquals, capabilities.All())
	c.Check(caps.Limits(), HasLen, 0)
	c.Check(caps.Off(), HasLen, 0)
}

// The periodic passes end, and read nothing OADP's RBAC forbids: a list
// the cache may not make would wait forever (Velero Schedules, for the
// NonAdminSchedule kind OADP does not have).
func (s *OADPCRDSuite) TestPeriodicPasses(c *C) {
	c.Check(s.caps.Off(), DeepEquals, map[string]bool{"NonAdminSchedule": true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A live NAB's plan, the plan of one that is gone (its finalizer was
	// removed by hand), and a Secret of nacflow's that is no plan.
	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	c.Assert(s.admin.Create(ctx, tenant), IsNil)
	live := newNAB(tenant.Name, "live", velerov1.BackupSpec{})
	c.Assert(s.admin.Create(ctx, live), IsNil)
	livePlan := client.ObjectKey{Namespace: s.oadp, Name: "nacflow-plan-" + string(live.UID)}
	eventually(c, 20*time.Second, func() (bool, string) {
		err := s.admin.Get(ctx, livePlan, &corev1.Secret{})
		return err == nil, fmt.Sprint(err)
	})
	labels := map[string]string{v1alpha1.OADPLabel: v1alpha1.OADPLabelValue, v1alpha1.ManagedByLabel: v1alpha1.ManagedByLabelValue}
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: "nacflow-plan-0b6c1e1e-0000-4000-8000-000000000001", Labels: labels,
		Annotations: map[string]string{planstore.PlanOfAnnotation: "NonAdminBackup/" + tenant.Name + "/live/0b6c1e1e-0000-4000-8000-000000000001"}}}
	c.Assert(s.admin.Create(ctx, orphan), IsNil)
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.oadp, Name: "nacflow-other", Labels: labels}}
	c.Assert(s.admin.Create(ctx, other), IsNil)

	deleted, err := s.gc.CollectOnce(ctx)
	c.Check(err, IsNil)
	c.Check(deleted, DeepEquals, map[string]int{"PlanSecret": 1})
	c.Check(apierrors.IsNotFound(s.admin.Get(ctx, client.ObjectKeyFromObject(orphan), &corev1.Secret{})), Equals, true)
	c.Check(s.admin.Get(ctx, livePlan, &corev1.Secret{}), IsNil)
	c.Check(s.admin.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{}), IsNil)
	_, err = s.sync.SyncOnce(ctx)
	c.Check(err, IsNil)
}

// A NonAdminBackup becomes exactly one Velero Backup, with OADP's status
// fields, and the controller then stays quiet.
func (s *OADPCRDSuite) TestBackup(c *C) {
	ctx := context.Background()
	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	c.Assert(s.admin.Create(ctx, tenant), IsNil)
	nab := newNAB(tenant.Name, "nightly", velerov1.BackupSpec{})
	c.Assert(s.admin.Create(ctx, nab), IsNil)

	got := &v1alpha1.NonAdminBackup{}
	eventually(c, 20*time.Second, func() (bool, string) {
		c.Assert(s.admin.Get(ctx, client.ObjectKeyFromObject(nab), got), IsNil)
		return got.Status.VeleroBackup != nil && got.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", got.Status)
	})
	vb := got.Status.VeleroBackup
	c.Check(vb.Namespace, Equals, s.oadp)
	c.Check(vb.NACUUID, Not(Equals), "")
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, "Accepted"), Equals, true, Commentf("%+v", got.Status.Conditions))
	c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, "Queued"), Equals, true, Commentf("%+v", got.Status.Conditions))
	c.Check(got.Status.Plan, IsNil) // pruned by OADP's schema

	backups := func() []velerov1.Backup {
		list := &velerov1.BackupList{}
		c.Assert(s.admin.List(ctx, list, client.InNamespace(s.oadp)), IsNil)
		return list.Items
	}
	c.Assert(backups(), HasLen, 1)
	c.Check(backups()[0].Name, Equals, vb.Name)

	quiet := func(what string) {
		// This NAB's own reconciles: the manager's start reconciles every
		// earlier test's NABs too, later on a slower machine.
		rv, n := got.ResourceVersion, reconciled.of("NonAdminBackup", nab)
		time.Sleep(5 * time.Second)
		c.Assert(s.admin.Get(ctx, client.ObjectKeyFromObject(nab), got), IsNil)
		woken := reconciled.of("NonAdminBackup", nab) - n
		c.Check(woken <= 2, Equals, true, Commentf("%s: %d reconciles of %s in 5s", what, woken, nab.Name))
		c.Check(got.ResourceVersion, Equals, rv, Commentf("%s: status written while nothing changed", what))
		c.Check(backups(), HasLen, 1, Commentf("%s", what))
	}
	quiet("queued")

	// Velero finishes it.
	b := backups()[0]
	before := b.DeepCopy()
	b.Status.Phase = velerov1.BackupPhaseCompleted
	c.Assert(s.admin.Patch(ctx, &b, client.MergeFrom(before)), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		c.Assert(s.admin.Get(ctx, client.ObjectKeyFromObject(nab), got), IsNil)
		vb := got.Status.VeleroBackup
		return vb != nil && vb.Status != nil && vb.Status.Phase == velerov1.BackupPhaseCompleted, fmt.Sprintf("%+v", got.Status)
	})
	quiet("completed")

	// The plan the API server pruned from status is kept in the OADP
	// namespace, for this object only.
	planSecret := &corev1.Secret{}
	c.Assert(s.admin.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: "nacflow-plan-" + string(got.UID)}, planSecret), IsNil)
	c.Check(planSecret.Annotations[planstore.PlanOfAnnotation], Equals, "NonAdminBackup/"+tenant.Name+"/nightly/"+string(got.UID))
	storedPlan := func() *v1alpha1.PlanStatus {
		c.Assert(s.admin.Get(ctx, client.ObjectKeyFromObject(planSecret), planSecret), IsNil)
		plan := &v1alpha1.PlanStatus{}
		c.Assert(json.Unmarshal(planSecret.Data["plan.json"], plan), IsNil)
		return plan
	}
	phaseStates := func(plan *v1alpha1.PlanStatus) map[string]v1alpha1.PhaseState {
		states := map[string]v1alpha1.PhaseState{}
		for _, p := range plan.Phases {
			states[p.Name] = p.State
		}
		return states
	}
	// Verify waits for a Velero that serves DownloadRequests (none here).
	plan := storedPlan()
	c.Check(plan.Action, Equals, "backup")
	c.Check(plan.State, Equals, v1alpha1.PlanRunning)
	c.Check(phaseStates(plan)["createBackup"], Equals, v1alpha1.PhaseComplete, Commentf("%+v", plan.Phases))
	c.Check(phaseStates(plan)["verify"], Equals, v1alpha1.PhaseWaiting, Commentf("%+v", plan.Phases))

	// Velero deletes the Backup (its TTL expired): the operation ended
	// long ago, and must not start again and make a new one.
	c.Assert(s.admin.Delete(ctx, &b), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		plan := storedPlan()
		return plan.State == v1alpha1.PlanComplete, fmt.Sprintf("%+v", plan)
	})
	time.Sleep(3 * time.Second)
	c.Check(backups(), HasLen, 0, Commentf("the finished NonAdminBackup made a new Velero Backup"))

	// The tenant deletes the NonAdminBackup: it goes, and its plan with it.
	c.Assert(s.admin.Delete(ctx, got), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		err := s.admin.Get(ctx, client.ObjectKeyFromObject(nab), got)
		return apierrors.IsNotFound(err), fmt.Sprintf("%v %+v", err, got.Status)
	})
	err := s.admin.Get(ctx, client.ObjectKeyFromObject(planSecret), planSecret)
	c.Check(apierrors.IsNotFound(err), Equals, true, Commentf("plan Secret left: %v", err))
	c.Check(backups(), HasLen, 0)
}

// Under OADP's CRDs no accepted restore spec survives a reconcile (the
// schema prunes status.veleroRestore.spec), and OADP's CRDs let a tenant
// edit restoreSpec: an edit made while the restore waits for its backup —
// a namespaceMapping into another tenant's namespace — is refused before
// any Velero Restore exists.
func (s *OADPCRDSuite) TestRestoreSpecEditedWhileWaiting(c *C) {
	ctx := context.Background()
	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	c.Assert(s.admin.Create(ctx, tenant), IsNil)

	nar := s.editWhileWaiting(c, tenant.Name, "running", "back", func(r *velerov1.RestoreSpec) {
		r.NamespaceMapping = map[string]string{tenant.Name: "victim"}
	})
	eventually(c, 20*time.Second, func() (bool, string) {
		c.Assert(s.admin.Get(ctx, client.ObjectKeyFromObject(nar), nar), IsNil)
		cond := meta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionAccepted)
		return cond != nil && cond.Status == metav1.ConditionFalse &&
			cond.Message == "spec.restoreSpec.namespaceMapping: "+tenant.Name+" to victim: a restore into another namespace is held to the rights there of whoever asked, and no one is known (condition RequesterVerified: WebhookNotInstalled)", fmt.Sprintf("%+v", nar.Status)
	})
	c.Check(nar.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
	restores := &velerov1.RestoreList{}
	c.Assert(s.admin.List(ctx, restores, client.InNamespace(s.oadp)), IsNil)
	c.Check(restores.Items, HasLen, 0)

	// An edit within the rules is restored as it is now (the DPA's
	// enforced values are applied again too: phases' unit test).
	s.editWhileWaiting(c, tenant.Name, "running2", "plain", func(r *velerov1.RestoreSpec) {
		r.IncludedResources = []string{"configmaps"}
	})
	eventually(c, 20*time.Second, func() (bool, string) {
		c.Assert(s.admin.List(ctx, restores, client.InNamespace(s.oadp)), IsNil)
		return len(restores.Items) == 1, fmt.Sprintf("%d Velero Restores", len(restores.Items))
	})
	c.Check(restores.Items[0].Spec.IncludedResources, DeepEquals, []string{"configmaps"})
	c.Check(restores.Items[0].Spec.NamespaceMapping, HasLen, 0)
}

// editWhileWaiting makes NonAdminBackup backup in ns, whose Velero Backup
// has not finished, and NonAdminRestore restore of it; once the restore is
// accepted and waits for the backup, edit changes its restoreSpec, then
// Velero finishes the backup. It returns the restore.
func (s *OADPCRDSuite) editWhileWaiting(c *C, ns, backup, restore string, edit func(*velerov1.RestoreSpec)) *v1alpha1.NonAdminRestore {
	ctx := context.Background()
	nab := newNAB(ns, backup, velerov1.BackupSpec{})
	c.Assert(s.admin.Create(ctx, nab), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		c.Assert(s.admin.Get(ctx, client.ObjectKeyFromObject(nab), nab), IsNil)
		return nab.Status.VeleroBackup != nil && nab.Status.VeleroBackup.Name != "", fmt.Sprintf("%+v", nab.Status)
	})
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: restore},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: backup}}}
	c.Assert(s.admin.Create(ctx, nar), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		c.Assert(s.admin.Get(ctx, client.ObjectKeyFromObject(nar), nar), IsNil)
		return meta.IsStatusConditionTrue(nar.Status.Conditions, v1alpha1.ConditionAccepted), fmt.Sprintf("%+v", nar.Status)
	})
	before := nar.DeepCopy()
	edit(nar.Spec.RestoreSpec)
	c.Assert(s.admin.Patch(ctx, nar, client.MergeFrom(before)), IsNil)

	// Velero finishes the backup: the restore's wait ends.
	b := &velerov1.Backup{}
	c.Assert(s.admin.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: nab.Status.VeleroBackup.Name}, b), IsNil)
	bBefore := b.DeepCopy()
	b.Status.Phase = velerov1.BackupPhaseCompleted
	c.Assert(s.admin.Patch(ctx, b, client.MergeFrom(bBefore)), IsNil)
	return nar
}
