package phases

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type VerifyInternalSuite struct{}

var _ = Suite(&VerifyInternalSuite{})

// checkResourceList: namespaced items must be the tenant's; cluster-scoped
// ones only its Namespace and the volumes and definitions allowed.
func (s *VerifyInternalSuite) TestCheckResourceList(c *C) {
	allowed := map[string]bool{pvKey + " pv-mine": true, "crd widgets.example.com": true, "group gone.example.com": true}
	total, unexpected := checkResourceList(map[string][]string{
		"v1/Namespace":          {"demo", "kube-system"},
		"v1/ConfigMap":          {"demo/a", "demo/b", "demo-other/c"},
		"apps/v1/Deployment":    {"demo/app"},
		"v1/PersistentVolume":   {"pv-mine", "pv-theirs"},
		"example.com/v1/Widget": {"demo/w"},
		"apiextensions.k8s.io/v1/CustomResourceDefinition": {"widgets.example.com", "gadgets.example.com", "things.gone.example.com"},
		"storage.k8s.io/v1/StorageClass":                   {"fast"},
		"rbac.authorization.k8s.io/v1/ClusterRole":         {"demo"},
	}, "demo", allowed)
	c.Check(total, Equals, 14)
	c.Check(unexpected, DeepEquals, []string{
		"apiextensions.k8s.io/v1/CustomResourceDefinition gadgets.example.com",
		"rbac.authorization.k8s.io/v1/ClusterRole demo",
		"storage.k8s.io/v1/StorageClass fast",
		"v1/ConfigMap demo-other/c",
		"v1/Namespace kube-system",
		"v1/PersistentVolume pv-theirs",
	})
	total, unexpected = checkResourceList(map[string][]string{}, "demo", nil)
	c.Check(total, Equals, 0)
	c.Check(unexpected, HasLen, 0)
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
	list, err := downloadResourceList(context.Background(), srv.URL)
	c.Assert(err, IsNil)
	c.Check(list, DeepEquals, map[string][]string{"v1/ConfigMap": {"demo/a"}})

	status = http.StatusForbidden
	_, err = downloadResourceList(context.Background(), srv.URL)
	c.Check(err, ErrorMatches, "the object store answered 403 Forbidden")

	status, body = http.StatusOK, []byte("not gzip")
	_, err = downloadResourceList(context.Background(), srv.URL)
	c.Check(err, NotNil)
}
