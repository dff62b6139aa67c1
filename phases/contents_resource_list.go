package phases

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Bounds of what readResourceList accepts. A backup's resource list comes
// back from object storage, and a tenant's own location is a bucket the
// tenant can write: the list is tenant input, so every figure is bounded
// before anything grows with it.
const (
	// maxListKinds is how many keys (kinds) a list may have: a namespace
	// with every kind of a large cluster has a few hundred. Each kind with
	// items of the namespace may cost one RESTMapper lookup.
	maxListKinds = 2000
	// maxListItemBytes bounds one key or item ("<namespace>/<name>": 63 + 1
	// + 253 bytes at most in Kubernetes; a kind key is shorter).
	maxListItemBytes = 512
	// maxClusterItems is how many cluster-scoped items a list may have (the
	// Namespace, its claims' volumes, its custom resources' definitions).
	maxClusterItems = 10000
)

// resourceList is what VerifyBackupContents keeps of a backup's resource
// list (Velero's <backup>-resource-list.json.gz): counts and the few items
// it needs, never the whole list, so that memory stays bounded whatever the
// list holds — about 100 KiB of kinds, 5 MiB of cluster-scoped items and the
// first maxListedItems strangers.
type resourceList struct {
	// ns is the tenant's namespace.
	ns string
	// total counts every item.
	total int
	// kinds maps every key ("<group>/<version>/<Kind>", "<version>/<Kind>"
	// for the core group) to whether it has an item of ns.
	kinds map[string]bool
	// cluster holds the cluster-scoped items ("<name>") by key.
	cluster map[string][]string
	// clusterItems counts the items of cluster.
	clusterItems int
	// foreign counts namespaced items of other namespaces.
	foreign int
	// foreignShown holds the smallest maxListedItems of them ("<key>
	// <item>"), sorted.
	foreignShown []string
	// counts counts the items of ns by key: what a restore must bring back.
	counts map[string]int
	// serviceAccounts holds the names of ns's ServiceAccounts (the first
	// maxListedServiceAccounts): Velero leaves the token Secrets Kubernetes
	// made for them ("<account>-token-*") to Kubernetes.
	serviceAccounts []string
}

// serviceAccountKey is the resource list key of ServiceAccounts.
const serviceAccountKey = "v1/ServiceAccount"

// maxListedServiceAccounts bounds the ServiceAccount names a resource list
// keeps.
const maxListedServiceAccounts = 1000

// errListShape is wrapped by readResourceList's errors on data that is not
// a JSON object of string lists.
var errListShape = errors.New("the resource list is not a JSON object of string lists")

