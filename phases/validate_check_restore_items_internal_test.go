package phases

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	. "gopkg.in/check.v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/restoreaction"
)

type CheckRestoreItemsSuite struct{}

var _ = Suite(&CheckRestoreItemsSuite{})

// tarball gzips a tar of files (path → content, in order).
func tarball(c *C, files ...string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for i := 0; i+1 < len(files); i += 2 {
		c.Assert(tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}), IsNil)
		_, err := tw.Write([]byte(files[i+1]))
		c.Assert(err, IsNil)
	}
	c.Assert(tw.Close(), IsNil)
	c.Assert(gz.Close(), IsNil)
	return buf.Bytes()
}

var checkBound = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "persistentvolumeclaims"}, Verbs: []string{"create", "update", "patch"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"get"}},
}

func serve(body []byte) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
}

func checkLookup() precheckLookup {
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: checkBound[:1]},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "taken"}},
	).Build()
	return precheckLookup{op: &engine.Operation{APIReader: cl, Client: cl}}
}

// TestCheckContents: the items Velero would restore are decided once each
// (the plain and the preferred-version copy are one item); items of other
// namespaces, cluster-scoped kinds other than PVs and kinds Velero never
// restores are not Velero's to restore here; a RoleBinding may bind a Role
// of the same backup that passes itself, whatever the tar order.
func (s *CheckRestoreItemsSuite) TestCheckContents(c *C) {
	body := tarball(c,
		"metadata/version", "1",
		"resources/configmaps/namespaces/team/cm.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"}}`,
		"resources/configmaps/v1-preferredversion/namespaces/team/cm.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"}}`,
		"resources/configmaps/namespaces/other/cm.json", `{"metadata":{"name":"cm","namespace":"other"}}`,
		"resources/events/namespaces/team/e.json", `{"metadata":{"name":"e","namespace":"team"}}`,
		"resources/namespaces/cluster/team.json", `{"metadata":{"name":"team"}}`,
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-reader.json", `{"metadata":{"name":"to-reader","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"}}`,
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-edit.json", `{"metadata":{"name":"to-edit","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}`,
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-root.json", `{"metadata":{"name":"to-root","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`,
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-big.json", `{"metadata":{"name":"to-big","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"big"}}`,
		"resources/roles.rbac.authorization.k8s.io/namespaces/team/reader.json", `{"metadata":{"name":"reader","namespace":"team"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["create"]}]}`,
		"resources/roles.rbac.authorization.k8s.io/namespaces/team/big.json", `{"metadata":{"name":"big","namespace":"team"},"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`,
		"resources/resourcequotas/namespaces/team/quota.json", `{"metadata":{"name":"quota","namespace":"team"}}`,
		"resources/persistentvolumes/cluster/root.json", `{"metadata":{"name":"root"},"spec":{"hostPath":{"path":"/"}}}`,
		"resources/persistentvolumes/cluster/taken.json", `{"metadata":{"name":"taken"},"spec":{"csi":{"driver":"d"}}}`,
		"resources/configmaps/namespaces/team/broken.json", `[1,2]`,
	)
	srv := serve(body)
	defer srv.Close()
	p := restorepolicy.Policy{Namespace: "team", Bound: checkBound, AdminOwned: restorepolicy.DefaultAdminOwned}
	total, excluded, _, err := checkContents(context.Background(), loopbackStore, srv.URL, p, restoreSkips(&v1alpha1.NonAdminRestore{}), checkLookup(), nil)
	c.Assert(err, IsNil)
	c.Check(total, Equals, 11)
	c.Check(excluded, DeepEquals, []string{
		"configmaps team/broken: not a JSON object",
		"persistentvolumes root: PersistentVolume root: volume source spec.hostPath is not one a restore made for a tenant may create (allowed: csi, awsElasticBlockStore, gcePersistentDisk, azureDisk, cinder, vsphereVolume)",
		"persistentvolumes taken: PersistentVolume taken exists: a restore made for a tenant never changes a cluster-scoped object",
		"resourcequotas team/quota: the tenant role does not allow create on resourcequotas",
		"rolebindings.rbac.authorization.k8s.io team/to-big: RoleBinding to-big binds Role big, which does not exist: Kubernetes refuses such a binding to anyone who may not bind it",
		"rolebindings.rbac.authorization.k8s.io team/to-root: RoleBinding to-root binds ClusterRole cluster-admin, which grants what the tenant role does not hold: * *.*",
		"roles.rbac.authorization.k8s.io team/big: Role big grants what the tenant role does not hold: get secrets",
	})

	// The restore's own filters count too.
	nar := &v1alpha1.NonAdminRestore{Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{IncludedResources: []string{"configmaps"}}}}
	total, excluded, _, err = checkContents(context.Background(), loopbackStore, srv.URL, p, restoreSkips(nar), checkLookup(), nil)
	c.Assert(err, IsNil)
	c.Check(total, Equals, 2)
	c.Check(excluded, DeepEquals, []string{"configmaps team/broken: not a JSON object"})
}

