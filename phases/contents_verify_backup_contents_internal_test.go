package phases

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
)

type VerifyInternalSuite struct{}

var _ = Suite(&VerifyInternalSuite{})

// checkResourceList: namespaced items must be the tenant's; cluster-scoped
// ones only its Namespace and the volumes and definitions allowed.
func (s *VerifyInternalSuite) TestCheckResourceList(c *C) {
	allowed := map[string]bool{pvKey + " pv-mine": true, "crd widgets.example.com": true, "group gone.example.com": true}
	l := listOf(c, `{
		"v1/Namespace":          ["demo", "kube-system"],
		"v1/ConfigMap":          ["demo/a", "demo/b", "demo-other/c"],
		"apps/v1/Deployment":    ["demo/app"],
		"v1/PersistentVolume":   ["pv-mine", "pv-theirs"],
		"example.com/v1/Widget": ["demo/w"],
		"other.example.com/v1/Gadget": ["elsewhere/g"],
		"apiextensions.k8s.io/v1/CustomResourceDefinition": ["widgets.example.com", "gadgets.example.com", "things.gone.example.com"],
		"storage.k8s.io/v1/StorageClass":                   ["fast"],
		"rbac.authorization.k8s.io/v1/ClusterRole":         ["demo"]
	}`, "demo")
	c.Check(l.total, Equals, 15)
	c.Check(l.kinds, DeepEquals, map[string]bool{"v1/Namespace": false, "v1/ConfigMap": true, "apps/v1/Deployment": true,
		"v1/PersistentVolume": false, "example.com/v1/Widget": true, "other.example.com/v1/Gadget": false,
		"apiextensions.k8s.io/v1/CustomResourceDefinition": false, "storage.k8s.io/v1/StorageClass": false,
		"rbac.authorization.k8s.io/v1/ClusterRole": false})
	total, unexpected := l.check(allowed)
	c.Check(total, Equals, 7)
	c.Check(unexpected, DeepEquals, []string{
		"apiextensions.k8s.io/v1/CustomResourceDefinition gadgets.example.com",
		"other.example.com/v1/Gadget elsewhere/g",
		"rbac.authorization.k8s.io/v1/ClusterRole demo",
		"storage.k8s.io/v1/StorageClass fast",
		"v1/ConfigMap demo-other/c",
		"v1/Namespace kube-system",
		"v1/PersistentVolume pv-theirs",
	})
	for _, empty := range []string{`{}`, `null`, ` {"v1/ConfigMap": null} `} {
		l = listOf(c, empty, "demo")
		total, unexpected = l.check(nil)
		c.Check(l.total, Equals, 0)
		c.Check(total, Equals, 0)
		c.Check(unexpected, HasLen, 0)
	}
}

func (s *VerifyInternalSuite) TestSplitKey(c *C) {
	gv, kind := splitKey("apps/v1/Deployment")
	c.Check(gv, Equals, schema.GroupVersion{Group: "apps", Version: "v1"})
	c.Check(kind, Equals, "Deployment")
	gv, kind = splitKey("v1/ConfigMap")
	c.Check(gv, Equals, schema.GroupVersion{Version: "v1"})
	c.Check(kind, Equals, "ConfigMap")
}

// downloadResourceList reads a gzipped list and reports the store's
// refusals and corrupt data.
func (s *VerifyInternalSuite) TestDownloadResourceList(c *C) {
	var body []byte
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	_, _ = gz.Write([]byte(`{"v1/ConfigMap":["demo/a"]}`))
	c.Assert(gz.Close(), IsNil)

	body = buf.Bytes()
	list, err := downloadResourceList(context.Background(), loopbackStore, srv.URL, "demo")
	c.Assert(err, IsNil)
	c.Check(list.total, Equals, 1)
	c.Check(list.kinds, DeepEquals, map[string]bool{"v1/ConfigMap": true})

	status = http.StatusForbidden
	_, err = downloadResourceList(context.Background(), loopbackStore, srv.URL, "demo")
	c.Check(err, ErrorMatches, "the object store answered 403 Forbidden")

	status, body = http.StatusOK, []byte("not gzip")
	_, err = downloadResourceList(context.Background(), loopbackStore, srv.URL, "demo")
	c.Check(err, NotNil)
}

