//go:build !linux

package main

import (
	"os"
	"path/filepath"
)

// runWrapperIfCalledSo does nothing outside Linux: there are no wrappers.
func runWrapperIfCalledSo() {}

// setUpWrappers returns the assets as they are outside Linux (no
// parent-death signal to set): the directory of kube-apiserver, etcd and
// velero, and the plugin directory: assets/plugins, or with extraPlugins
// DIR/plugins holding symlinks to both (a name in both: the extra one).
func setUpWrappers(dir, assets, extraPlugins string) (binDir, pluginDir string, err error) {
	if extraPlugins == "" {
		return assets, filepath.Join(assets, "plugins"), nil
	}
	pluginDir, err = filepath.Abs(filepath.Join(dir, "plugins"))
	if err != nil {
		return "", "", err
	}
	names, err := pluginNames(assets, extraPlugins)
	if err != nil {
		return "", "", err
	}
	if err := os.RemoveAll(pluginDir); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return "", "", err
	}
	for _, n := range names {
		target := filepath.Join(assets, "plugins", n)
		if p := filepath.Join(extraPlugins, n); isFile(p) {
			target = p
		}
		if err := os.Symlink(target, filepath.Join(pluginDir, n)); err != nil {
			return "", "", err
		}
	}
	return assets, pluginDir, nil
}

// refuseStarts does nothing outside Linux.
func refuseStarts() {}

// killChildren cannot list children outside Linux; it signals none.
func killChildren() int { return 0 }

// lookupPortHolder does not know who holds a port outside Linux.
func lookupPortHolder(port int) (int, string, bool) { return 0, "", false }