// TestCheckContentsBounds: a body that is no gzip, a tar cut short and an
// item over the size bound are reported, never a panic.
func (s *CheckRestoreItemsSuite) TestCheckContentsBounds(c *C) {
	p := restorepolicy.Policy{Namespace: "team", Bound: checkBound}
	srv := serve([]byte("not gzip"))
	_, _, _, err := checkContents(context.Background(), loopbackStore, srv.URL, p, restoreSkips(&v1alpha1.NonAdminRestore{}), checkLookup(), nil)
	srv.Close()
	c.Check(err, ErrorMatches, "unexpected EOF|gzip: invalid header")

	whole := tarball(c, "resources/configmaps/namespaces/team/cm.json", `{"metadata":{"name":"cm","namespace":"team"}}`)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	raw, _ := gzip.NewReader(bytes.NewReader(whole))
	var plain bytes.Buffer
	_, _ = plain.ReadFrom(raw)
	_, _ = gz.Write(plain.Bytes()[:530])
	_ = gz.Close()
	srv = serve(buf.Bytes())
	_, _, _, err = checkContents(context.Background(), loopbackStore, srv.URL, p, restoreSkips(&v1alpha1.NonAdminRestore{}), checkLookup(), nil)
	srv.Close()
	c.Check(err, NotNil)

	big := `{"metadata":{"name":"cm","namespace":"team"},"data":{"k":"` + string(bytes.Repeat([]byte("x"), maxItemBytes)) + `"}}`
	srv = serve(tarball(c, "resources/configmaps/namespaces/team/big.json", big))
	_, excluded, _, err := checkContents(context.Background(), loopbackStore, srv.URL, p, restoreSkips(&v1alpha1.NonAdminRestore{}), checkLookup(), nil)
	srv.Close()
	c.Assert(err, IsNil)
	c.Check(excluded, DeepEquals, []string{"configmaps team/big: not read, larger than 1048576 bytes"})
}

func (s *CheckRestoreItemsSuite) TestItemPath(c *C) {
	for _, t := range []struct {
		path, gr, ns, name string
		ok                 bool
	}{
		{"resources/configmaps/namespaces/team/cm.json", "configmaps", "team", "cm", true},
		{"resources/rolebindings.rbac.authorization.k8s.io/v1-preferredversion/namespaces/team/b.json", "rolebindings.rbac.authorization.k8s.io", "team", "b", true},
		{"resources/persistentvolumes/cluster/pv.json", "persistentvolumes", "", "pv", true},
		{"resources/persistentvolumes/v1-preferredversion/cluster/pv.json", "persistentvolumes", "", "pv", true},
		{"./resources/configmaps/namespaces/team/cm.json", "configmaps", "team", "cm", true},
		{"resources/configmaps/namespaces//cm.json", "", "", "", false},
		{"resources/configmaps/namespaces/team/.json", "", "", "", false},
		{"metadata/version", "", "", "", false},
		{"resources/configmaps/other/team/cm.json", "", "", "", false},
		{"resources/configmaps/namespaces/team/sub/cm.json", "", "", "", false},
	} {
		gr, ns, name, ok := itemPath(t.path)
		c.Check(ok, Equals, t.ok, Commentf(t.path))
		if t.ok {
			c.Check(gr, Equals, schema.ParseGroupResource(t.gr), Commentf(t.path))
			c.Check(ns+"/"+name, Equals, t.ns+"/"+t.name, Commentf(t.path))
		}
	}
}

// FuzzCheckContents: any bytes served as a backup's contents are checked or
// refused cleanly, never a panic.
func FuzzCheckContents(f *testing.F) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	item := `{"metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"}}`
	_ = tw.WriteHeader(&tar.Header{Name: "resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/b.json", Mode: 0o644, Size: int64(len(item)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(item))
	_ = tw.Close()
	_ = gz.Close()
	f.Add(buf.Bytes())
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, body []byte) {
		srv := serve(body)
		defer srv.Close()
		p := restorepolicy.Policy{Namespace: "team", Bound: checkBound}
		_, _, _, _ = checkContents(context.Background(), loopbackStore, srv.URL, p, restoreSkips(&v1alpha1.NonAdminRestore{}), checkLookup(), nil)
	})
}

