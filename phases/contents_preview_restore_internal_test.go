package phases

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/text"
)

type PreviewRestoreSuite struct{}

var _ = Suite(&PreviewRestoreSuite{})

// A backup of three ConfigMaps, then one deleted, one changed, one new:
// the preview tells create, skip (or update naming the changed key), and
// leaves the new one alone; what the tenant role forbids and what the
// restore's filters leave out are excluded, the rule named.
func (s *PreviewRestoreSuite) TestRun(c *C) {
	cm := func(name, value string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"team","uid":"old","resourceVersion":"7"},"data":{"k":"` + value + `"}}`
	}
	srv := serve(tarball(c,
		"resources/configmaps/namespaces/team/gone.json", cm("gone", "1"),
		"resources/configmaps/namespaces/team/changed.json", cm("changed", "before"),
		"resources/configmaps/namespaces/team/same.json", cm("same", "1"),
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team/to-root.json", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"to-root","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`,
		"resources/resourcequotas/namespaces/team/q.json", `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"team"}}`,
		"resources/events/namespaces/team/e.json", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"team"}}`,
	))
	defer srv.Close()
	live := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "changed", Namespace: "team", UID: "new", Labels: map[string]string{velerov1.RestoreNameLabel: "r1"}}, Data: map[string]string{"k": "after"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "same", Namespace: "team", UID: "x"}, Data: map[string]string{"k": "1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "added", Namespace: "team"}, Data: map[string]string{"k": "new"}},
	}

	nar, res, err := runPreview(c, srv.URL, &velerov1.RestoreSpec{BackupName: "nab", ExcludedResources: []string{"resourcequotas"}}, live...)
	c.Assert(err, IsNil)
	pv := nar.Status.Preview
	c.Assert(pv, NotNil)
	c.Check(pv.Source, Equals, v1alpha1.PreviewFromContents)
	c.Check([]int32{pv.Total, pv.Create, pv.Skip, pv.Update, pv.Excluded, pv.Unknown}, DeepEquals, []int32{5, 1, 2, 0, 2, 0})
	c.Check(res.Output, DeepEquals, map[string]string{"total": "5", "create": "1", "skip": "2", "update": "0", "excluded": "2"})
	c.Check(pv.Message, Equals, "5 items of Velero Backup b for namespace team: 1 create, 2 skip, 0 update, 2 excluded")
	c.Check(outcomes(pv), DeepEquals, []string{
		"create configmaps gone",
		"excluded resourcequotas q: spec.restoreSpec.excludedResources names resourcequotas",
		"excluded rolebindings.rbac.authorization.k8s.io to-root: RoleBinding to-root binds ClusterRole cluster-admin, which grants what the tenant role does not hold: * *.*",
		"skip configmaps changed: exists and differs; existingResourcePolicy none leaves it as it is [data.k]",
		"skip configmaps same: exists, as backed up",
	})

	nar, _, err = runPreview(c, srv.URL, &velerov1.RestoreSpec{BackupName: "nab", ExistingResourcePolicy: velerov1.PolicyTypeUpdate,
		IncludedResources: []string{"configmaps"}}, live...)
	c.Assert(err, IsNil)
	pv = nar.Status.Preview
	c.Check([]int32{pv.Total, pv.Create, pv.Skip, pv.Update, pv.Excluded}, DeepEquals, []int32{5, 1, 1, 1, 2})
	c.Check(outcomes(pv)[0], Equals, "update configmaps changed: [data.k]", Commentf("updates are listed first"))
	c.Check(outcomes(pv)[2], Matches, "excluded resourcequotas q: spec.restoreSpec.includedResources does not name resourcequotas")
}

// A label selector excludes the items it does not match; a backup Velero
// does not serve in time fails the preview, saying so; no DownloadRequest
// is left behind either way.
func (s *PreviewRestoreSuite) TestSelectorsAndFailures(c *C) {
	srv := serve(tarball(c,
		"resources/configmaps/namespaces/team/a.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"team","labels":{"app":"web"}}}`,
		"resources/configmaps/namespaces/team/b.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"team"}}`,
	))
	defer srv.Close()
	nar, _, err := runPreview(c, srv.URL, &velerov1.RestoreSpec{BackupName: "nab",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}})
	c.Assert(err, IsNil)
	c.Check(outcomes(nar.Status.Preview), DeepEquals, []string{
		"create configmaps a",
		"excluded configmaps b: its labels do not match spec.restoreSpec.labelSelector",
	})

	// An item of the tenant's bucket that claims another kind than its
	// place reads nothing: no oracle on the namespace's Secrets or on
	// cluster-scoped objects.
	forged := serve(tarball(c,
		"resources/configmaps/namespaces/team/creds.json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","namespace":"team"}}`,
		"resources/configmaps/namespaces/team/root.json", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"cluster-admin","namespace":"team"}}`,
		"resources/configmaps/namespaces/team/gadget.json", `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"gadget","namespace":"team"}}`,
	))
	defer forged.Close()
	nar, _, err = runPreview(c, forged.URL, &velerov1.RestoreSpec{BackupName: "nab"},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team"}})
	c.Assert(err, IsNil)
	c.Check(outcomes(nar.Status.Preview), DeepEquals, []string{
		"unknown configmaps creds: its apiVersion and kind (/v1, Kind=Secret) are not those of its place in the backup (configmaps)",
		"unknown configmaps gadget: the cluster does not serve Gadget.example.com",
		"unknown configmaps root: its apiVersion and kind (rbac.authorization.k8s.io/v1, Kind=ClusterRole) are not those of its place in the backup (configmaps)",
	})

	broken := serve([]byte("not gzip"))
	defer broken.Close()
	nar, _, err = runPreview(c, broken.URL, &velerov1.RestoreSpec{BackupName: "nab"})
	c.Check(engine.IsTerminal(err), Equals, true)
	c.Check(err, ErrorMatches, "reading the contents of Backup b: .*")
	c.Check(nar.Status.Preview.Message, Matches, "reading the contents of Backup b: .*")
}

