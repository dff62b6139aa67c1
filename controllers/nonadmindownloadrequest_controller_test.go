package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
)

func newNADR(ns, name string, kind velerov1.DownloadTargetKind, target string) *v1alpha1.NonAdminDownloadRequest {
	return &v1alpha1.NonAdminDownloadRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.NonAdminDownloadRequestSpec{Target: velerov1.DownloadTarget{Kind: kind, Name: target}},
	}
}

func getNADR(c *C, nadr *v1alpha1.NonAdminDownloadRequest) *v1alpha1.NonAdminDownloadRequest {
	got := &v1alpha1.NonAdminDownloadRequest{}
	c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(nadr), got), IsNil)
	return got
}

// startedBackup creates the NonAdminBackup name in ns and returns it with
// the name of its Velero Backup in oadp, once created.
func startedBackup(c *C, oadp, ns, name string) (*v1alpha1.NonAdminBackup, string) {
	nab := newNAB(ns, name, velerov1.BackupSpec{})
	c.Assert(testClient.Create(context.Background(), nab), IsNil)
	var veleroName string
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAB(c, nab)
		if got.Status.VeleroBackup == nil || got.Status.VeleroBackup.Name == "" {
			return false, "no Velero Backup yet"
		}
		veleroName = got.Status.VeleroBackup.Name
		return true, ""
	})
	return nab, veleroName
}

// planComplete waits until obj's plan is complete and returns obj.
func planComplete[T interface {
	client.Object
	GetPlan() *v1alpha1.PlanStatus
}](c *C, obj T) T {
	eventually(c, 15*time.Second, func() (bool, string) {
		c.Assert(testClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj), IsNil)
		p := obj.GetPlan()
		if p == nil || p.State != v1alpha1.PlanComplete {
			return false, fmt.Sprintf("plan: %+v", p)
		}
		return true, ""
	})
	return obj
}

// veleroDownloadRequestsOf lists the Velero DownloadRequests in oadp
// carrying label=nacuuid.
func veleroDownloadRequestsOf(c *C, oadp, label, nacuuid string) []velerov1.DownloadRequest {
	list := &velerov1.DownloadRequestList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(oadp), client.MatchingLabels{label: nacuuid}), IsNil)
	return list.Items
}

// TestDownloadBackupLog: a NonAdminDownloadRequest for the tenant's own
// completed NonAdminBackup gets Velero's URL, which serves the gzipped log;
// the Velero DownloadRequest carries OADP's NADR keys and names the Velero
// Backup.
func (s *ControllerSuite) TestDownloadBackupLog(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "download")
	nab, veleroName := startedBackup(c, s.oadp, ns, "logs")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	planComplete(c, nab)

	nadr := newNADR(ns, "logs-log", velerov1.DownloadTargetKindBackupLog, "logs")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	got := planComplete(c, nadr)
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionAccepted), Equals, true)
	processed := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProcessed)
	c.Assert(processed, NotNil)
	c.Check(processed.Status, Equals, metav1.ConditionTrue)
	c.Check(processed.Reason, Equals, v1alpha1.ReasonProcessed)
	vs := got.Status.VeleroDownloadRequest.Status
	c.Assert(vs, NotNil)
	c.Check(vs.Phase, Equals, velerov1.DownloadRequestPhaseProcessed)
	c.Assert(vs.Expiration, NotNil)
	c.Check(vs.Expiration.After(time.Now()), Equals, true)
	c.Check(download(c, vs.DownloadURL), Matches, `(?s).*the log of `+veleroName+`.*`)

	nacuuid := v1alpha1.NACUUIDOf(got.UID)
	drs := veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NadrOriginNACUUIDLabel, nacuuid)
	c.Assert(drs, HasLen, 1)
	c.Check(drs[0].Name, Equals, got.Status.VeleroDownloadRequest.Name)
	c.Check(drs[0].Spec.Target, Equals, velerov1.DownloadTarget{Kind: velerov1.DownloadTargetKindBackupLog, Name: veleroName})
	c.Check(drs[0].Annotations, DeepEquals, map[string]string{
		v1alpha1.NadrOriginNameAnnotation: "logs-log", v1alpha1.NadrOriginNamespaceAnnotation: ns})
	c.Check(drs[0].Labels[v1alpha1.OADPLabel], Equals, v1alpha1.OADPLabelValue)

	// kubectl delete: the Velero DownloadRequest goes with it.
	c.Assert(testClient.Delete(ctx, got), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(got), &v1alpha1.NonAdminDownloadRequest{})
		left := veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NadrOriginNACUUIDLabel, nacuuid)
		return apierrors.IsNotFound(err) && len(left) == 0, fmt.Sprintf("NADR: %v, Velero DownloadRequests: %d", err, len(left))
	})
}