// runCheck runs CheckRestoreItems for the NonAdminRestore team/back with a
// processed ServerStatusRequest listing plugins and a processed
// DownloadRequest serving url (both already made by an earlier run).
func runCheck(c *C, enabled bool, plugins []velerov1.PluginInfo, url, onExcluded string) (*v1alpha1.NonAdminRestore, *record.FakeRecorder, engine.Result, error) {
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team", UID: "u1"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "b"}}}
	op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1"}
	labels, annotations := op.OwnerMeta()
	name := v1alpha1.NACObjectName("team", "back", "uuid-1")
	now := metav1.Now()
	meta := metav1.ObjectMeta{Name: name, Namespace: "oadp", Labels: labels, Annotations: annotations, CreationTimestamp: now}
	scheme := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(scheme), IsNil)
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Rules: checkBound},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&velerov1.ServerStatusRequest{ObjectMeta: meta, Status: velerov1.ServerStatusRequestStatus{Phase: velerov1.ServerStatusRequestPhaseProcessed, Plugins: plugins}},
		&velerov1.DownloadRequest{ObjectMeta: meta, Status: velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: url}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "oadp"}, Spec: velerov1.BackupSpec{StorageLocation: "default"}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "oadp"}},
	).Build()
	op.Client, op.APIReader = cl, cl
	rec := record.NewFakeRecorder(10)
	f := bind(&CheckRestoreItems{tools: tools{recorder: rec, recent: newRecentCreates(), store: loopbackStore}, enabled: enabled, restoreRules: restoreRules{tenantRole: "admin", adminOwned: restorepolicy.DefaultAdminOwned}})
	res, err := f.Run(context.Background(), op, &CheckRestoreItemsArgs{BackupName: "b", OnExcluded: onExcluded})
	if err == nil {
		// Done: both requests are gone.
		for _, o := range []client.Object{&velerov1.ServerStatusRequest{}, &velerov1.DownloadRequest{}} {
			if enabled {
				c.Check(apierrors.IsNotFound(cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: name}, o)), Equals, true)
			}
		}
	}
	return nar, rec, res, err
}

var ourPlugin = []velerov1.PluginInfo{{Name: "velero.io/pod", Kind: "RestoreItemAction"}, {Name: restorepolicy.PluginName, Kind: "RestoreItemAction"}}

// TestRun: Velero without the plugin refuses the restore; with it, the
// excluded items are named in RestoreItemsChecked and a Warning event, and
// onExcluded refuse refuses the whole restore; disabled, nothing is read.
func (s *CheckRestoreItemsSuite) TestRun(c *C) {
	srv := serve(tarball(c,
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-root.json", `{"metadata":{"name":"to-root","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`,
		"resources/configmaps/namespaces/team/cm.json", `{"metadata":{"name":"cm","namespace":"team"}}`))
	defer srv.Close()
	clean := serve(tarball(c, "resources/configmaps/namespaces/team/cm.json", `{"metadata":{"name":"cm","namespace":"team"}}`))
	defer clean.Close()

	_, _, res, err := runCheck(c, false, nil, srv.URL, "")
	c.Assert(err, IsNil)
	c.Check(res.Message, Equals, "not checked: --restore-precheck=false")

	nar, _, _, err := runCheck(c, true, ourPlugin[:1], srv.URL, "")
	c.Check(engine.IsTerminal(err), Equals, true)
	c.Check(err, ErrorMatches, `Velero does not run nacflow's plugin nacflow.io/restore-as-tenant \(velero-plugin-nacflow\).*install it.*`)
	accepted := apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(accepted, NotNil)
	c.Check(accepted.Reason, Equals, v1alpha1.ReasonRestorePluginMissing)

	nar, rec, res, err := runCheck(c, true, ourPlugin, srv.URL, "")
	c.Assert(err, IsNil)
	c.Check(res.Output, DeepEquals, map[string]string{"items": "2", "excluded": "1"})
	cond := apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionRestoreItemsChecked)
	c.Assert(cond, NotNil)
	c.Check(cond.Reason, Equals, v1alpha1.ReasonItemsExcluded)
	c.Check(cond.Message, Matches, `1 of 2 items of Velero Backup b are beyond what ClusterRole admin allows in namespace team and are not restored: rolebindings.rbac.authorization.k8s.io team/to-root: RoleBinding to-root binds ClusterRole cluster-admin.*`)
	c.Check(<-rec.Events, Matches, `Warning ItemsExcluded 1 of 2 items .*`)

	nar, _, _, err = runCheck(c, true, ourPlugin, srv.URL, "refuse")
	c.Check(engine.IsTerminal(err), Equals, true)
	accepted = apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(accepted, NotNil)
	c.Check(accepted.Reason, Equals, v1alpha1.ReasonItemsExcluded)
	c.Check(accepted.Message, Matches, `1 of 2 items .*to-root.*: refusing the whole restore \(onExcluded: refuse\)`)

	nar, _, _, err = runCheck(c, true, ourPlugin, clean.URL, "refuse")
	c.Assert(err, IsNil)
	cond = apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionRestoreItemsChecked)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionTrue)
	c.Check(cond.Message, Equals, "1 items of Velero Backup b checked: all within what ClusterRole admin allows in namespace team")
}