// listOf reads the resource list JSON of namespace ns and fails the test on
// an error.
func listOf(c *C, raw, ns string) *resourceList {
	l, err := readResourceList(strings.NewReader(raw), ns)
	c.Assert(err, IsNil, Commentf("%s", raw))
	return l
}

// A resource list comes from a bucket the tenant may write: every shape
// that is not Velero's is refused with what is wrong, and nothing grows with
// what the list holds.
func (s *VerifyInternalSuite) TestReadResourceListHostile(c *C) {
	long := strings.Repeat("x", maxListItemBytes+1)
	for raw, want := range map[string]string{
		`[]`:                                 `the resource list is not a JSON object of string lists: it starts with "\["`,
		`"x"`:                                `.*it starts with a string`,
		`{"v1/ConfigMap": "demo/a"}`:         `.*a string of "v1/ConfigMap"`,
		`{"v1/ConfigMap": {"a": 1}}`:         `.*"\{" of "v1/ConfigMap"`,
		`{"v1/ConfigMap": [1]}`:              `.*a number among the items of "v1/ConfigMap"`,
		`{"v1/ConfigMap": [["demo/a"]]}`:     `.*"\[" among the items of "v1/ConfigMap"`,
		`{"v1/ConfigMap": [null]}`:           `.*null among the items of "v1/ConfigMap"`,
		`{"v1/ConfigMap": ["demo/a"]`:        `decoding the resource list: unexpected EOF`,
		`{"v1/ConfigMap": ["demo/a"]} {}`:    `.*data after the list`,
		`{"` + long + `": []}`:               `.*a key of 513 bytes \(at most 512\)`,
		`{"v1/ConfigMap": ["` + long + `"]}`: `.*an item of "v1/ConfigMap" of 513 bytes \(at most 512\)`,
		``:                                   `decoding the resource list: unexpected EOF`,
	} {
		_, err := readResourceList(strings.NewReader(raw), "demo")
		c.Check(err, ErrorMatches, want, Commentf("%.80s", raw))
	}

	// Kinds and cluster-scoped items are counted as they come.
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i <= maxListKinds; i++ {
		fmt.Fprintf(&b, `"g%d.example.com/v1/K": ["demo/x"],`, i)
	}
	b.WriteString(`"v1/ConfigMap": []}`)
	_, err := readResourceList(strings.NewReader(b.String()), "demo")
	c.Check(err, ErrorMatches, `the resource list has more than 2000 kinds`)
	b.Reset()
	b.WriteString(`{"v1/PersistentVolume": [`)
	for i := 0; i <= maxClusterItems; i++ {
		fmt.Fprintf(&b, `"pv-%d",`, i)
	}
	b.WriteString(`"last"]}`)
	_, err = readResourceList(strings.NewReader(b.String()), "demo")
	c.Check(err, ErrorMatches, `the resource list has more than 10000 cluster-scoped items`)

	// A gzip bomb of namespaced items: read as a stream up to the byte bound,
	// keeping a count and ten names, then refused.
	pr, pw := io.Pipe()
	go func() {
		gz := gzip.NewWriter(pw)
		_, _ = io.WriteString(gz, `{"v1/ConfigMap": [`)
		item := []byte(`"other/abcdefghij",`)
		for written := 0; written <= maxResourceList; written += len(item) {
			if _, err := gz.Write(item); err != nil {
				break
			}
		}
		_ = gz.Close()
		_ = pw.Close()
	}()
	gz, err := gzip.NewReader(pr)
	c.Assert(err, IsNil)
	_, err = readResourceList(gz, "demo")
	c.Check(err, ErrorMatches, `the resource list is larger than 33554432 bytes`)
	_ = pr.CloseWithError(io.ErrClosedPipe)
}

