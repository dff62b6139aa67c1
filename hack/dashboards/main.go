// Command dashboards writes nacflow's Grafana dashboards, built with
// Grafana's Foundation SDK (dashboards.go), into the repository:
//
//	config/monitoring/dashboards/<name>.json   to import into Grafana
//	charts/nacflow/dashboards/<name>.json      the chart's copy, embedded by
//	charts/nacflow/templates/dashboards-configmap.yaml (monitoring.dashboards)
//
// make generate runs it; the output is the same at every run, so make
// verify-generated catches a dashboard edited here and not regenerated.
//
// Usage (from hack/dashboards): go run . -root ../..
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	root := flag.String("root", "../..", "The repository's root: the files are written beneath it.")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}

// write writes Files beneath root.
func write(root string) error {
	files, err := Files()
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