// TestRestoreCarriesSettings: the Velero Restore carries the tenant role
// and admin-owned resources for the plugin when they are not the defaults,
// and OADP's metadata alone when they are.
func (s *CheckRestoreItemsSuite) TestRestoreCarriesSettings(c *C) {
	for _, t := range []struct {
		role  string
		owned []schema.GroupResource
		want  map[string]string
	}{
		{restorepolicy.DefaultTenantRole, restorepolicy.DefaultAdminOwned, map[string]string{}},
		{"restorer", []schema.GroupResource{{Resource: "resourcequotas"}, {Group: "networking.k8s.io", Resource: "networkpolicies"}}, map[string]string{
			restorepolicy.TenantRoleAnnotation: "restorer", restorepolicy.AdminOwnedAnnotation: "resourcequotas,networkpolicies.networking.k8s.io"}},
	} {
		scheme := runtime.NewScheme()
		c.Assert(velerov1.AddToScheme(scheme), IsNil)
		cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "oadp",
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "team"}}}).Build()
		nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team"},
			Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nab"}}}
		// As ValidateRestoreSpec recorded it.
		nar.Status.VeleroRestore = &v1alpha1.VeleroRestore{Spec: nar.Spec.RestoreSpec.DeepCopy()}
		op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1", Client: cl, APIReader: cl}
		f := bind(&CreateVeleroRestore{tools: tools{recent: newRecentCreates()}, restoreRules: restoreRules{tenantRole: t.role, adminOwned: t.owned}})
		_, err := f.Run(context.Background(), op, &CreateVeleroRestoreArgs{BackupName: "b"})
		c.Assert(err, IsNil)
		r := &velerov1.Restore{}
		c.Assert(cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: v1alpha1.NACObjectName("team", "back", "uuid-1")}, r), IsNil)
		got := map[string]string{}
		for _, k := range []string{restorepolicy.TenantRoleAnnotation, restorepolicy.AdminOwnedAnnotation} {
			if v, ok := r.Annotations[k]; ok {
				got[k] = v
			}
		}
		c.Check(got, DeepEquals, t.want, Commentf(t.role))
		c.Check(r.Annotations[v1alpha1.NarOriginNamespaceAnnotation], Equals, "team")
	}
}

const (
	checkedCM      = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"},"data":{"n":"1"}}`
	checkedChanged = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"},"data":{"n":"1","injected":"yes"}}`
	checkedBinding = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"evil","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"mallory"}]}`
)

// verifiedTarball is the backup as Velero wrote it and nacflow verified it.
func verifiedTarball(c *C) []byte {
	return tarball(c,
		"resources/configmaps/namespaces/team/cm.json", checkedCM,
		"resources/configmaps/v1-preferredversion/namespaces/team/cm.json", checkedCM,
		"resources/configmaps/namespaces/team/other.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"team"},"data":{"f":1.5,"u":"ü"}}`)
}

// recordOfTarball is the record VerifyBackupContents makes of body.
func recordOfTarball(c *C, body []byte) itemdigest.Set {
	srv := serve(body)
	defer srv.Close()
	set, large, why := digestContents(context.Background(), loopbackStore, srv.URL)
	c.Assert(why, Equals, "")
	c.Assert(large, Equals, 0)
	return set
}

// TestCheckContentsVerified: with a record, an item one of whose copies is
// not as recorded, or that the record does not hold, is named; an item
// Velero could not decode is no item it restores.
func (s *CheckRestoreItemsSuite) TestCheckContentsVerified(c *C) {
	set := recordOfTarball(c, verifiedTarball(c))
	p := restorepolicy.Policy{Namespace: "team", Bound: checkBound, AdminOwned: restorepolicy.DefaultAdminOwned}
	for _, t := range []struct {
		body    []byte
		changed []string
	}{
		{verifiedTarball(c), nil},
		{tarball(c,
			"resources/configmaps/namespaces/team/cm.json", checkedCM,
			"resources/configmaps/v1-preferredversion/namespaces/team/cm.json", checkedChanged,
			"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/evil.json", checkedBinding,
			"resources/configmaps/namespaces/team/broken.json", `{"metadata":{"name":"no-kind","namespace":"team"}}`,
			"resources/configmaps/namespaces/other/elsewhere.json", checkedChanged),
			[]string{"configmaps team/cm", "rolebindings.rbac.authorization.k8s.io team/evil"}},
	} {
		srv := serve(t.body)
		_, _, changed, err := checkContents(context.Background(), loopbackStore, srv.URL, p, restoreSkips(&v1alpha1.NonAdminRestore{}), checkLookup(), &set)
		srv.Close()
		c.Assert(err, IsNil)
		c.Check(changed, DeepEquals, t.changed)
	}
}

// runVerifiedCheck runs CheckRestoreItems for NonAdminRestore team/back,
// asked for by alice (a requester nacflow's webhook recorded, when
// requested), of Velero Backup b (UID backup-uid) kept in a tenant's
// bucket whose contents url serves, with record (nil: none) as nacflow's
// record of its items.
func runVerifiedCheck(c *C, url string, requested bool, verified *itemdigest.Manifest) (*v1alpha1.NonAdminRestore, engine.Result, error) {
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team", UID: "u1", CreationTimestamp: metav1.Now()},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nab"}}}
	signer, err := requester.NewSigner(bytes.Repeat([]byte("k"), requester.MinKeyLength))
	c.Assert(err, IsNil)
	if requested {
		nar.Annotations, err = signer.Annotations("NonAdminRestore", nar, requester.Record{User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
			At: nar.CreationTimestamp, Spec: v1alpha1.SpecHash(nar.Spec.RestoreSpec)})
		c.Assert(err, IsNil)
	}
	op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1"}
	labels, annotations := op.OwnerMeta()
	name := v1alpha1.NACObjectName("team", "back", "uuid-1")
	meta := metav1.ObjectMeta{Name: name, Namespace: "oadp", Labels: labels, Annotations: annotations, CreationTimestamp: metav1.Now()}
	scheme := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(scheme), IsNil)
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Rules: checkBound},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: checkBound[:1]},
		&velerov1.ServerStatusRequest{ObjectMeta: meta, Status: velerov1.ServerStatusRequestStatus{Phase: velerov1.ServerStatusRequestPhaseProcessed, Plugins: ourPlugin}},
		&velerov1.DownloadRequest{ObjectMeta: meta, Status: velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: url}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "oadp", UID: "backup-uid"}, Spec: velerov1.BackupSpec{StorageLocation: "team-loc"}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "team-loc", Namespace: "oadp", Labels: map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "loc-uuid"}}},
	}
	if verified != nil {
		objs = append(objs, verified.ConfigMap(metav1.ObjectMeta{Name: itemdigest.Name("b"), Namespace: "oadp",
			Labels: map[string]string{v1alpha1.NabOriginNACUUIDLabel: "nab-uuid"}, Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "team"}}))
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	op.Client, op.APIReader = cl, cl
	// alice may do what the tenant role allows in team, and create no
	// Velero Restore (she is a tenant).
	review := func(_ context.Context, sar *authorizationv1.SubjectAccessReview) error {
		sar.Status.Allowed = sar.Spec.ResourceAttributes != nil && sar.Spec.ResourceAttributes.Namespace == "team"
		return nil
	}
	f := bind(&CheckRestoreItems{tools: tools{recorder: record.NewFakeRecorder(10), recent: newRecentCreates(), store: loopbackStore}, enabled: true,
		restoreRules: restoreRules{tenantRole: "admin", adminOwned: restorepolicy.DefaultAdminOwned, requesters: Requesters{Signer: signer, Review: review}}})
	res, err := f.Run(context.Background(), op, &CheckRestoreItemsArgs{BackupName: "b"})
	return nar, res, err
}

