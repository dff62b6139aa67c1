package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"
	"sigs.k8s.io/yaml"
)

func Test(t *testing.T) { TestingT(t) }

// The packager with stand-in binaries (one per platform, each saying which
// it is) and the real template and completion script; the manifest it
// writes is checked by krew's own validator and installed by krew itself.
type krewSuite struct {
	root, assets string
	binDir       string
}

var _ = Suite(&krewSuite{})

const tag = "v1.2.3"

func (s *krewSuite) SetUpSuite(c *C) {
	s.root = filepath.Join("..", "..")
	s.assets = os.Getenv("NACFLOW_ASSETS")
	if s.assets == "" {
		s.assets = filepath.Join(s.root, "bin")
	}
	for _, tool := range []string{"krew", "validate-krew-manifest"} {
		if _, err := os.Stat(filepath.Join(s.assets, tool)); err != nil {
			c.Fatalf("%s not found in %s: run the tests with `make test`, which builds it", tool, s.assets)
		}
	}
	s.binDir = c.MkDir()
	for _, p := range Platforms {
		c.Assert(os.MkdirAll(filepath.Join(s.binDir, p), 0o755), IsNil)
		c.Assert(os.WriteFile(filepath.Join(s.binDir, p, "kubectl-nac"), []byte("#!/bin/sh\necho "+p+"\n"), 0o755), IsNil)
	}
}

func (s *krewSuite) pack(c *C, mtime int64) (dist string) {
	dist = c.MkDir()
	manifest, err := Package(Options{
		Version: tag, BinDir: s.binDir, Dist: dist, Platforms: Platforms, MTime: mtime,
		Template: filepath.Join(s.root, "plugins", "nac.yaml"),
		Files:    []string{filepath.Join(s.root, "hack", "kubectl_complete-nac")},
	})
	c.Assert(err, IsNil)
	c.Assert(manifest, Equals, filepath.Join(dist, "nac.yaml"))
	return dist
}

func readFile(c *C, name string) []byte {
	b, err := os.ReadFile(name)
	c.Assert(err, IsNil)
	return b
}

func (s *krewSuite) TestReproducible(c *C) {
	a, b, later := s.pack(c, 1700000000), s.pack(c, 1700000000), s.pack(c, 1700000001)
	for _, p := range Platforms {
		name := ArchiveName(tag, p)
		c.Check(bytes.Equal(readFile(c, filepath.Join(a, name)), readFile(c, filepath.Join(b, name))), Equals, true, Commentf(name))
		c.Check(bytes.Equal(readFile(c, filepath.Join(a, name)), readFile(c, filepath.Join(later, name))), Equals, false, Commentf(name))
	}
	c.Check(string(readFile(c, filepath.Join(a, "nac.yaml"))), Equals, string(readFile(c, filepath.Join(b, "nac.yaml"))))
}

func (s *krewSuite) TestArchiveEntries(c *C) {
	dist := s.pack(c, 1700000000)
	completion := readFile(c, filepath.Join(s.root, "hack", "kubectl_complete-nac"))
	for _, p := range Platforms {
		f, err := os.Open(filepath.Join(dist, ArchiveName(tag, p)))
		c.Assert(err, IsNil)
		gz, err := gzip.NewReader(f)
		c.Assert(err, IsNil)
		c.Check(gz.Name, Equals, "")
		c.Check(gz.ModTime.IsZero(), Equals, true)
		tr := tar.NewReader(gz)
		var names []string
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			c.Assert(err, IsNil)
			names = append(names, hdr.Name)
			c.Check(hdr.Uid, Equals, 0)
			c.Check(hdr.Gid, Equals, 0)
			c.Check(hdr.Uname, Equals, "")
			c.Check(hdr.Gname, Equals, "")
			c.Check(hdr.Mode, Equals, int64(0o755))
			c.Check(hdr.ModTime.Equal(time.Unix(1700000000, 0)), Equals, true, Commentf("%s", hdr.ModTime))
			body, err := io.ReadAll(tr)
			c.Assert(err, IsNil)
			switch hdr.Name {
			case "kubectl-nac":
				c.Check(string(body), Equals, "#!/bin/sh\necho "+p+"\n")
			case "kubectl_complete-nac":
				c.Check(bytes.Equal(body, completion), Equals, true)
			}
		}
		c.Check(names, DeepEquals, []string{"kubectl-nac", "kubectl_complete-nac"})
		f.Close()
	}
}