// TestDownloadWaitsForRunningBackup: a request made while the Velero Backup
// runs waits for it, and is served once it ends.
func (s *ControllerSuite) TestDownloadWaitsForRunningBackup(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "download")
	_, veleroName := startedBackup(c, s.oadp, ns, "running")
	nadr := newNADR(ns, "early", velerov1.DownloadTargetKindBackupResourceList, "running")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		p := getNADR(c, nadr).Status.Plan
		if p == nil || p.Phase("validate") == nil || p.Phase("validate").State != v1alpha1.PhaseWaiting {
			return false, fmt.Sprintf("plan: %+v", p)
		}
		return strings.Contains(p.Phase("validate").Message, "is not started"), p.Phase("validate").Message
	})
	c.Check(veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NadrOriginNACUUIDLabel, v1alpha1.NACUUIDOf(getNADR(c, nadr).UID)), HasLen, 0)
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhasePartiallyFailed)
	got := planComplete(c, nadr)
	c.Check(download(c, got.Status.VeleroDownloadRequest.Status.DownloadURL), Matches, `.*"`+ns+`/app-config".*`)
}

// TestDownloadBeforeItsBackup is OADP's NADR sample as OADP NAC runs it: a
// request made before the NonAdminBackup it names backs off with
// NonAdminBackupNotAvailable=True (reason Error), and is served once that
// backup exists and ends; the condition then goes.
func (s *ControllerSuite) TestDownloadBeforeItsBackup(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "download")
	nadr := newNADR(ns, "early-bird", velerov1.DownloadTargetKindBackupLog, "later")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNADR(c, nadr)
		return meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionNonAdminBackupNotAvailable) &&
			got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff, fmt.Sprintf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	})
	nab, veleroName := startedBackup(c, s.oadp, ns, "later")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	planComplete(c, nab)
	got := planComplete(c, nadr)
	c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseCreated)
	c.Check(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNonAdminBackupNotAvailable), IsNil)
	c.Check(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionProcessed), Equals, true)
	c.Check(download(c, got.Status.VeleroDownloadRequest.Status.DownloadURL), Matches, `(?s).*the log of `+veleroName+`.*`)
}

