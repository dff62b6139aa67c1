package main

import (
	"os"
	"path/filepath"
	"slices"
)

// pluginNames lists the Velero plugin binaries of assets/plugins and of
// extra (when not empty), each name once, sorted. A missing directory holds
// none.
func pluginNames(assets, extra string) ([]string, error) {
	var names []string
	dirs := []string{filepath.Join(assets, "plugins")}
	if extra != "" {
		dirs = append(dirs, extra)
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// isFile reports whether path is a regular file (following symlinks).
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