type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version   string `json:"version"`
		Caveats   string `json:"caveats"`
		Platforms []struct {
			URI      string `json:"uri"`
			Sha256   string `json:"sha256"`
			Bin      string `json:"bin"`
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
		} `json:"platforms"`
	} `json:"spec"`
}

func (s *krewSuite) TestManifest(c *C) {
	dist := s.pack(c, 1700000000)
	var m manifest
	c.Assert(yaml.Unmarshal(readFile(c, filepath.Join(dist, "nac.yaml")), &m), IsNil)
	c.Check(m.APIVersion, Equals, "krew.googlecontainertools.github.com/v1alpha2")
	c.Check(m.Kind, Equals, "Plugin")
	c.Check(m.Metadata.Name, Equals, "nac")
	c.Check(m.Spec.Version, Equals, tag)
	c.Check(strings.Contains(m.Spec.Caveats, "/store/nac/"+tag+"/kubectl_complete-nac"), Equals, true, Commentf(m.Spec.Caveats))
	c.Assert(m.Spec.Platforms, HasLen, len(Platforms))
	for i, p := range m.Spec.Platforms {
		platform := p.Selector.MatchLabels["os"] + "_" + p.Selector.MatchLabels["arch"]
		c.Check(platform, Equals, Platforms[i])
		c.Check(p.URI, Equals, "https://github.com/nacflow/nacflow/releases/download/"+tag+"/"+ArchiveName(tag, platform))
		sum := sha256.Sum256(readFile(c, filepath.Join(dist, ArchiveName(tag, platform))))
		c.Check(p.Sha256, Equals, hex.EncodeToString(sum[:]))
		c.Check(p.Bin, Equals, "kubectl-nac")
	}
}

func (s *krewSuite) TestValidator(c *C) {
	dist := s.pack(c, 1700000000)
	out, err := exec.Command(filepath.Join(s.assets, "validate-krew-manifest"), "-manifest", filepath.Join(dist, "nac.yaml"), "-skip-install").CombinedOutput()
	c.Assert(err, IsNil, Commentf("%s", out))
	c.Check(string(out), Matches, "(?s).*structural validation OK.*no overlapping spec.platform.*")

	// The validator does refuse: a manifest whose file name is not the
	// plugin's.
	other := filepath.Join(c.MkDir(), "other.yaml")
	c.Assert(os.WriteFile(other, readFile(c, filepath.Join(dist, "nac.yaml")), 0o644), IsNil)
	out, err = exec.Command(filepath.Join(s.assets, "validate-krew-manifest"), "-manifest", other, "-skip-install").CombinedOutput()
	c.Check(err, NotNil)
	c.Check(string(out), Matches, `(?s).*plugin should be named "other".*`)
}

// krew install --archive checks the archive's sha256 against the manifest
// and lays the plugin out as a user gets it.
func (s *krewSuite) TestKrewInstalls(c *C) {
	dist := s.pack(c, 1700000000)
	install := func(archivePlatform string) (string, string, error) {
		root := c.MkDir()
		cmd := exec.Command(filepath.Join(s.assets, "krew"), "install", "--manifest="+filepath.Join(dist, "nac.yaml"),
			"--archive="+filepath.Join(dist, ArchiveName(tag, archivePlatform)))
		cmd.Env = append(os.Environ(), "KREW_ROOT="+root, "KREW_OS=linux", "KREW_ARCH=amd64", "KREW_NO_UPGRADE_CHECK=1")
		out, err := cmd.CombinedOutput()
		return root, string(out), err
	}
	root, out, err := install("linux_amd64")
	c.Assert(err, IsNil, Commentf(out))
	c.Check(string(readFile(c, filepath.Join(root, "bin", "kubectl-nac"))), Equals, "#!/bin/sh\necho linux_amd64\n")
	_, err = os.Stat(filepath.Join(root, "store", "nac", tag, "kubectl_complete-nac"))
	c.Check(err, IsNil)

	// Another platform's archive does not match linux/amd64's sha256.
	_, out, err = install("darwin_arm64")
	c.Check(err, NotNil)
	c.Check(out, Matches, "(?s).*checksum does not match.*")
}

func (s *krewSuite) TestRefusesVersionKrewCannotParse(c *C) {
	for _, v := range []string{"", "1.2.3", "923c142-dirty", "v1.2"} {
		_, err := Package(Options{Version: v, Dist: c.MkDir(), Platforms: Platforms})
		c.Check(err, ErrorMatches, ".*not a semantic version with a leading v.*", Commentf(v))
	}
}