// TestRunRestoresOnlyWhatWasVerified: from a tenant's bucket, as a known
// requester, a backup as nacflow verified it is checked and its record
// named for the Velero Restore; one item changed and one added since, and
// the whole restore is refused naming them; no record, or a record of no
// digests, refuses it naming why. Without a known requester nothing
// changes.
func (s *CheckRestoreItemsSuite) TestRunRestoresOnlyWhatWasVerified(c *C) {
	verified := verifiedTarball(c)
	record := &itemdigest.Manifest{Backup: "b", BackupUID: "backup-uid", Set: recordOfTarball(c, verified)}
	same := serve(verified)
	defer same.Close()
	changed := serve(tarball(c,
		"resources/configmaps/namespaces/team/cm.json", checkedChanged,
		"resources/configmaps/v1-preferredversion/namespaces/team/cm.json", checkedChanged,
		"resources/configmaps/namespaces/team/other.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"team"},"data":{"f":1.5,"u":"ü"}}`,
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/evil.json", checkedBinding))
	defer changed.Close()

	nar, res, err := runVerifiedCheck(c, same.URL, true, record)
	c.Assert(err, IsNil)
	c.Check(res.Output, DeepEquals, map[string]string{"items": "2", "excluded": "0", "verifiedItems": "b-verified-items"})
	cond := apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionRestoreItemsChecked)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionTrue)
	c.Check(cond.Message, Equals, "2 items of Velero Backup b checked: all within what ClusterRole admin allows in namespace team and alice may do there, each as nacflow verified it")

	// alice may create the RoleBinding: only the record stops it.
	nar, _, err = runVerifiedCheck(c, changed.URL, true, record)
	c.Check(engine.IsTerminal(err), Equals, true)
	accepted := apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(accepted, NotNil)
	c.Check(accepted.Status, Equals, metav1.ConditionFalse)
	c.Check(accepted.Reason, Equals, v1alpha1.ReasonItemsExcluded)
	c.Check(accepted.Message, Equals, "2 items of Velero Backup b changed since nacflow verified it: configmaps team/cm; rolebindings.rbac.authorization.k8s.io team/evil: "+
		"refusing the whole restore (the backup is kept in a bucket another editor of the namespace may write, and nacflow restores from it as alice only what it verified)")
	cond = apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionRestoreItemsChecked)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)

	for _, t := range []struct {
		record *itemdigest.Manifest
		why    string
	}{
		{nil, `nacflow holds no record of the items of Velero Backup b \(no ConfigMap oadp/b-verified-items\): it was not verified by nacflow, or was verified before nacflow recorded item digests`},
		{&itemdigest.Manifest{Backup: "b", BackupUID: "backup-uid", Unrecorded: "the backup holds more than 60000 distinct items: nacflow records the digests of at most 60000"},
			`nacflow recorded no item digests for Velero Backup b when it verified it: the backup holds more than 60000 distinct items: .*`},
		{&itemdigest.Manifest{Backup: "b", BackupUID: "an-older-b", Set: record.Set}, `ConfigMap oadp/b-verified-items records the items of another Velero Backup b .*`},
	} {
		nar, _, err = runVerifiedCheck(c, same.URL, true, t.record)
		c.Check(engine.IsTerminal(err), Equals, true, Commentf(t.why))
		accepted = apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionAccepted)
		c.Assert(accepted, NotNil)
		c.Check(accepted.Reason, Equals, v1alpha1.ReasonItemsExcluded)
		c.Check(accepted.Message, Matches, `Velero Backup b is kept in a bucket another editor of the namespace may write, and nacflow restores from such a bucket as alice only the items it verified: `+
			t.why+`: refusing to restore`)
	}

	// No requester known: as before (the tenant role bounds the restore).
	nar, res, err = runVerifiedCheck(c, changed.URL, false, nil)
	c.Assert(err, IsNil)
	c.Check(res.Output, DeepEquals, map[string]string{"items": "3", "excluded": "0"})
	c.Check(apimeta.FindStatusCondition(nar.Status.Conditions, v1alpha1.ConditionAccepted), IsNil)
}