// Strangers are named in sorted order, at most ten, quoted where they hold
// control characters, whatever order the list gives them in.
func (s *VerifyInternalSuite) TestResourceListShowsSmallest(c *C) {
	var b strings.Builder
	b.WriteString(`{"v1/Secret": [`)
	for i := 30; i >= 0; i-- {
		fmt.Fprintf(&b, `"other/s%02d",`, i)
	}
	b.WriteString(`"demo/mine", "other/line\nbreak"]}`)
	l := listOf(c, b.String(), "demo")
	unexpected, shown := l.check(nil)
	c.Check(l.total, Equals, 33)
	c.Check(unexpected, Equals, 32)
	c.Assert(shown, HasLen, maxListedItems)
	c.Check(shown[0], Equals, `"v1/Secret other/line\nbreak"`)
	c.Check(shown[1], Equals, "v1/Secret other/s00")
	c.Check(shown[9], Equals, "v1/Secret other/s08")
}

// verifyStore serves a backup's resource list and contents tarball.
func verifyStore(c *C, contents []byte) *httptest.Server {
	var list bytes.Buffer
	gz := gzip.NewWriter(&list)
	_, _ = gz.Write([]byte(`{"v1/Namespace":["team"],"v1/ConfigMap":["team/cm","team/other"]}`))
	c.Assert(gz.Close(), IsNil)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/list":
			_, _ = w.Write(list.Bytes())
		case "/contents":
			_, _ = w.Write(contents)
		default:
			http.NotFound(w, r)
		}
	}))
}

// runVerify runs VerifyBackupContents for NonAdminBackup team/nightly on
// Velero Backup b (UID backup-uid, Completed unless phase says otherwise)
// kept on location loc (a tenant's when tenant), with its resource list
// and contents DownloadRequests processed by srv (the contents one created
// created ago and unprocessed when contentsServed is false).
func runVerify(c *C, srv *httptest.Server, tenant, contentsServed bool, created time.Duration, phase velerov1.BackupPhase) (*v1alpha1.NonAdminBackup, client.Client, engine.Result, error) {
	return runVerifyArgs(c, srv, tenant, contentsServed, created, phase, VerifyBackupContentsArgs{Name: "b"})
}

// runVerifyArgs is runVerify with args.
func runVerifyArgs(c *C, srv *httptest.Server, tenant, contentsServed bool, created time.Duration, phase velerov1.BackupPhase, args VerifyBackupContentsArgs) (*v1alpha1.NonAdminBackup, client.Client, engine.Result, error) {
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team", UID: "nab-uid"}}
	op := &engine.Operation{Object: nab, OADPNamespace: "oadp", UUID: "uuid-1"}
	labels, annotations := op.OwnerMeta()
	base := v1alpha1.NACObjectName("team", "nightly", "uuid-1")
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "oadp", Labels: labels, Annotations: annotations, CreationTimestamp: metav1.NewTime(time.Now().Add(-created))}
	}
	bslLabels := map[string]string{}
	if tenant {
		bslLabels[v1alpha1.NabslOriginNACUUIDLabel] = "team-loc-uuid"
	}
	contents := &velerov1.DownloadRequest{ObjectMeta: meta(base + "c")}
	if contentsServed {
		contents.Status = velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: srv.URL + "/contents"}
	}
	backupMeta := meta("b")
	backupMeta.UID = "backup-uid"
	scheme := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(scheme), IsNil)
	c.Assert(velerov1.AddToScheme(scheme), IsNil)
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&velerov1.Backup{ObjectMeta: backupMeta, Spec: velerov1.BackupSpec{StorageLocation: "loc"}, Status: velerov1.BackupStatus{Phase: phase}},
		&velerov1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "loc", Namespace: "oadp", Labels: bslLabels}},
		&velerov1.DownloadRequest{ObjectMeta: meta(base), Status: velerov1.DownloadRequestStatus{Phase: velerov1.DownloadRequestPhaseProcessed, DownloadURL: srv.URL + "/list"}},
		contents,
	).Build()
	op.Client, op.APIReader = cl, cl
	f := bind(&VerifyBackupContents{tools: tools{recent: newRecentCreates(), store: loopbackStore}})
	res, err := f.Run(context.Background(), op, &args)
	return nab, cl, res, err
}

