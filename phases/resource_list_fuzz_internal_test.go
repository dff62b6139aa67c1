package phases

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzReadResourceList: a resource list from a tenant's bucket — any bytes
// — is read or refused, never panics, keeps its bounds, and where it is a
// JSON object of string lists without repeated keys counts what
// encoding/json decodes.
func FuzzReadResourceList(f *testing.F) {
	f.Add(`{"v1/ConfigMap":["demo/a","other/b"],"v1/Namespace":["demo"]}`)
	f.Add(`{"v1/PersistentVolume":["pv"],"apiextensions.k8s.io/v1/CustomResourceDefinition":["w.example.com"]}`)
	f.Add(`null`)
	f.Add(`{"a":null,"b":[]}`)
	f.Add(`{"v1/Secret":["other/x\u0000y"]}`)
	f.Add(`{"x":["a"],"x":["b"]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		l, err := readResourceList(strings.NewReader(raw), "demo")
		if err != nil {
			return
		}
		if len(l.kinds) > maxListKinds || l.clusterItems > maxClusterItems || len(l.foreignShown) > maxListedItems {
			t.Fatalf("bounds broken: %d kinds, %d cluster items, %d shown", len(l.kinds), l.clusterItems, len(l.foreignShown))
		}
		unexpected, shown := l.check(map[string]bool{})
		if unexpected > l.total || len(shown) > maxListedItems || (unexpected > 0) != (len(shown) > 0) {
			t.Fatalf("check: %d unexpected of %d, %d shown", unexpected, l.total, len(shown))
		}
		ref := map[string][]string{}
		if json.Unmarshal([]byte(raw), &ref) != nil {
			t.Fatalf("accepted what encoding/json refuses: %q", raw)
		}
		n, foreign := 0, 0
		for _, items := range ref {
			for _, item := range items {
				n++
				if ns, _, ok := strings.Cut(item, "/"); ok && ns != "demo" {
					foreign++
				}
			}
		}
		if n != l.total {
			return // a repeated key: encoding/json keeps the last list
		}
		if foreign != l.foreign {
			t.Fatalf("%d foreign items, encoding/json gives %d: %q", l.foreign, foreign, raw)
		}
	})
}
