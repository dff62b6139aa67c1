package phases

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
)

type RestoredItemsSuite struct{}

var _ = Suite(&RestoredItemsSuite{})

// TestCounts: created and updated items of the sandbox count as restored,
// skipped and failed ones as missing, kept for a look in the sandbox; items
// of other namespaces and cluster-scoped ones are not counted.
func (s *RestoredItemsSuite) TestCounts(c *C) {
	raw := `{
	  "v1/ConfigMap": ["sb/a(created)", "sb/b(updated)", "sb/c(skipped)", "sb/kube-root-ca.crt(skipped)", "other/x(created)"],
	  "v1/ServiceAccount": ["sb/default(skipped)", "sb/app(created)"],
	  "v1/PersistentVolumeClaim": ["sb/data(failed)"],
	  "v1/Namespace": ["sb(created)"],
	  "apps/v1/Deployment": null
	}`
	ri, err := readRestoredItems(strings.NewReader(raw), "sb")
	c.Assert(err, IsNil)
	c.Check(ri.restored, DeepEquals, map[string]int{"v1/ConfigMap": 2, "v1/ServiceAccount": 1})
	c.Check(ri.missing, DeepEquals, map[string]int{"v1/ConfigMap": 2, "v1/ServiceAccount": 1, "v1/PersistentVolumeClaim": 1})
	c.Check(ri.notRestored, DeepEquals, []notRestored{
		{"v1/ConfigMap", "c", "skipped"}, {"v1/ConfigMap", "kube-root-ca.crt", "skipped"},
		{"v1/ServiceAccount", "default", "skipped"}, {"v1/PersistentVolumeClaim", "data", "failed"}})
}

// TestRecheckBound: past maxRecheckedItems, items not restored are counted,
// not kept.
func (s *RestoredItemsSuite) TestRecheckBound(c *C) {
	items := make([]string, maxRecheckedItems+10)
	for i := range items {
		items[i] = fmt.Sprintf("sb/s%d(skipped)", i)
	}
	raw, err := json.Marshal(map[string][]string{"v1/Secret": items})
	c.Assert(err, IsNil)
	ri, err := readRestoredItems(strings.NewReader(string(raw)), "sb")
	c.Assert(err, IsNil)
	c.Check(ri.missing["v1/Secret"], Equals, maxRecheckedItems+10)
	c.Check(ri.notRestored, HasLen, maxRecheckedItems)
}

// TestRefused: what is not Velero's shape of a restore's resource list is
// refused with a reason, never counted.
func (s *RestoredItemsSuite) TestRefused(c *C) {
	for _, t := range []struct{ raw, err string }{
		{`{"v1/ConfigMap":["sb/a"]}`, `.*without its \(result\).*`},
		{`{"v1/ConfigMap":["sb/a(created"]}`, `.*without its \(result\).*`},
		{`{"v1/ConfigMap":[1]}`, `.*a number among the items.*`},
		{`[]`, `.*starts with "\[".*`},
		{`{"v1/ConfigMap":["` + strings.Repeat("x", maxListItemBytes+1) + `"]}`, `.*an item of "v1/ConfigMap" of 513 bytes.*`},
		{`{"a":[]} {}`, `.*data after the list.*`},
	} {
		_, err := readRestoredItems(strings.NewReader(t.raw), "sb")
		c.Check(err, ErrorMatches, t.err, Commentf("%.60s", t.raw))
	}
}

// TestExpectedCounts: the backup's resource list counts the namespace's
// items by kind, and keeps its ServiceAccounts' names.
func (s *RestoredItemsSuite) TestExpectedCounts(c *C) {
	l, err := readResourceList(strings.NewReader(`{"v1/ConfigMap":["demo/a","demo/kube-root-ca.crt","other/b"],"v1/ServiceAccount":["demo/default","demo/app","other/x"],"v1/Namespace":["demo"]}`), "demo")
	c.Assert(err, IsNil)
	c.Check(l.counts, DeepEquals, map[string]int{"v1/ConfigMap": 2, "v1/ServiceAccount": 2})
	c.Check(l.serviceAccounts, DeepEquals, []string{"default", "app"})
	c.Check(autoToken("app-token-x7k2p", l.serviceAccounts), Equals, true)
	c.Check(autoToken("app-tokens", l.serviceAccounts), Equals, false)
	c.Check(autoToken("x-token-abc", l.serviceAccounts), Equals, false, Commentf("another namespace's account"))
}

// FuzzReadRestoredItems: a restore's resource list from a tenant's bucket —
// any bytes — is read or refused, never panics, keeps its bounds, and
// where it is a JSON object of string lists without repeated keys counts
// every item of the namespace once, as restored or missing.
func FuzzReadRestoredItems(f *testing.F) {
	f.Add(`{"v1/ConfigMap":["sb/a(created)","sb/b(failed)","x/c(created)"],"v1/Namespace":["sb(created)"]}`)
	f.Add(`null`)
	f.Add(`{"a":null,"b":[]}`)
	f.Add(`{"v1/Secret":["sb/x\u0000y(skipped)"]}`)
	f.Add(`{"x":["sb/a()"],"x":["sb/b(updated)"]}`)
	f.Add(`{"x":["sb/(created)", "sb/a)(", "(created)"]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		ri, err := readRestoredItems(strings.NewReader(raw), "sb")
		if err != nil {
			return
		}
		if len(ri.restored) > maxListKinds || len(ri.missing) > maxListKinds || len(ri.notRestored) > maxRecheckedItems {
			t.Fatalf("bounds broken: %d, %d kinds, %d kept", len(ri.restored), len(ri.missing), len(ri.notRestored))
		}
		ref := map[string][]string{}
		if json.Unmarshal([]byte(raw), &ref) != nil {
			t.Fatalf("accepted what encoding/json refuses: %q", raw)
		}
		want := 0
		for _, items := range ref {
			for _, item := range items {
				open := strings.LastIndexByte(item, '(')
				if ns, _, ok := strings.Cut(item[:open], "/"); ok && ns == "sb" {
					want++
				}
			}
		}
		got := 0
		for key := range ri.restored {
			got += ri.restored[key]
		}
		for key := range ri.missing {
			got += ri.missing[key]
		}
		// With a repeated key encoding/json keeps the last list only.
		if got != want && !hasRepeatedKey(raw) {
			t.Fatalf("counted %d items of sb, encoding/json gives %d: %q", got, want, raw)
		}
	})
}

// hasRepeatedKey reports whether the JSON object raw names a key twice.
func hasRepeatedKey(raw string) bool {
	dec := json.NewDecoder(strings.NewReader(raw))
	seen := map[string]bool{}
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 {
				if seen[v] {
					return true
				}
				seen[v] = true
				var skip json.RawMessage // the list that follows
				if dec.Decode(&skip) != nil {
					return false
				}
			}
		}
	}
}
