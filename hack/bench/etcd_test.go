package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"

	"gopkg.in/check.v1"
)

type EtcdSuite struct{}

var _ = check.Suite(&EtcdSuite{})

// TestPartOf: a group's resources are /registry/<group>/<resource>/, the
// built-in ones /registry/<resource>/, the OADP namespace's Secrets apart.
func (s *EtcdSuite) TestPartOf(c *check.C) {
	for k, want := range map[string]string{
		"/registry/oadp.openshift.io/nonadminbackups/tenant-0001/nab-000001": "/registry/oadp.openshift.io/nonadminbackups/",
		"/registry/velero.io/backups/openshift-adp/tenant-0001-nab-1":        "/registry/velero.io/backups/",
		"/registry/events/tenant-0001/nab-000001.1234":                       "/registry/events/",
		"/registry/secrets/openshift-adp/plan-1":                             "/registry/secrets/openshift-adp/",
		"/registry/secrets/tenant-0001/unrelated-1":                          "/registry/secrets/",
		"/registry/namespaces/tenant-0001":                                   "/registry/namespaces/",
		"/registry/health":                                                   "/registry/health",
		"compact_rev_key":                                                    "(outside /registry/)",
	} {
		c.Check(partOf(k, "openshift-adp"), check.Equals, want, check.Commentf("%s", k))
	}
}

// TestReadEtcd reads a fake etcd gateway of two pages, and the growth
// between two reads is per NAB and by part, unchanged parts left out.
func (s *EtcdSuite) TestReadEtcd(c *check.C) {
	nab := `{"apiVersion":"v","metadata":{"name":"n","managedFields":[{"a":1}]},"spec":{},"status":{"phase":"Created"}}`
	keys := []string{"/registry/leases/x", "/registry/oadp.openshift.io/nonadminbackups/t/n", "/registry/velero.io/backups/o/b"}
	vals := []string{"lease", nab, "{}"}
	var calls []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		if r.URL.Path == "/v3/maintenance/status" {
			_, _ = w.Write([]byte(`{"dbSize":"4096","dbSizeInUse":"2048"}`))
			return
		}
		calls = append(calls, req)
		type kv struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
		}
		from := 0
		if len(calls) > 1 {
			from = 2
		}
		page := struct {
			Kvs  []kv `json:"kvs"`
			More bool `json:"more"`
		}{More: from == 0}
		for i := from; i < min(from+2, len(keys)); i++ {
			page.Kvs = append(page.Kvs, kv{[]byte(keys[i]), []byte(vals[i])})
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	defer srv.Close()
	u, err := readEtcd(context.Background(), srv.URL, "openshift-adp")
	c.Assert(err, check.IsNil)
	c.Assert(calls, check.HasLen, 2)
	next, _ := base64.StdEncoding.DecodeString(calls[1]["key"].(string))
	c.Check(string(next), check.Equals, keys[1]+"\x00")
	c.Check(u.DbSize, check.Equals, int64(4096))
	c.Check(u.Parts["/registry/oadp.openshift.io/nonadminbackups/"], check.Equals, etcdPart{Keys: 1, Bytes: int64(len(keys[1]) + len(nab))})
	fields := u.Anatomy["/registry/oadp.openshift.io/nonadminbackups/"]
	c.Check(fields["metadata.managedFields"], check.Equals, int64(len(`[{"a":1}]`)))
	c.Check(fields["status"], check.Equals, int64(len(`{"phase":"Created"}`)))
	total := int64(0)
	for _, v := range fields {
		total += v
	}
	c.Check(total, check.Equals, int64(len(nab)))

	before := &etcdUsage{DbSize: 1024, DbSizeInUse: 1024, Parts: map[string]etcdPart{"/registry/leases/": u.Parts["/registry/leases/"]}}
	g := etcdGrowth(before, u, 2)
	c.Check(g.DbSizeDeltaPerNAB, check.Equals, 1536.0)
	c.Check(g.BytesPerNABByPart, check.HasLen, 2) // leases unchanged: left out
	c.Check(g.BytesPerNAB, check.Equals, float64(len(keys[1])+len(nab)+len(keys[2])+2)/2)
	c.Check(g.ObjectBytesByField["/registry/oadp.openshift.io/nonadminbackups/"]["spec"], check.Equals, 2.0)
}