// agreeItem is an item of TestJudgesAgree's backup: its tarball path and
// JSON, and its key ("<resource> <name>").
type agreeItem struct{ path, key, js string }

// agreeItems are the backup's items, in Velero's restore order (Roles
// before RoleBindings).
var agreeItems = []agreeItem{
	{"resources/roles.rbac.authorization.k8s.io/namespaces/team/reader.json", "roles.rbac.authorization.k8s.io reader",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"reader","namespace":"team"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["create"]}]}`},
	{"resources/configmaps/namespaces/team/cm.json", "configmaps cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"},"data":{"k":"v"}}`},
	{"resources/configmaps/namespaces/team/moved.json", "configmaps moved", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"moved","namespace":"team"}}`},
	{"resources/secrets/namespaces/team/creds.json", "secrets creds", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","namespace":"team"}}`},
	{"resources/secrets/namespaces/team/kind.json", "secrets kind", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"kind","namespace":"team"}}`},
	{"resources/resourcequotas/namespaces/team/quota.json", "resourcequotas quota", `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"quota","namespace":"team"}}`},
	{"resources/persistentvolumes/cluster/root.json", "persistentvolumes root",
		`{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"root"},"spec":{"hostPath":{"path":"/"},"claimRef":{"namespace":"team","name":"data"}}}`},
	{"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-edit.json", "rolebindings.rbac.authorization.k8s.io to-edit",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"to-edit","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"u"}]}`},
	{"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-root.json", "rolebindings.rbac.authorization.k8s.io to-root",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"to-root","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","name":"u"}]}`},
	{"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-reader.json", "rolebindings.rbac.authorization.k8s.io to-reader",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"to-reader","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[{"kind":"User","name":"u"}]}`},
}

// agreeBound is the tenant role of TestJudgesAgree: ConfigMaps and
// Secrets, Roles and RoleBindings, and no ResourceQuota.
var agreeBound = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"create", "get", "update", "patch"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"create", "get"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"get"}},
}

// agreeCase is a restore of TestJudgesAgree's backup.
type agreeCase struct {
	about string
	// requester: alice asked for it (nacflow's webhook recorded her); she
	// may do anything in team and other but touch Secrets.
	requester bool
	// target is the namespaceMapping of team ("": none).
	target string
	// tenantBucket: the backup is kept in a bucket the tenant writes,
	// nacflow verified agreeItems, and since then cm was changed and
	// added was written into the bucket.
	tenantBucket bool
	// modifiers are the admin's enforced resource modifiers (rules).
	modifiers string
	// allowed are the keys of the items restored; every other is not.
	allowed []string
}

