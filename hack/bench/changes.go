package main

import (
	"context"
	"encoding/json"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// nabFields is every NonAdminBackup's fields the controller writes, by
// namespace/name: "status.<field>" for each top-level status field,
// "metadata.labels", "metadata.annotations", "metadata.finalizers" and
// "spec", each as its JSON.
type nabFields map[string]map[string]json.RawMessage

// readNABs lists the NonAdminBackups, 500 a page, and splits each into its
// fields.
func readNABs(ctx context.Context, c client.Client) (nabFields, error) {
	out := nabFields{}
	err := listNABs(ctx, c, func(nab *v1alpha1.NonAdminBackup) { out[nab.Namespace+"/"+nab.Name] = splitNAB(nab) })
	return out, err
}

// listNABs calls f with every NonAdminBackup, listing them 500 a page.
func listNABs(ctx context.Context, c client.Client, f func(*v1alpha1.NonAdminBackup)) error {
	cont := ""
	for {
		list := &v1alpha1.NonAdminBackupList{}
		if err := c.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return err
		}
		for i := range list.Items {
			f(&list.Items[i])
		}
		if cont = list.Continue; cont == "" {
			return nil
		}
	}
}

// splitNAB splits nab into its fields (nabFields).
func splitNAB(nab *v1alpha1.NonAdminBackup) map[string]json.RawMessage {
	f := map[string]json.RawMessage{}
	raw, _ := json.Marshal(nab.Status)
	var status map[string]json.RawMessage
	_ = json.Unmarshal(raw, &status)
	for k, v := range status {
		f["status."+k] = v
	}
	f["metadata.labels"], _ = json.Marshal(nab.Labels)
	f["metadata.annotations"], _ = json.Marshal(nab.Annotations)
	f["metadata.finalizers"], _ = json.Marshal(nab.Finalizers)
	f["spec"], _ = json.Marshal(nab.Spec)
	return f
}

// changedFields returns how many NABs of b differ from a (new ones
// included), and how many of them changed each field. With $BENCH_DEBUG it
// prints the first two changes of each field.
func changedFields(a, b nabFields) (int, map[string]int) {
	n, fields := 0, map[string]int{}
	for key, fb := range b {
		fa := a[key]
		changed := false
		for k, v := range fb {
			if !jsonEqual(fa[k], v) {
				fields[k]++
				changed = true
				if fields[k] <= 2 {
					debugf("%s %s: %s → %s", key, k, tail(string(fa[k]), 600), tail(string(v), 600))
				}
			}
		}
		for k := range fa {
			if _, ok := fb[k]; !ok {
				fields[k]++
				changed = true
			}
		}
		if changed {
			n++
		}
	}
	return n, fields
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b json.RawMessage) bool {
	var va, vb any
	_ = json.Unmarshal(a, &va)
	_ = json.Unmarshal(b, &vb)
	return reflect.DeepEqual(va, vb)
}