// readResourceList reads a resource list (JSON: kind key to items,
// "<namespace>/<name>" or "<name>" for cluster-scoped ones) of namespace
// ns's backup from r, uncompressed, token by token (readStringLists). It
// keeps only what resourceList holds. Errors: readStringLists's, and more
// than maxClusterItems cluster-scoped items.
func readResourceList(r io.Reader, ns string) (*resourceList, error) {
	l := &resourceList{ns: ns, kinds: map[string]bool{}, cluster: map[string][]string{}, counts: map[string]int{}}
	onKey := func(key string) error {
		if _, seen := l.kinds[key]; !seen {
			l.kinds[key] = false
		}
		return nil
	}
	err := readStringLists(r, "resource list", onKey, func(key, item string) error {
		l.add(key, item)
		if l.clusterItems > maxClusterItems {
			return fmt.Errorf("the resource list has more than %d cluster-scoped items", maxClusterItems)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// readStringLists reads what is called what (in errors: "resource list")
// from r: a JSON object of string lists, Velero's shape of a backup's and a
// restore's resource lists, token by token, never held whole. It calls
// onKey with each key as it is read (a key may come twice), then add once
// per item of its list; an error from either ends the read with it. Errors: more than
// maxResourceList bytes, maxListKinds keys, a key or item over
// maxListItemBytes, and data that is not a JSON object of string lists
// (errListShape); a JSON null object or list is an empty one.
func readStringLists(r io.Reader, what string, onKey func(key string) error, add func(key, item string) error) error {
	limited := &io.LimitedReader{R: r, N: maxResourceList + 1}
	dec := json.NewDecoder(limited)
	wrap := func(err error) error {
		if limited.N <= 0 {
			return fmt.Errorf("the %s is larger than %d bytes", what, maxResourceList)
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("decoding the %s: %w", what, err)
	}
	tok, err := dec.Token()
	if err != nil {
		return wrap(err)
	}
	if tok == nil { // null: Velero writes {} for an empty list
		return end(dec, wrap)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("%w: it starts with %s", errListShape, describeToken(tok))
	}
	keys := map[string]bool{}
	for dec.More() {
		tok, err = dec.Token()
		if err != nil {
			return wrap(err)
		}
		key, _ := tok.(string)
		if len(key) > maxListItemBytes {
			return fmt.Errorf("%w: a key of %d bytes (at most %d)", errListShape, len(key), maxListItemBytes)
		}
		if !keys[key] {
			if len(keys) == maxListKinds {
				return fmt.Errorf("the %s has more than %d kinds", what, maxListKinds)
			}
			keys[key] = true
		}
		if err := onKey(key); err != nil {
			return err
		}
		if err := readItems(dec, key, wrap, add); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return wrap(err)
	}
	return end(dec, wrap)
}

// end checks that nothing but white space follows the list.
func end(dec *json.Decoder, wrap func(error) error) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			return fmt.Errorf("%w: data after the list", errListShape)
		}
		return wrap(err)
	}
	return nil
}

// readItems reads the item list of key, calling add with each item.
func readItems(dec *json.Decoder, key string, wrap func(error) error, add func(key, item string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return wrap(err)
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%w: %s of %q", errListShape, describeToken(tok), key)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return wrap(err)
		}
		item, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%w: %s among the items of %q", errListShape, describeToken(tok), key)
		}
		if len(item) > maxListItemBytes {
			return fmt.Errorf("%w: an item of %q of %d bytes (at most %d)", errListShape, key, len(item), maxListItemBytes)
		}
		if err := add(key, item); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing bracket
	if err != nil {
		return wrap(err)
	}
	return nil
}

// add counts item of key.
func (l *resourceList) add(key, item string) {
	l.total++
	itemNS, _, namespaced := strings.Cut(item, "/")
	switch {
	case !namespaced:
		l.cluster[key] = append(l.cluster[key], item)
		l.clusterItems++
	case itemNS == l.ns:
		l.kinds[key] = true
		l.counts[key]++
		if _, name, _ := strings.Cut(item, "/"); key == serviceAccountKey && len(l.serviceAccounts) < maxListedServiceAccounts {
			l.serviceAccounts = append(l.serviceAccounts, name)
		}
	default:
		l.foreign++
		l.foreignShown = keepSmallest(l.foreignShown, key+" "+item, maxListedItems)
	}
}

// keepSmallest inserts s into sorted and keeps its n smallest strings.
func keepSmallest(sorted []string, s string, n int) []string {
	i, found := slices.BinarySearch(sorted, s)
	if found || i >= n {
		return sorted
	}
	sorted = slices.Insert(sorted, i, s)
	if len(sorted) > n {
		sorted = sorted[:n]
	}
	return sorted
}

// check returns how many of l's items do not belong to l.ns and the
// smallest maxListedItems of them ("<key> <item>", sorted, quoted where
// they hold other than printable characters): namespaced items elsewhere,
// and cluster-scoped items other than the namespace itself and the volumes
// and definitions allowed (allowedClusterItems).
func (l *resourceList) check(allowed map[string]bool) (unexpected int, shown []string) {
	shown = slices.Clone(l.foreignShown)
	unexpected = l.foreign
	for key, items := range l.cluster {
		gv, _ := splitKey(key)
		for _, item := range items {
			switch {
			case key == namespaceKey && item == l.ns,
				key == pvKey && allowed[pvKey+" "+item],
				gv.Group == crdGroup && strings.HasSuffix(key, "/CustomResourceDefinition") && crdAllowed(allowed, item):
				continue
			}
			unexpected++
			shown = keepSmallest(shown, key+" "+item, maxListedItems)
		}
	}
	for i, s := range shown {
		shown[i] = printable(s)
	}
	return unexpected, shown
}

// printable returns s, or s quoted when it holds a character that is not
// printable: names read from a tenant's bucket go into conditions and
// events.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// describeToken names a JSON token for an error message, never quoting
// more than a short prefix of it.
func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(t))
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}
