package docs

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	. "gopkg.in/check.v1"
)

// module is nacflow's module path.
const module = "github.com/nacflow/nacflow/"

// layerRule is one line of the import rules in architecture.md's Layers
// section: the packages under any of rooms may import, of nacflow's own
// packages, only those under may (and their own room's); anything: no bound.
type layerRule struct {
	rooms, may []string
	anything   bool
}

// readLayerRules parses the fenced block after "<!-- import rules -->" in
// architecture.md: "room, room: allowed allowed" per line, "nothing" and
// "anything" as the allowed list.
func readLayerRules(c *C) []layerRule {
	data, err := os.ReadFile("architecture.md")
	c.Assert(err, IsNil)
	text := string(data)
	i := strings.Index(text, "<!-- import rules -->")
	c.Assert(i >= 0, Equals, true, Commentf("architecture.md has no <!-- import rules --> block"))
	block := text[i:]
	start := strings.Index(block, "```text\n")
	c.Assert(start >= 0, Equals, true)
	block = block[start+len("```text\n"):]
	block = block[:strings.Index(block, "```")]
	var rules []layerRule
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		rooms, may, ok := strings.Cut(line, ":")
		c.Assert(ok, Equals, true, Commentf("import rule without a colon: %q", line))
		r := layerRule{}
		for _, room := range strings.Split(rooms, ",") {
			r.rooms = append(r.rooms, strings.TrimSpace(room))
		}
		switch fields := strings.Fields(may); {
		case len(fields) == 1 && fields[0] == "anything":
			r.anything = true
		case len(fields) == 1 && fields[0] == "nothing":
		default:
			r.may = fields
		}
		rules = append(rules, r)
	}
	return rules
}

// under reports whether pkg is room or inside it.
func under(pkg, room string) bool { return pkg == room || strings.HasPrefix(pkg, room+"/") }

// ruleFor returns the rule of pkg (the one naming the longest room pkg is
// under) and that room; ok is false when no rule names it.
func ruleFor(rules []layerRule, pkg string) (r layerRule, room string, ok bool) {
	for _, rule := range rules {
		for _, rm := range rule.rooms {
			if under(pkg, rm) && len(rm) > len(room) {
				r, room, ok = rule, rm, true
			}
		}
	}
	return r, room, ok
}

// TestLayers checks every package of the module against the import rules
// architecture.md states: each package is in a room a rule names, and its
// non-test imports of nacflow's packages are its own room's or those its
// rule allows. The imports come from `go list`.
func (s *DocsSuite) TestLayers(c *C) {
	rules := readLayerRules(c)
	c.Assert(len(rules) > 5, Equals, true)
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	c.Assert(err, IsNil, Commentf("go list: %s", exitStderr(err)))
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var broken []string
	seen := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			c.Assert(err, IsNil)
		}
		pkg := strings.TrimPrefix(p.ImportPath, module)
		seen++
		rule, room, ok := ruleFor(rules, pkg)
		if !ok {
			broken = append(broken, pkg+": in no room of architecture.md's import rules")
			continue
		}
		if rule.anything {
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			if under(dep, room) || slices.ContainsFunc(rule.may, func(m string) bool { return under(dep, m) }) {
				continue
			}
			broken = append(broken, pkg+" imports "+dep)
		}
	}
	c.Check(seen > 30, Equals, true, Commentf("go list listed %d packages", seen))
	c.Check(broken, HasLen, 0, Commentf("imports architecture.md's rules forbid:\n%s", strings.Join(broken, "\n")))
}

// TestLayerRulesBite: the rules refuse what the layering forbids — the
// engine importing a phase function's package, the CLI the controllers,
// any product package the local stack.
func (s *DocsSuite) TestLayerRulesBite(c *C) {
	rules := readLayerRules(c)
	allowed := func(pkg, dep string) bool {
		rule, room, ok := ruleFor(rules, pkg)
		c.Assert(ok, Equals, true, Commentf("%s", pkg))
		return rule.anything || under(dep, room) || slices.ContainsFunc(rule.may, func(m string) bool { return under(dep, m) })
	}
	c.Check(allowed("engine", "phases"), Equals, false)
	c.Check(allowed("api/v1alpha1", "engine"), Equals, false)
	c.Check(allowed("cli", "controllers"), Equals, false)
	c.Check(allowed("phases", "controllers"), Equals, false)
	c.Check(allowed("controllers", "internal/localstack/kcm"), Equals, false)
	c.Check(allowed("internal/runtime/events", "internal/policy/redact"), Equals, true)
	c.Check(allowed("cmd/nac", "controllers"), Equals, true)
	_, _, ok := ruleFor(rules, "internal/newroom/x")
	c.Check(ok, Equals, false, Commentf("a new room must be named in the rules"))
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