// recordOf reads the verified-items ConfigMap of Velero Backup b.
func recordOf(c *C, cl client.Client) (*corev1.ConfigMap, bool) {
	cm := &corev1.ConfigMap{}
	err := cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: itemdigest.Name("b")}, cm)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	c.Assert(err, IsNil)
	return cm, true
}

func digestOf(c *C, raw string) itemdigest.Digest {
	d, err := itemdigest.Of([]byte(raw))
	c.Assert(err, IsNil, Commentf("%s", raw))
	return d
}

const (
	verifiedCM      = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"},"data":{"n":"1"}}`
	verifiedCMv1    = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"team","name":"cm"},"data":{"n":"1"}}`
	verifiedOther   = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"team"},"data":{"big":12345678901234567890,"f":2.50,"u":"ü😀"}}`
	verifiedBinding = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"team"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"u"}]}`
	verifiedAlpha   = `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","namespace":"team"}}`
)

// TestVerifyRecordsItems: for a backup in a tenant's bucket, the digest of
// every item file under resources/ — the plain, preferred-version and other
// version copies — goes in the immutable verified-items ConfigMap, made
// with the operation's metadata (the NonAdminBackup's origin labels) and
// naming the Backup and its UID; files outside resources/ and files Velero
// could not decode are not recorded; the contents DownloadRequest is gone;
// Verified says so.
func (s *VerifyInternalSuite) TestVerifyRecordsItems(c *C) {
	srv := verifyStore(c, tarball(c,
		"metadata/version", "1",
		"resources/configmaps/namespaces/team/cm.json", verifiedCM,
		"resources/configmaps/v1-preferredversion/namespaces/team/cm.json", verifiedCMv1,
		"resources/configmaps/namespaces/team/other.json", verifiedOther,
		"resources/rolebindings.rbac.authorization.k8s.io/v1-preferredversion/namespaces/team/b.json", verifiedBinding,
		"resources/widgets.example.com/v1alpha1/namespaces/team/w.json", verifiedAlpha,
		"resources/configmaps/namespaces/team/no-kind.json", `{"metadata":{"name":"no-kind"}}`,
		"resources/configmaps/namespaces/team/notes.txt", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"txt"}}`,
		"podvolumebackups/x.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"outside"}}`,
	))
	defer srv.Close()
	nab, cl, res, err := runVerify(c, srv, true, true, time.Second, velerov1.BackupPhaseCompleted)
	c.Assert(err, IsNil)
	c.Check(res.Wait, Equals, false)
	name := itemdigest.Name("b")
	c.Check(res.Output, DeepEquals, map[string]string{"items": "3", "unexpected": "0", "verifiedItems": name, "digests": "4"})
	cond := apimeta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionVerified)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionTrue)
	c.Check(cond.Message, Equals, "3 items of Velero Backup b checked: all belong to namespace team. The digests of its 4 distinct items are recorded (ConfigMap "+
		name+"): a restore as its requester restores only those")

	cm, found := recordOf(c, cl)
	c.Assert(found, Equals, true)
	c.Check(*cm.Immutable, Equals, true)
	c.Check(cm.Labels[v1alpha1.NabOriginNACUUIDLabel], Equals, "uuid-1")
	c.Check(cm.Annotations[v1alpha1.NabOriginNamespaceAnnotation], Equals, "team")
	c.Check(cm.Annotations[v1alpha1.NabOriginNameAnnotation], Equals, "nightly")
	c.Check(cm.Annotations[itemdigest.BackupAnnotation], Equals, "b")
	c.Check(cm.Annotations[itemdigest.BackupUIDAnnotation], Equals, "backup-uid")
	c.Check(cm.OwnerReferences, DeepEquals, []metav1.OwnerReference{{APIVersion: "velero.io/v1", Kind: "Backup", Name: "b", UID: "backup-uid"}},
		Commentf("it goes with its Backup object"))
	m, err := itemdigest.FromConfigMap(cm)
	c.Assert(err, IsNil)
	c.Check(m.Set.Len(), Equals, 4)
	for _, item := range []string{verifiedCM, verifiedCMv1, verifiedOther, verifiedBinding, verifiedAlpha} {
		c.Check(m.Set.Contains(digestOf(c, item)), Equals, true, Commentf("%s", item))
	}
	for _, item := range []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"txt"}}`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"outside"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"team"},"data":{"n":"2"}}`} {
		c.Check(m.Set.Contains(digestOf(c, item)), Equals, false, Commentf("%s", item))
	}
	c.Check(apierrors.IsNotFound(cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: v1alpha1.NACObjectName("team", "nightly", "uuid-1") + "c"},
		&velerov1.DownloadRequest{})), Equals, true, Commentf("the contents DownloadRequest is deleted once read"))
	c.Check(apierrors.IsNotFound(cl.Get(context.Background(), client.ObjectKey{Namespace: "oadp", Name: v1alpha1.NACObjectName("team", "nightly", "uuid-1")},
		&velerov1.DownloadRequest{})), Equals, false, Commentf("the resource list's is left to Velero"))

	// What the restore side reads: the record of this very Backup.
	op := &engine.Operation{Object: &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "team"}}, OADPNamespace: "oadp", APIReader: cl, Client: cl}
	backup := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "oadp", UID: "backup-uid"}}
	got, ok, err := verifiedItemsFor(context.Background(), op, backup)
	c.Assert(err, IsNil)
	c.Check(ok, Equals, true)
	c.Check(got, Equals, name)
	backup.UID = "recreated"
	_, ok, err = verifiedItemsFor(context.Background(), op, backup)
	c.Assert(err, IsNil)
	c.Check(ok, Equals, false)
	_, why, _ := readVerifiedItems(context.Background(), op, backup)
	c.Check(why, Equals, "ConfigMap oadp/"+name+" records the items of another Velero Backup b (UID backup-uid, not recreated)")
	op.Object = &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "elsewhere"}}
	backup.UID = "backup-uid"
	_, why, _ = readVerifiedItems(context.Background(), op, backup)
	c.Check(why, Matches, `ConfigMap oadp/b-verified-items, the record of the items of Velero Backup b, was not made for namespace elsewhere .*`)
	backup.Name = "never-verified"
	_, ok, err = verifiedItemsFor(context.Background(), op, backup)
	c.Check(err, IsNil)
	c.Check(ok, Equals, false)
	_, why, _ = readVerifiedItems(context.Background(), op, backup)
	c.Check(why, Equals, "nacflow holds no record of the items of Velero Backup never-verified (no ConfigMap oadp/never-verified-verified-items): it was not verified by nacflow, or was verified before nacflow recorded item digests")
}