// Only what differs beyond metadata noise and status counts as changed.
func (s *PreviewRestoreSuite) TestChangedFields(c *C) {
	backedUp := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "uid": "1", "resourceVersion": "1", "labels": map[string]any{"a": "1"}},
		"data":     map[string]any{"k": "1", "same": "s"}, "status": map[string]any{"x": 1}}
	live := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "uid": "2", "resourceVersion": "9", "labels": map[string]any{"a": "2", velerov1.BackupNameLabel: "b"},
			"annotations":   map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
			"managedFields": []any{map[string]any{"manager": "m"}}},
		"data": map[string]any{"k": "2", "same": "s", "extra": "e"}, "status": map[string]any{"x": 2}}
	c.Check(changedFields(backedUp, live), DeepEquals, []string{"data.extra", "data.k", "metadata.labels.a"})
	c.Check(changedFields(backedUp, backedUp), HasLen, 0)
	c.Check(backedUp["metadata"].(map[string]any)["uid"], Equals, "1", Commentf("the inputs are not changed"))
	many := map[string]any{}
	for i := range 30 {
		many[string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	c.Check(changedFields(map[string]any{"data": many}, map[string]any{"data": map[string]any{}}), HasLen, maxPreviewFields)
	c.Check(changedFields(map[string]any{"data": many}, map[string]any{}), DeepEquals, []string{"data"})
	// Whatever a tenant's bucket holds, nothing panics.
	c.Check(changedFields(map[string]any{"metadata": "not a map"}, map[string]any{"metadata": map[string]any{"labels": []any{1}}}), DeepEquals, []string{"metadata"})
}

// cut keeps whole runes and marks the cut.
func (s *PreviewRestoreSuite) TestCut(c *C) {
	c.Check(text.Truncate("short", 10), Equals, "short")
	c.Check(text.Truncate("ééééé", 7), Equals, "éé…")
	c.Check(len(text.Truncate("ééééé", 7)) <= 7, Equals, true)
}

// outcomes lists pv's items as "<outcome> <resource> <name>[: reason] [fields]".
func outcomes(pv *v1alpha1.RestorePreview) []string {
	var out []string
	for _, it := range pv.Items {
		s := it.Outcome + " " + it.Resource + " " + it.Name
		if it.Reason != "" {
			s += ": " + it.Reason
		}
		if len(it.Fields) > 0 {
			if it.Reason == "" {
				s += ":"
			}
			s += " " + "[" + join(it.Fields) + "]"
		}
		out = append(out, s)
	}
	return out
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// runPreview runs PreviewRestore for the NonAdminRestore team/back with a
// processed DownloadRequest serving url and the live objects given, and
// checks the request is gone afterwards.
func runPreview(c *C, url string, spec *velerov1.RestoreSpec, live ...client.Object) (*v1alpha1.NonAdminRestore, engine.Result, error) {
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team", UID: "u1"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: spec, Preview: true}}
	op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1"}
	labels, annotations := op.OwnerMeta()
	name := v1alpha1.NACObjectName("team", "back", "uuid-1")
	meta := metav1.ObjectMeta{Name: name, Namespace: "oadp", Labels: labels, Annotations: annotations, CreationTimestamp: metav1.Now()}
	scheme := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(scheme), IsNil)
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	objs := append([]client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Rules: checkBound},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&velerov1.DownloadRequest{ObjectMeta: meta, Status: velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: url}},
	}, live...)
	mapper := apimeta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope apimeta.RESTScope
	}{
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), apimeta.RESTScopeNamespace},
		{corev1.SchemeGroupVersion.WithKind("Secret"), apimeta.RESTScopeNamespace},
		{corev1.SchemeGroupVersion.WithKind("ResourceQuota"), apimeta.RESTScopeNamespace},
		{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), apimeta.RESTScopeNamespace},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), apimeta.RESTScopeRoot},
	} {
		mapper.Add(k.gvk, k.scope)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).Build()
	op.Client, op.APIReader = cl, cl
	f := bind(&PreviewRestore{tools: tools{recent: newRecentCreates(), store: loopbackStore}, restoreRules: restoreRules{tenantRole: "admin",
		adminOwned: []schema.GroupResource{}}})
	res, err := f.Run(context.Background(), op, &PreviewRestoreArgs{BackupName: "b"})
	c.Check(apierrors.IsNotFound(cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: name}, &velerov1.DownloadRequest{})), Equals, true,
		Commentf("the DownloadRequest is deleted"))
	return nar, res, err
}

