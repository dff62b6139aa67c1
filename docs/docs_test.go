// Package docs holds nacflow's documentation; its tests keep the README
// short and every relative link of the docs pointing at a file that exists.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type DocsSuite struct{}

var _ = Suite(&DocsSuite{})

// maxReadmeLines bounds README.md: a pitch, the two commands, a
// five-minute quickstart and links, as Flux's and Velero's are. Everything
// else belongs in docs/ (getting-started.md holds the walk-through).
const maxReadmeLines = 200

func (s *DocsSuite) TestReadmeIsShort(c *C) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	c.Assert(err, IsNil)
	lines := strings.Count(string(data), "\n")
	c.Check(lines <= maxReadmeLines, Equals, true,
		Commentf("README.md has %d lines, at most %d: move reference material into docs/", lines, maxReadmeLines))
	for _, want := range []string{"make run", "make test", "docs/getting-started.md"} {
		c.Check(strings.Contains(string(data), want), Equals, true, Commentf("README.md does not say %q", want))
	}
}

// link is a Markdown link's target: [text](target); code is a fenced block
// or an inline code span, whose brackets are not links.
var (
	link = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
)

// Every relative link of README.md and docs/*.md names a file or directory
// of the repository (anchors are not checked).
func (s *DocsSuite) TestRelativeLinksResolve(c *C) {
	files, err := filepath.Glob("*.md")
	c.Assert(err, IsNil)
	files = append(files, filepath.Join("..", "README.md"))
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		c.Assert(err, IsNil)
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(string(data), ""), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			_, err := os.Stat(filepath.Join(filepath.Dir(f), target))
			c.Check(err, IsNil, Commentf("%s links to %s", f, m[1]))
			checked++
		}
	}
	c.Check(checked > 50, Equals, true, Commentf("%d links checked", checked))
}

// read returns the file at path, relative to the repository root.
func read(c *C, path string) string {
	data, err := os.ReadFile(filepath.Join("..", path))
	c.Assert(err, IsNil)
	return string(data)
}

// The walk-through holds, in this order, the steps of the first hour
// README.md promises (test/e2ewalk runs every command of the page, read
// from the page).
func (s *DocsSuite) TestWalkthroughIsWhatE2ERuns(c *C) {
	page := read(c, "docs/getting-started.md")
	steps := []string{
		"make run",
		"kubectl create configmap app-config -n demo --from-literal=greeting=hello",
		"kubectl apply -f examples/nonadminbackup.yaml",
		"kubectl apply -f examples/nonadminbackup-invalid.yaml",
		"kubectl delete configmap app-config -n demo",
		"kubectl apply -f examples/nonadminrestore.yaml",
		"kubectl apply -f examples/nonadmindownloadrequest.yaml",
		"kubectl nac backup create b1 -n demo --wait",
		"kubectl nac backup describe b1 -n demo",
		"kubectl nac backup logs b1 -n demo",
		"kubectl nac restore create r1 -n demo --from-backup b1 --wait",
		"source <(kubectl nac completion bash)",
		"examples/nonadminbackupstoragelocation.yaml",
	}
	rest := page
	for _, step := range steps {
		i := strings.Index(rest, step)
		c.Assert(i >= 0, Equals, true, Commentf("getting-started.md lacks %q after the steps before it", step))
		rest = rest[i+len(step):]
	}
}

// versionOf returns the value of the first match of re's group 1 in the
// file at path.
func versionOf(c *C, path, re string) string {
	m := regexp.MustCompile(re).FindStringSubmatch(read(c, path))
	c.Assert(m, HasLen, 2, Commentf("%s: no match for %s", path, re))
	return m[1]
}

// upgrade.md's compatibility table names what is really tested: the
// Velero of go.mod, the Kubernetes of the Makefile, the AWS plugin of
// hack/velero/go.mod.
func (s *DocsSuite) TestCompatibilityTableIsCurrent(c *C) {
	page := read(c, "docs/upgrade.md")
	for _, row := range []struct{ component, version string }{
		{"Velero server and API", versionOf(c, "go.mod", `(?m)^\s*github\.com/vmware-tanzu/velero (v\S+)`)},
		{"velero-plugin-for-aws", versionOf(c, "hack/velero/go.mod", `(?m)^\s*github\.com/vmware-tanzu/velero-plugin-for-aws (v\S+)`)},
		{"Kubernetes (kube-apiserver, kube-controller-manager)", versionOf(c, "Makefile", `(?m)^KUBE_VERSION\s*\?=\s*(v\S+)`)},
	} {
		want := "| " + row.component + " | " + row.version + " |"
		c.Check(strings.Contains(page, want), Equals, true, Commentf("upgrade.md lacks %q", want))
	}
	readme := read(c, "README.md")
	c.Check(strings.Contains(readme, "Kubernetes "+versionOf(c, "Makefile", `(?m)^KUBE_VERSION\s*\?=\s*(v\S+)`)), Equals, true)
	c.Check(strings.Contains(readme, versionOf(c, "go.mod", `(?m)^\s*github\.com/vmware-tanzu/velero (v\S+)`)), Equals, true)
}

// troubleshooting.md explains every reason a phase refuses with
// (Accepted=False): each refuse(…, v1alpha1.ReasonX, …) of phases/ is a
// row of its table.
func (s *DocsSuite) TestEveryRefusalReasonIsExplained(c *C) {
	values := map[string]string{}
	apiFiles, err := filepath.Glob(filepath.Join("..", "api", "v1alpha1", "*_types.go"))
	c.Assert(err, IsNil)
	constant := regexp.MustCompile(`(?m)^\s*(Reason\w+)\s*=\s*"([^"]+)"`)
	for _, f := range apiFiles {
		data, err := os.ReadFile(f)
		c.Assert(err, IsNil)
		for _, m := range constant.FindAllStringSubmatch(string(data), -1) {
			values[m[1]] = m[2]
		}
	}
	phaseFiles, err := filepath.Glob(filepath.Join("..", "phases", "*.go"))
	c.Assert(err, IsNil)
	refusal := regexp.MustCompile(`refuse\([^,]+, v1alpha1\.(Reason\w+)`)
	page := read(c, "docs/troubleshooting.md")
	found := 0
	for _, f := range phaseFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		c.Assert(err, IsNil)
		for _, m := range refusal.FindAllStringSubmatch(string(data), -1) {
			value, ok := values[m[1]]
			c.Assert(ok, Equals, true, Commentf("%s: no value for %s", f, m[1]))
			c.Check(strings.Contains(page, "| `"+value+"` |"), Equals, true, Commentf("troubleshooting.md does not explain %s (%s)", value, f))
			found++
		}
	}
	c.Check(found >= 10, Equals, true, Commentf("%d refusals found", found))
}