// TestDownloadRefusals: a request naming a NonAdminBackup that is not in
// its own namespace — another tenant's, whatever its name — finds none: it
// backs off with OADP NAC's condition (NonAdminBackupNotAvailable, or
// NonAdminRestoreNotAvailable for a Restore kind naming a NonAdminBackup),
// True with reason Error, and no Velero DownloadRequest is made, however
// long it waits.
func (s *ControllerSuite) TestDownloadRefusals(c *C) {
	ctx := context.Background()
	victim := createNamespace(c, "victim")
	nab, veleroName := startedBackup(c, s.oadp, victim, "secret-stuff")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	planComplete(c, nab)

	attacker := createNamespace(c, "attacker")
	for _, tc := range []struct {
		nadr      *v1alpha1.NonAdminDownloadRequest
		condition string
		want      string
	}{
		{newNADR(attacker, "steal", velerov1.DownloadTargetKindBackupLog, "secret-stuff"), v1alpha1.ConditionNonAdminBackupNotAvailable,
			fmt.Sprintf("cannot get nonadminbackup: NonAdminBackup %s/secret-stuff does not exist (yet): the request waits for it", attacker)},
		{newNADR(attacker, "steal-velero-name", velerov1.DownloadTargetKindBackupResourceList, veleroName), v1alpha1.ConditionNonAdminBackupNotAvailable,
			fmt.Sprintf("cannot get nonadminbackup: NonAdminBackup %s/%s does not exist (yet): the request waits for it", attacker, veleroName)},
		{newNADR(victim, "wrong-kind", velerov1.DownloadTargetKindRestoreLog, "secret-stuff"), v1alpha1.ConditionNonAdminRestoreNotAvailable,
			fmt.Sprintf("cannot get nonadminrestore: NonAdminRestore %s/secret-stuff does not exist (yet): the request waits for it", victim)},
	} {
		c.Assert(testClient.Create(ctx, tc.nadr), IsNil)
		eventually(c, 20*time.Second, func() (bool, string) {
			got := getNADR(c, tc.nadr)
			cond := meta.FindStatusCondition(got.Status.Conditions, tc.condition)
			return cond != nil && got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff, fmt.Sprintf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
		})
		got := getNADR(c, tc.nadr)
		cond := meta.FindStatusCondition(got.Status.Conditions, tc.condition)
		c.Check(cond.Status, Equals, metav1.ConditionTrue)
		c.Check(cond.Reason, Equals, "Error")
		c.Check(cond.Message, Equals, tc.want)
		c.Check(got.Status.Plan.State, Equals, v1alpha1.PlanRunning)
		c.Check(got.Status.Plan.Phase("validate").State, Equals, v1alpha1.PhaseWaiting)
		nothingCreatedFor(c, s.oadp, v1alpha1.NACUUIDOf(got.UID), tc.nadr.Name)
	}

	// The API server refuses a kind Velero does not serve, and an empty name.
	bad := newNADR(attacker, "bad-kind", "BackupSecrets", "secret-stuff")
	c.Check(testClient.Create(ctx, bad), ErrorMatches, `(?s).*spec.target.kind: Unsupported value: "BackupSecrets".*`)
	empty := newNADR(attacker, "no-name", velerov1.DownloadTargetKindBackupLog, "")
	c.Check(testClient.Create(ctx, empty), ErrorMatches, `(?s).*spec.target.name is required.*`)
}

// TestDownloadRestoreLog: the Restore kinds name the tenant's
// NonAdminRestore; the Velero DownloadRequest names its Velero Restore.
func (s *ControllerSuite) TestDownloadRestoreLog(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "download")
	nab, veleroName := startedBackup(c, s.oadp, ns, "to-restore")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	planComplete(c, nab)
	nar := newNAR(ns, "restored", velerov1.RestoreSpec{BackupName: "to-restore"})
	c.Assert(testClient.Create(ctx, nar), IsNil)
	var restoreName string
	eventually(c, 10*time.Second, func() (bool, string) {
		got := getNAR(c, nar)
		if got.Status.VeleroRestore == nil || got.Status.VeleroRestore.Name == "" {
			return false, "no Velero Restore yet"
		}
		restoreName = got.Status.VeleroRestore.Name
		return true, ""
	})
	r := &velerov1.Restore{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: s.oadp, Name: restoreName}, r), IsNil)
	before := r.DeepCopy()
	r.Status.Phase = velerov1.RestorePhaseCompleted
	c.Assert(testClient.Patch(ctx, r, client.MergeFrom(before)), IsNil)

	nadr := newNADR(ns, "restore-log", velerov1.DownloadTargetKindRestoreLog, "restored")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	got := planComplete(c, nadr)
	c.Check(download(c, got.Status.VeleroDownloadRequest.Status.DownloadURL), Matches, `(?s).*the log of `+restoreName+`.*`)
	drs := veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NadrOriginNACUUIDLabel, v1alpha1.NACUUIDOf(got.UID))
	c.Assert(drs, HasLen, 1)
	c.Check(drs[0].Spec.Target, Equals, velerov1.DownloadTarget{Kind: velerov1.DownloadTargetKindRestoreLog, Name: restoreName})
}