// FuzzPreviewItem: whatever an item of a tenant's bucket holds, the
// preview's filters and comparison neither panic nor name more than
// maxPreviewFields fields.
func FuzzPreviewItem(f *testing.F) {
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"app":"web"}},"data":{"k":"1"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"1"},"data":{"k":"2"}}`)
	f.Add(`{"metadata":"x","status":[1]}`, `{"metadata":{"labels":null,"annotations":{"a":1}}}`)
	spec := &velerov1.RestoreSpec{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		OrLabelSelectors: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}}}
	filtered, err := restoreFilters(spec)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var x, y map[string]any
		if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil || x == nil || y == nil {
			return
		}
		_ = filtered(schema.GroupResource{Resource: "configmaps"}, x)
		if fields := changedFields(x, y); len(fields) > maxPreviewFields {
			t.Fatalf("%d fields", len(fields))
		}
		if fields := changedFields(x, x); len(fields) != 0 {
			t.Fatalf("an item differs from itself: %v", fields)
		}
	})
}

// Contents over args.maxContentsMiB are previewed from the resource list:
// the namespace's items counted, no outcome, and the message says so.
func (s *PreviewRestoreSuite) TestOverTheBound(c *C) {
	noise := make([]byte, 3<<20)
	_, _ = rand.Read(noise)
	big := serve(tarball(c, "resources/configmaps/namespaces/team/a.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"team"}}`,
		"resources/secrets/namespaces/team/noise.json", `{"data":"`+base64.StdEncoding.EncodeToString(noise)+`"}`))
	defer big.Close()
	var list bytes.Buffer
	gz := gzip.NewWriter(&list)
	_, _ = gz.Write([]byte(`{"v1/ConfigMap":["team/a","team/b"],"v1/Secret":["team/noise","other/x"],"v1/Namespace":["team"]}`))
	_ = gz.Close()
	listSrv := serve(list.Bytes())
	defer listSrv.Close()

	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team", UID: "u1"},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "nab"}, Preview: true}}
	op := &engine.Operation{Object: nar, OADPNamespace: "oadp", UUID: "uuid-1"}
	labels, annotations := op.OwnerMeta()
	name := v1alpha1.NACObjectName("team", "back", "uuid-1")
	request := func(name, url string) *velerov1.DownloadRequest {
		return &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "oadp", Labels: labels, Annotations: annotations, CreationTimestamp: metav1.Now()},
			Status: velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: url}}
	}
	scheme := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(scheme), IsNil)
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Rules: checkBound},
		request(name, big.URL), request(name+"-list", listSrv.URL)).Build()
	op.Client, op.APIReader = cl, cl
	f := bind(&PreviewRestore{tools: tools{recent: newRecentCreates(), store: loopbackStore}, restoreRules: restoreRules{tenantRole: "admin"}})
	res, err := f.Run(context.Background(), op, &PreviewRestoreArgs{BackupName: "b", MaxContentsMiB: 1})
	c.Assert(err, IsNil)
	pv := nar.Status.Preview
	c.Assert(pv, NotNil)
	c.Check(pv.Source, Equals, v1alpha1.PreviewFromResourceList)
	c.Check(pv.Total, Equals, int32(3))
	c.Check(pv.Items, HasLen, 0)
	c.Check(pv.Message, Equals, "the backup contents are larger than 1048576 bytes: its resource list holds 3 items of namespace team; outcomes are not computed (args.maxContentsMiB raises the bound)")
	c.Check(res.Output, DeepEquals, map[string]string{"total": "3"})
	for _, n := range []string{name, name + "-list"} {
		c.Check(apierrors.IsNotFound(cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: n}, &velerov1.DownloadRequest{})), Equals, true, Commentf("%s", n))
	}
}
