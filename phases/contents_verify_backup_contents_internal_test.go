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

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
