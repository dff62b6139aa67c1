package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"

	. "gopkg.in/check.v1"
	"k8s.io/utils/ptr"

	"github.com/nacflow/nacflow/internal/runtime/version"
)

type VersionSuite struct{}

var _ = Suite(&VersionSuite{})

// TestVersion: the plugin's build, then the API server's release read from
// its /version; --client never contacts the server.
func (s *VersionSuite) TestVersion(c *C) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.13"}`))
	}))
	defer srv.Close()
	o, out, errOut := testOptions(c)
	o.ConfigFlags.APIServer = ptr.To(srv.URL)
	code, _ := run(o, "version")
	c.Assert(code, Equals, 0, Commentf("%s", errOut))
	c.Check(out.String(), Equals, "Client: kubectl-nac "+version.Get().String()+"\nKubernetes server: v1.33.13\n")

	o, out, _ = testOptions(c)
	o.ConfigFlags.APIServer = ptr.To(srv.URL)
	calls = 0
	code, _ = run(o, "version", "--client", "-o", "json")
	c.Assert(code, Equals, 0)
	c.Check(calls, Equals, 0)
	var got versions
	c.Assert(json.Unmarshal(out.Bytes(), &got), IsNil, Commentf("%s", out))
	c.Check(got.Client, DeepEquals, version.Get())
	c.Check(got.KubernetesServer, Equals, "")
}

// TestVersionUnreachableServer: a server that does not answer fails with
// exit status 2 and points at --client.
func (s *VersionSuite) TestVersionUnreachableServer(c *C) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	o, _, errOut := testOptions(c)
	o.ConfigFlags.APIServer = ptr.To(srv.URL)
	code, _ := run(o, "version")
	c.Check(code, Equals, 2)
	c.Check(errOut.String(), Matches, `Error: reading the server's version \(--client prints the plugin's alone\): .*\n`)
}
