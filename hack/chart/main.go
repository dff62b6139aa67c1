// Command chart writes the generated part of the Helm chart charts/nacflow
// from config/default as kustomize renders it (make chart pipes `kubectl
// kustomize config/default` into it): the CRDs into crds/, every other object
// into templates/ with the values the chart offers put in (image, namespace,
// replicas, flags, resources, scheduling, tenant roles on or off), and
// values.yaml and Chart.yaml with kustomize's settings as defaults. config/
// stays the one source of truth; the chart's own files (helpers, the
// ServiceMonitor, NOTES.txt) are hand-written and left alone.
//
// Usage: kubectl kustomize config/default | chart -out charts/nacflow
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	out := flag.String("out", "charts/nacflow", "The chart's directory.")
	flag.Parse()
	objs, err := Decode(os.Stdin)
	if err == nil {
		err = write(objs, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

// write generates the chart's files from objs into dir, removing generated
// files that are no longer generated (an object gone from config/).
func write(objs []Object, dir string) error {
	files, err := Generate(objs)
	if err != nil {
		return err
	}
	if err := removeGenerated(dir); err != nil {
		return err
	}
	for _, name := range sortedKeys(files) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// removeGenerated deletes everything in dir/crds and the files of
// dir/templates that open with GeneratedHeader.
func removeGenerated(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, "crds")); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, "templates"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, "templates", e.Name())
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(b, []byte(GeneratedHeader)) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
