package main

import (
	"os"
	"path/filepath"

	. "gopkg.in/check.v1"
)

// TestPluginNames: the plugins of assets/plugins and of --plugins, each name
// once; directories are not plugins; a missing directory holds none.
func (s *LocalCPUnitSuite) TestPluginNames(c *C) {
	assets, extra := c.MkDir(), c.MkDir()
	c.Assert(os.MkdirAll(filepath.Join(assets, "plugins", "subdir"), 0o755), IsNil)
	for _, p := range []string{filepath.Join(assets, "plugins", "velero-plugin-for-aws"), filepath.Join(assets, "plugins", "velero-plugin-nacflow"),
		filepath.Join(extra, "velero-plugin-nacflow")} {
		c.Assert(os.WriteFile(p, []byte("#!/bin/true\n"), 0o755), IsNil)
	}
	names, err := pluginNames(assets, extra)
	c.Assert(err, IsNil)
	c.Check(names, DeepEquals, []string{"velero-plugin-for-aws", "velero-plugin-nacflow"})
	names, err = pluginNames(assets, "")
	c.Assert(err, IsNil)
	c.Check(names, DeepEquals, []string{"velero-plugin-for-aws", "velero-plugin-nacflow"})
	names, err = pluginNames(c.MkDir(), filepath.Join(extra, "missing"))
	c.Assert(err, IsNil)
	c.Check(names, HasLen, 0)
	c.Check(isFile(filepath.Join(extra, "velero-plugin-nacflow")), Equals, true)
	c.Check(isFile(filepath.Join(assets, "plugins", "subdir")), Equals, false)
}