// TestVerifyRecordsNothingItNeedNot: a backup on the admin's location gets
// no record (no restore needs one) and no contents download; Verified is
// as before.
func (s *VerifyInternalSuite) TestVerifyRecordsNothingItNeedNot(c *C) {
	srv := verifyStore(c, tarball(c, "resources/configmaps/namespaces/team/cm.json", verifiedCM))
	defer srv.Close()
	nab, cl, res, err := runVerify(c, srv, false, true, time.Second, velerov1.BackupPhaseCompleted)
	c.Assert(err, IsNil)
	c.Check(res.Output, DeepEquals, map[string]string{"items": "3", "unexpected": "0"})
	cond := apimeta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionVerified)
	c.Assert(cond, NotNil)
	c.Check(cond.Message, Equals, "3 items of Velero Backup b checked: all belong to namespace team")
	_, found := recordOf(c, cl)
	c.Check(found, Equals, false)

	// A backup still running is not verified (the backup action's wait
	// for it timed out, onTimeout: continue); a schedule's run still
	// running is waited for (the adopt action: waitToFinish).
	_, _, res, err = runVerify(c, srv, true, true, time.Second, velerov1.BackupPhaseInProgress)
	c.Assert(err, IsNil)
	c.Check(res.Wait, Equals, false)
	c.Check(res.Message, Equals, "Velero Backup b is InProgress: only Completed and PartiallyFailed backups are verified")
	_, _, res, err = runVerifyArgs(c, srv, true, true, time.Second, velerov1.BackupPhaseInProgress, VerifyBackupContentsArgs{Name: "b", WaitToFinish: true})
	c.Assert(err, IsNil)
	c.Check(res.Wait, Equals, true)
	c.Check(res.Message, Equals, "waiting for Velero Backup b to finish before verifying it (InProgress)")
}