// TestDownloadExpires: once the URL expires, the request and its Velero
// DownloadRequest are deleted (OADP NAC's behaviour).
func (s *ControllerSuite) TestDownloadExpires(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "download")
	nab, veleroName := startedBackup(c, s.oadp, ns, "short")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	planComplete(c, nab)
	nadr := newNADR(ns, "expiring-log", velerov1.DownloadTargetKindBackupLog, "short")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	got := planComplete(c, nadr)
	nacuuid := v1alpha1.NACUUIDOf(got.UID)
	c.Assert(veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NadrOriginNACUUIDLabel, nacuuid), HasLen, 1)
	eventually(c, 15*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(nadr), &v1alpha1.NonAdminDownloadRequest{})
		left := veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NadrOriginNACUUIDLabel, nacuuid)
		return apierrors.IsNotFound(err) && len(left) == 0, fmt.Sprintf("NADR: %v, Velero DownloadRequests: %d", err, len(left))
	})
	c.Check(getNAB(c, nab).Status.Plan.State, Equals, v1alpha1.PlanComplete, Commentf("the backup is untouched"))
}

// TestDownloadRequireTenantLocation: with requireTenantLocation, OADP NAC's
// rule, a backup on the admin's location is refused with OADP's condition.
func (s *ControllerSuite) TestDownloadRequireTenantLocation(c *C) {
	ctx := context.Background()
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminDownloadRequest"))
	c.Assert(err, IsNil)
	bp.Namespace = s.oadp
	download := bp.Spec.Actions["download"]
	download.Phases[0].Args = map[string]apiextensionsv1.JSON{"requireTenantLocation": {Raw: []byte(`true`)}}
	bp.Spec.Actions["download"] = download
	defer applyBlueprints(c, s.oadp, bp)()

	ns := createNamespace(c, "download")
	nab, veleroName := startedBackup(c, s.oadp, ns, "on-admin")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	planComplete(c, nab)
	nadr := newNADR(ns, "admin-location", velerov1.DownloadTargetKindBackupLog, "on-admin")
	c.Assert(testClient.Create(ctx, nadr), IsNil)
	c.Check(refusedWithStatus(c, nadr, "on the admin's location"), Matches, `spec.target.name: NonAdminBackup on-admin is kept on the admin's storage location "default": .*`)
	c.Check(meta.IsStatusConditionTrue(getNADR(c, nadr).Status.Conditions, v1alpha1.ConditionNonAdminBackupStorageLocationNotUsed), Equals, true)
	nothingCreatedFor(c, s.oadp, v1alpha1.NACUUIDOf(getNADR(c, nadr).UID), "admin-location")
}

// TestBackupVerified: the backup action checks the finished backup's
// resource list (Verified=True with the count). Its DownloadRequest is left
// for Velero to expire (no write for what Velero does anyway); deleting the
// NAB removes it.
func (s *ControllerSuite) TestBackupVerified(c *C) {
	ns := createNamespace(c, "verify")
	nab, veleroName := startedBackup(c, s.oadp, ns, "checked")
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	got := planComplete(c, nab)
	v := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionVerified)
	c.Assert(v, NotNil)
	c.Check(v.Status, Equals, metav1.ConditionTrue)
	c.Check(v.Reason, Equals, v1alpha1.ReasonContentsVerified)
	c.Check(v.Message, Equals, fmt.Sprintf("2 items of Velero Backup %s checked: all belong to namespace %s", veleroName, ns))
	c.Check(got.Status.Plan.IsSummary(), Equals, true, Commentf("verify, as every phase, completed plainly"))
	nacuuid := v1alpha1.NACUUIDOf(got.UID)
	left := veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NabOriginNACUUIDLabel, nacuuid)
	c.Assert(left, HasLen, 1)
	c.Check(left[0].Status.Phase, Equals, velerov1.DownloadRequestPhaseProcessed)
	c.Check(left[0].Status.Expiration, NotNil, Commentf("Velero deletes it once expired"))

	c.Assert(testClient.Delete(context.Background(), nab), IsNil)
	eventually(c, 10*time.Second, func() (bool, string) {
		n := len(veleroDownloadRequestsOf(c, s.oadp, v1alpha1.NabOriginNACUUIDLabel, nacuuid))
		return n == 0, fmt.Sprintf("%d DownloadRequests left", n)
	})
}