// TestJudgesAgree: the pre-check (CheckRestoreItems' judgeRestore and
// judgeContents), the preview (PreviewRestore) and velero-plugin-nacflow
// (restoreaction, on the Velero Restore CreateVeleroRestore makes) decide
// the same on every item of a backup — kinds the tenant role allows or
// not, RBAC escalation, admin-owned kinds, a cluster-scoped
// PersistentVolume — with or without a known requester, into another
// namespace, under the admin's modifiers that change an item's namespace
// or kind, and from a tenant's bucket with items in and out of nacflow's
// record of verified items; each decides as expected.
func (s *CheckRestoreItemsSuite) TestJudgesAgree(c *C) {
	const (
		cm, moved, creds, kind = "configmaps cm", "configmaps moved", "secrets creds", "secrets kind"
		reader, toEdit, toRead = "roles.rbac.authorization.k8s.io reader", "rolebindings.rbac.authorization.k8s.io to-edit", "rolebindings.rbac.authorization.k8s.io to-reader"
		enforced               = "- conditions: {groupResource: configmaps, resourceNameRegex: '^moved$'}\n  patches: [{operation: replace, path: /metadata/namespace, value: '\"other\"'}]\n" +
			"- conditions: {groupResource: secrets, resourceNameRegex: '^kind$'}\n  patches: [{operation: replace, path: /kind, value: '\"ConfigMap\"'}]\n" +
			"- conditions: {groupResource: configmaps, resourceNameRegex: '^cm$'}\n  mergePatches: [{patchData: '{\"metadata\": {\"labels\": {\"restored\": \"yes\"}}}'}]\n"
	)
	for _, t := range []agreeCase{
		{about: "the tenant role alone", allowed: []string{cm, moved, creds, kind, reader, toEdit, toRead}},
		{about: "as alice", requester: true, allowed: []string{cm, moved, reader, toEdit, toRead}},
		{about: "as alice, into namespace other", requester: true, target: "other", allowed: []string{cm, moved, reader, toEdit, toRead}},
		{about: "under the admin's modifiers", modifiers: enforced, allowed: []string{cm, creds, reader, toEdit, toRead}},
		{about: "as alice, from her bucket", requester: true, tenantBucket: true, allowed: []string{moved, reader, toEdit, toRead}},
	} {
		items := agreeItems
		if t.tenantBucket {
			items = append(slices.Clone(agreeItems), agreeItem{"resources/configmaps/namespaces/team/added.json", "configmaps added",
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"added","namespace":"team"}}`})
			items[1].js = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"},"data":{"k":"changed"}}`
		}
		var files []string
		for _, it := range items {
			files = append(files, it.path, it.js)
		}
		srv := serve(tarball(c, files...))
		e := newAgreeEnv(c, t, srv.URL)
		got := map[string]map[string]bool{"pre-check": e.precheck(c, items), "preview": e.preview(c), "plugin": e.plugin(c, items)}
		srv.Close()
		for path, verdicts := range got {
			c.Check(verdicts, HasLen, len(items), Commentf("%s: %s judged %v", t.about, path, verdicts))
			for _, it := range items {
				v, ok := verdicts[it.key]
				c.Check(ok && v == slices.Contains(t.allowed, it.key), Equals, true,
					Commentf("%s: %s on %s: judged %v, allowed %v", t.about, path, it.key, ok, v))
			}
		}
	}
}

// agreeEnv is the cluster of one agreeCase.
type agreeEnv struct {
	cl    client.WithWatch
	nar   *v1alpha1.NonAdminRestore
	rules restoreRules
	url   string
	// target is where the restore creates items.
	target string
}

// aliceMay answers alice's SubjectAccessReviews: anything in team and
// other but Secrets.
func aliceMay(sar *authorizationv1.SubjectAccessReview) bool {
	a := sar.Spec.ResourceAttributes
	return sar.Spec.User == "alice" && a != nil && (a.Namespace == "team" || a.Namespace == "other") && a.Resource != "secrets"
}

func newAgreeEnv(c *C, t agreeCase, url string) *agreeEnv {
	spec := &velerov1.RestoreSpec{BackupName: "nab"}
	if t.target != "" {
		spec.NamespaceMapping = map[string]string{"team": t.target}
	}
	accepted := spec.DeepCopy()
	if t.modifiers != "" {
		accepted.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "enforced"}
	}
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team", UID: "u1", CreationTimestamp: metav1.Now()},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: spec}, Status: v1alpha1.NonAdminRestoreStatus{VeleroRestore: &v1alpha1.VeleroRestore{Spec: accepted}}}
	signer, err := requester.NewSigner(bytes.Repeat([]byte("k"), requester.MinKeyLength))
	c.Assert(err, IsNil)
	if t.requester {
		nar.Annotations, err = signer.Annotations("NonAdminRestore", nar, requester.Record{User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
			At: nar.CreationTimestamp, Spec: v1alpha1.SpecHash(nar.Spec.RestoreSpec)})
		c.Assert(err, IsNil)
	}
	op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1"}
	labels, annotations := op.OwnerMeta()
	location := "default"
	if t.tenantBucket {
		location = "team-loc"
	}
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Rules: agreeBound},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: agreeBound[:1]},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "oadp", UID: "backup-uid", Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "team"}},
			Spec: velerov1.BackupSpec{StorageLocation: location}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "oadp"}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "team-loc", Namespace: "oadp", Labels: map[string]string{v1alpha1.NabslOriginNACUUIDLabel: "loc-uuid"}}},
		&velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NACObjectName("team", "back", "uuid-1"), Namespace: "oadp", Labels: labels, Annotations: annotations,
			CreationTimestamp: metav1.Now()}, Status: velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: url}},
	}
	if t.modifiers != "" {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "enforced", Namespace: "oadp"},
			Data: map[string]string{"m.yaml": "version: v1\nresourceModifierRules:\n" + t.modifiers}})
	}
	if t.tenantBucket {
		// nacflow verified the backup as agreeItems hold it.
		var ds []itemdigest.Digest
		for _, it := range agreeItems {
			d, err := itemdigest.Of([]byte(it.js))
			c.Assert(err, IsNil)
			ds = append(ds, d)
		}
		set, err := itemdigest.NewSet(ds)
		c.Assert(err, IsNil)
		objs = append(objs, itemdigest.Manifest{Backup: "b", BackupUID: "backup-uid", Set: set}.ConfigMap(metav1.ObjectMeta{Name: itemdigest.Name("b"), Namespace: "oadp",
			Labels: map[string]string{v1alpha1.NabOriginNACUUIDLabel: "nab-uuid"}, Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "team"}}))
	}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithKind("Secret"),
		corev1.SchemeGroupVersion.WithKind("ResourceQuota"), rbacv1.SchemeGroupVersion.WithKind("Role"), rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		velerov1.SchemeGroupVersion.WithKind("Backup"), velerov1.SchemeGroupVersion.WithKind("BackupStorageLocation"), velerov1.SchemeGroupVersion.WithKind("Restore"),
		velerov1.SchemeGroupVersion.WithKind("DownloadRequest")} {
		mapper.Add(gvk, apimeta.RESTScopeNamespace)
	}
	for _, gvk := range []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("PersistentVolume"), rbacv1.SchemeGroupVersion.WithKind("ClusterRole")} {
		mapper.Add(gvk, apimeta.RESTScopeRoot)
	}
	scheme := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(scheme), IsNil)
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	cl := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		// The plugin sends its SubjectAccessReviews with the client.
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				sar.Status.Allowed = aliceMay(sar)
				return nil
			}
			return cl.Create(ctx, obj, opts...)
		}}).Build()
	review := func(_ context.Context, sar *authorizationv1.SubjectAccessReview) error {
		sar.Status.Allowed = aliceMay(sar)
		return nil
	}
	target := t.target
	if target == "" {
		target = "team"
	}
	return &agreeEnv{cl: cl, nar: nar, url: url, target: target,
		rules: restoreRules{tenantRole: "admin", adminOwned: restorepolicy.DefaultAdminOwned, requesters: Requesters{Signer: signer, Review: review}}}
}