// TestVerifyRecordsWhyNot: more than 60,000 distinct items, contents that
// are no tarball (the tests' played Velero serves such), or contents
// Velero did not serve in time: the ConfigMap records why there are no
// digests, and Verified says it; the verification itself completes.
func (s *VerifyInternalSuite) TestVerifyRecordsWhyNot(c *C) {
	files := make([]string, 0, 2*(itemdigest.MaxDigests+1))
	for i := 0; i <= itemdigest.MaxDigests; i++ {
		files = append(files, fmt.Sprintf("resources/configmaps/namespaces/team/cm-%d.json", i),
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"team"}}`, i))
	}
	many := verifyStore(c, tarball(c, files...))
	defer many.Close()
	notTar := verifyStore(c, func() []byte {
		var b bytes.Buffer
		gz := gzip.NewWriter(&b)
		_, _ = gz.Write([]byte(`{"BackupContents": "b"}` + "\n"))
		_ = gz.Close()
		return b.Bytes()
	}())
	defer notTar.Close()
	for _, t := range []struct {
		srv     *httptest.Server
		served  bool
		created time.Duration
		why     string
	}{
		{many, true, time.Second, "the backup holds more than 60000 distinct items: nacflow records the digests of at most 60000"},
		{notTar, true, time.Second, "reading its contents: unexpected EOF"},
		{notTar, false, time.Hour, "Velero did not serve the contents of Backup b within 2m0s"},
	} {
		nab, cl, res, err := runVerify(c, t.srv, true, t.served, t.created, velerov1.BackupPhaseCompleted)
		c.Assert(err, IsNil, Commentf(t.why))
		c.Check(res.Wait, Equals, false, Commentf(t.why))
		c.Check(res.Output, DeepEquals, map[string]string{"items": "3", "unexpected": "0"})
		cond := apimeta.FindStatusCondition(nab.Status.Conditions, v1alpha1.ConditionVerified)
		c.Assert(cond, NotNil)
		c.Check(cond.Status, Equals, metav1.ConditionTrue)
		c.Check(cond.Message, Equals, "3 items of Velero Backup b checked: all belong to namespace team. No item digests recorded ("+t.why+
			"): nacflow refuses to restore the backup as its requester from a bucket a tenant writes")
		c.Check(strings.Contains(res.Message, ";"), Equals, false, Commentf("the plan's story joins phases with semicolons"))
		cm, found := recordOf(c, cl)
		c.Assert(found, Equals, true)
		c.Check(cm.BinaryData, IsNil)
		m, err := itemdigest.FromConfigMap(cm)
		c.Assert(err, IsNil)
		c.Check(m.Unrecorded, Equals, t.why)
	}
}