// TestBackupVerificationFindsStrangers: items of another namespace and
// cluster-scoped items Velero does not add for the namespace turn Verified
// False with a Warning event and the gauge; the volumes of the namespace's
// claims and the CRDs of its custom resources pass. With
// failOnUnexpectedItems the plan fails.
func (s *ControllerSuite) TestBackupVerificationFindsStrangers(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "verify")
	c.Assert(testClient.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-data",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}), IsNil)
	strangers := func(veleroName string) {
		setResourceList(veleroName, map[string][]string{
			"v1/Namespace":             {ns},
			"v1/ConfigMap":             {ns + "/app-config"},
			"v1/PersistentVolumeClaim": {ns + "/data"},
			"v1/PersistentVolume":      {"pv-data", "pv-of-someone-else"},
			"v1/Secret":                {"other-tenant/db-password"},
			"oadp.openshift.io/v1alpha1/NonAdminBackup":        {ns + "/nested"},
			"apiextensions.k8s.io/v1/CustomResourceDefinition": {"nonadminbackups.oadp.openshift.io", "widgets.example.com"},
			"rbac.authorization.k8s.io/v1/ClusterRoleBinding":  {"cluster-admin"},
		})
	}
	nab, veleroName := startedBackup(c, s.oadp, ns, "strangers")
	strangers(veleroName)
	completeBackup(c, s.oadp, veleroName, velerov1.BackupPhaseCompleted)
	got := planComplete(c, nab)
	v := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionVerified)
	c.Assert(v, NotNil)
	c.Check(v.Status, Equals, metav1.ConditionFalse)
	c.Check(v.Reason, Equals, v1alpha1.ReasonUnexpectedItems)
	c.Check(v.Message, Equals, fmt.Sprintf("4 of 10 items of Velero Backup %s do not belong to namespace %s: "+
		"apiextensions.k8s.io/v1/CustomResourceDefinition widgets.example.com, rbac.authorization.k8s.io/v1/ClusterRoleBinding cluster-admin, "+
		"v1/PersistentVolume pv-of-someone-else, v1/Secret other-tenant/db-password", veleroName, ns))
	eventually(c, 5*time.Second, func() (bool, string) {
		evs := eventReasons(c, ns, "strangers")
		return count(evs, corev1.EventTypeWarning+" "+v1alpha1.ReasonUnexpectedItems) == 1, joined(evs)
	})
	c.Check(unverifiedBackups(c, ns), Equals, 1.0)

	// The admin makes it fail the plan.
	bp, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	bp.Namespace = s.oadp
	backup := bp.Spec.Actions["backup"]
	for i := range backup.Phases {
		if backup.Phases[i].Func == "VerifyBackupContents" {
			backup.Phases[i].Args["failOnUnexpectedItems"] = apiextensionsv1.JSON{Raw: []byte(`true`)}
		}
	}
	bp.Spec.Actions["backup"] = backup
	defer applyBlueprints(c, s.oadp, bp)()
	strict, strictName := startedBackup(c, s.oadp, ns, "strangers-strict")
	strangers(strictName)
	completeBackup(c, s.oadp, strictName, velerov1.BackupPhaseCompleted)
	msg := refusedByController(c, strict)
	c.Check(msg, Matches, `4 of 10 items of Velero Backup .* do not belong to namespace .*`)
	c.Check(meta.IsStatusConditionFalse(getNAB(c, strict).Status.Conditions, v1alpha1.ConditionVerified), Equals, true)
	c.Check(unverifiedBackups(c, ns), Equals, 2.0)
}

// unverifiedBackups is the nacflow_backups_unverified sample of ns.
func unverifiedBackups(c *C, ns string) float64 {
	return gaugeSample(c, &nacmetrics.StateCollector{Reader: testClient}, "nacflow_backups_unverified", "namespace", ns)
}
