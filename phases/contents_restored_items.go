package phases

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// restoredItems is what TestRestore keeps of a Velero Restore's resource
// list (Velero's restore-<name>-resource-list.json.gz: kind key to items
// "<namespace>/<name>(<result>)", the result created, updated, skipped or
// failed): by key, how many items of the sandbox namespace Velero created
// or updated, and those it did not (skipped or failed: up to
// maxRecheckedItems of them, for TestRestore to look for). The list
// comes from the tenant's bucket, as a backup's does: it is read as a
// stream under readStringLists's bounds and nothing of it is held whole.
type restoredItems struct {
	// ns is the namespace the restore wrote into (the sandbox).
	ns string
	// restored counts the items created or updated, by key.
	restored map[string]int
	// missing counts the items skipped or failed, by key.
	missing map[string]int
	// notRestored holds the first maxRecheckedItems of them.
	notRestored []notRestored
}

// notRestored is an item of a restore that Velero did not create or update.
type notRestored struct {
	// key is its resource list key, name its name, result Velero's word
	// (skipped, failed).
	key, name, result string
}

// maxRecheckedItems bounds the items of a restore Velero skipped or failed
// that TestRestore looks for in the sandbox (one GET each): a namespace's
// defaults are a handful; past it, the rest count as missing.
const maxRecheckedItems = 500

// readRestoredItems reads the resource list of a restore into namespace ns
// from r, uncompressed. Items of other namespaces and cluster-scoped ones
// (the Namespace itself) are not counted. Errors:
// readStringLists's, and an item without its "(<result>)" (errListShape).
func readRestoredItems(r io.Reader, ns string) (*restoredItems, error) {
	ri := &restoredItems{ns: ns, restored: map[string]int{}, missing: map[string]int{}}
	noKey := func(string) error { return nil }
	err := readStringLists(r, "restore's resource list", noKey, func(key, item string) error {
		open := strings.LastIndexByte(item, '(')
		if open < 0 || !strings.HasSuffix(item, ")") {
			return fmt.Errorf("%w: an item of %q without its (result)", errListShape, key)
		}
		ref, result := item[:open], item[open+1:len(item)-1]
		itemNS, name, namespaced := strings.Cut(ref, "/")
		if !namespaced || itemNS != ns {
			return nil
		}
		switch result {
		case "created", "updated":
			ri.restored[key]++
		default:
			ri.missing[key]++
			if len(ri.notRestored) < maxRecheckedItems {
				ri.notRestored = append(ri.notRestored, notRestored{key: key, name: name, result: result})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ri, nil
}

// downloadRestoredItems reads Velero's gzipped resource list of a restore
// into namespace ns from url (readRestoredItems). Errors: downloadGzipped's
// and readRestoredItems's.
func downloadRestoredItems(ctx context.Context, hc *storeClient, url, ns string) (*restoredItems, error) {
	return downloadGzipped(ctx, hc, url, func(r io.Reader) (*restoredItems, error) { return readRestoredItems(r, ns) })
}