// op is an operation on a copy of the NonAdminRestore.
func (e *agreeEnv) op() (*engine.Operation, *v1alpha1.NonAdminRestore) {
	nar := e.nar.DeepCopy()
	return &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1", Client: e.cl, APIReader: e.cl}, nar
}

// precheck judges the contents as CheckRestoreItems does: the verdict of
// each item by key (excluded, or changed since nacflow verified it: not
// restored).
func (e *agreeEnv) precheck(c *C, items []agreeItem) map[string]bool {
	op, nar := e.op()
	rj, refusal, err := e.rules.judgeRestore(context.Background(), op, nar, "b")
	c.Assert(err, IsNil)
	c.Assert(refusal, IsNil)
	total, excluded, changed, err := judgeContents(context.Background(), loopbackStore, e.url, rj, restoreSkips(nar))
	c.Assert(err, IsNil)
	c.Check(total, Equals, len(items))
	got := map[string]bool{}
	for _, it := range items {
		got[it.key] = true
	}
	for _, x := range append(excluded, changed...) {
		key, _, _ := strings.Cut(x, ": ")
		res, ns, _ := strings.Cut(key, " ")
		got[res+" "+path.Base(ns)] = false
	}
	return got
}

// preview runs PreviewRestore: the verdict of each item listed (excluded:
// not restored).
func (e *agreeEnv) preview(c *C) map[string]bool {
	op, nar := e.op()
	f := bind(&PreviewRestore{tools: tools{recent: newRecentCreates(), store: loopbackStore}, restoreRules: e.rules})
	_, err := f.Run(context.Background(), op, &PreviewRestoreArgs{BackupName: "b"})
	c.Assert(err, IsNil)
	got := map[string]bool{}
	for _, it := range nar.Status.Preview.Items {
		got[it.Resource+" "+it.Name] = it.Outcome != v1alpha1.PreviewExcluded
	}
	return got
}

// plugin runs CreateVeleroRestore, then velero-plugin-nacflow's action on
// every item of the Velero Restore made, as Velero hands them to it (an
// item the action allows is created, as Velero does: a RoleBinding may
// bind a Role restored before it). The verdict of each item: restored
// (neither skipped nor failed).
func (e *agreeEnv) plugin(c *C, items []agreeItem) map[string]bool {
	op, nar := e.op()
	f := bind(&CreateVeleroRestore{tools: tools{recent: newRecentCreates()}, restoreRules: e.rules})
	_, err := f.Run(context.Background(), op, &CreateVeleroRestoreArgs{BackupName: "b", BackupUID: "backup-uid"})
	c.Assert(err, IsNil)
	r := &velerov1.Restore{}
	c.Assert(e.cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: nar.Status.VeleroRestore.Name}, r), IsNil)
	log := logrus.New()
	log.SetOutput(io.Discard)
	act := restoreaction.New(log, func() (client.Client, error) { return e.cl, nil })
	got := map[string]bool{}
	for _, it := range items {
		u := &unstructured.Unstructured{}
		c.Assert(json.Unmarshal([]byte(it.js), &u.Object), IsNil)
		out, err := act.Execute(&velero.RestoreItemActionExecuteInput{Item: u, ItemFromBackup: u.DeepCopy(), Restore: r})
		got[it.key] = err == nil && !out.SkipRestore
		if got[it.key] && u.GetKind() == "Role" {
			u.SetNamespace(e.target)
			c.Assert(e.cl.Create(context.Background(), u), IsNil)
		}
	}
	return got
}
