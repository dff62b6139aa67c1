// Package modules checks the tools modules' requirements against nacflow's
// own go.mod: a library that hack/tools (the control plane) or hack/velero
// (Velero and its AWS plugin) requires at another version than go.mod does
// compiles twice in a cold build, and every package above it with it
// (k8s.io/api, apimachinery, client-go: minutes on 2 cores).
package modules

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"golang.org/x/mod/modfile"
	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type modulesSuite struct{}

var _ = Suite(&modulesSuite{})

// differ lists the modules a tools module may require at another version
// than go.mod, and why.
var differ = map[string]map[string]string{
	"hack/tools": {
		// Kubernetes 1.33 and etcd 3.5 call otelgrpc's gRPC interceptors,
		// which releases after v0.58.0 removed.
		"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc": "v0.58.0",
	},
	"hack/velero": {},
}

// versions returns the module versions go.mod at path selects: its
// requirements, with its replacements by module versions applied.
func versions(c *C, path string) map[string]string {
	data, err := os.ReadFile(path)
	c.Assert(err, IsNil)
	f, err := modfile.Parse(path, data, nil)
	c.Assert(err, IsNil)
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if _, ok := out[r.Old.Path]; ok && r.New.Version != "" && (r.Old.Version == "" || r.Old.Version == out[r.Old.Path]) {
			out[r.Old.Path] = r.New.Version
		}
	}
	return out
}

func (s *modulesSuite) TestToolsRequireGoModsVersions(c *C) {
	root := filepath.Join("..", "..")
	main := versions(c, filepath.Join(root, "go.mod"))
	c.Assert(len(main) > 50, Equals, true, Commentf("go.mod parsed to %d modules", len(main)))
	for dir, allowed := range differ {
		tools := versions(c, filepath.Join(root, dir, "go.mod"))
		shared := 0
		var wrong []string
		for path, v := range tools {
			want, ok := main[path]
			if !ok {
				continue
			}
			shared++
			if exception, ok := allowed[path]; ok {
				c.Check(v, Equals, exception, Commentf("%s: %s is allowed to differ at %s only", dir, path, exception))
				c.Check(v, Not(Equals), want, Commentf("%s: %s no longer differs: drop its exception", dir, path))
				continue
			}
			if v != want {
				wrong = append(wrong, path+" "+v+" (go.mod: "+want+")")
			}
		}
		sort.Strings(wrong)
		c.Check(wrong, HasLen, 0, Commentf("%s requires these at other versions than go.mod: %v", dir, wrong))
		// The check means something only if the modules share libraries.
		c.Check(shared > 30, Equals, true, Commentf("%s shares %d modules with go.mod", dir, shared))
	}
}
