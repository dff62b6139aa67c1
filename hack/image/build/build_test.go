package build_test

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/hack/image/build"
)

func Test(t *testing.T) { TestingT(t) }

type BuildSuite struct {
	o build.Options
}

var _ = Suite(&BuildSuite{})

func (s *BuildSuite) SetUpTest(c *C) {
	dir := c.MkDir()
	bin := filepath.Join(dir, "nac")
	ca := filepath.Join(dir, "ca.pem")
	c.Assert(os.WriteFile(bin, []byte("\x7fELF a static binary"), 0o755), IsNil)
	c.Assert(os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644), IsNil)
	s.o = build.Options{Binary: bin, CARoots: ca, Tag: "ghcr.io/nacflow/nacflow:v0.1.0-3-gabc", Version: "v0.1.0-3-gabc",
		Revision: "abc", Arch: "amd64", Created: time.Unix(1764115200, 0).UTC(), Out: filepath.Join(dir, "one.tar")}
}

// Two builds of the same inputs give the same digest and the same bytes; a
// changed input (the commit's time, the binary) changes it.
func (s *BuildSuite) TestReproducible(c *C) {
	d1, err := build.Write(s.o)
	c.Assert(err, IsNil)
	c.Check(d1, Matches, "sha256:[0-9a-f]{64}")
	o2 := s.o
	o2.Out = filepath.Join(filepath.Dir(s.o.Out), "two.tar")
	d2, err := build.Write(o2)
	c.Assert(err, IsNil)
	c.Check(d2, Equals, d1)
	b1, err := os.ReadFile(s.o.Out)
	c.Assert(err, IsNil)
	b2, err := os.ReadFile(o2.Out)
	c.Assert(err, IsNil)
	c.Check(string(b1) == string(b2), Equals, true, Commentf("the tarballs differ"))

	o2.Created = o2.Created.Add(time.Second)
	d3, err := build.Write(o2)
	c.Assert(err, IsNil)
	c.Check(d3, Not(Equals), d1)
	c.Assert(os.WriteFile(s.o.Binary, []byte("\x7fELF another binary"), 0o755), IsNil)
	d4, err := build.Write(s.o)
	c.Assert(err, IsNil)
	c.Check(d4, Not(Equals), d1)
}

// The image runs /nac as 65532, holds no shell, and says what it is.
func (s *BuildSuite) TestContents(c *C) {
	s.o.Layout = filepath.Join(filepath.Dir(s.o.Out), "layout")
	digest, err := build.Write(s.o)
	c.Assert(err, IsNil)
	ii, err := layout.ImageIndexFromPath(s.o.Layout)
	c.Assert(err, IsNil)
	h, err := v1.NewHash(digest)
	c.Assert(err, IsNil)
	img, err := ii.Image(h)
	c.Assert(err, IsNil, Commentf("the layout holds the image whose digest was printed"))
	c.Check(archived(c, s.o.Out), DeepEquals, layoutFiles(c, s.o.Layout), Commentf("the archive is the layout"))
	cf, err := img.ConfigFile()
	c.Assert(err, IsNil)
	c.Check(cf.Config.User, Equals, "65532:65532")
	c.Check(cf.Config.Entrypoint, DeepEquals, []string{"/nac"})
	c.Check(cf.Config.Cmd, IsNil)
	c.Check(cf.OS+"/"+cf.Architecture, Equals, "linux/amd64")
	c.Check(cf.Created.Time.Equal(s.o.Created), Equals, true)
	c.Check(cf.Config.Labels["org.opencontainers.image.version"], Equals, "v0.1.0-3-gabc")
	c.Check(cf.Config.Labels["org.opencontainers.image.revision"], Equals, "abc")
	c.Check(cf.Config.Labels["org.opencontainers.image.created"], Equals, "2025-11-26T00:00:00Z")
	c.Check(cf.Config.Labels["org.opencontainers.image.source"], Equals, "")

	layers, err := img.Layers()
	c.Assert(err, IsNil)
	c.Assert(layers, HasLen, 1)
	rc, err := layers[0].Uncompressed()
	c.Assert(err, IsNil)
	defer rc.Close()
	entries := map[string]*tar.Header{}
	var order []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		c.Assert(err, IsNil)
		entries[h.Name] = h
		order = append(order, h.Name)
		c.Check(h.ModTime.Equal(s.o.Created), Equals, true, Commentf("%s", h.Name))
		c.Check(h.Uname+h.Gname, Equals, "", Commentf("%s", h.Name))
	}
	c.Check(order, DeepEquals, []string{"etc/", "etc/group", "etc/nsswitch.conf", "etc/passwd", "etc/ssl/", "etc/ssl/certs/",
		"etc/ssl/certs/ca-certificates.crt", "home/", "home/nonroot/", "nac", "tmp/"}, Commentf("no shell, nothing else"))
	c.Check(entries["nac"].Mode, Equals, int64(0o755))
	c.Check(entries["nac"].Uid, Equals, 0, Commentf("the user cannot rewrite its binary"))
	c.Check(entries["home/nonroot/"].Uid, Equals, build.NonRoot)
	c.Check(entries["tmp/"].Mode, Equals, int64(0o1777))

	idx, err := os.ReadFile(filepath.Join(s.o.Layout, "index.json"))
	c.Assert(err, IsNil)
	c.Check(string(idx), Matches, `(?s).*"`+digest+`".*"org.opencontainers.image.ref.name":\s*"ghcr.io/nacflow/nacflow:v0.1.0-3-gabc".*`)
}

// Bad inputs are named.
func (s *BuildSuite) TestErrors(c *C) {
	o := s.o
	o.Binary = filepath.Join(c.MkDir(), "missing")
	_, err := build.Write(o)
	c.Check(err, ErrorMatches, "reading the binary: .*no such file.*")
	o = s.o
	o.Tag = "Not A Tag"
	_, err = build.Write(o)
	c.Check(err, ErrorMatches, `-tag "Not A Tag": .*`)
}

// archived returns the regular files of the tar at path by name.
func archived(c *C, path string) map[string]string {
	f, err := os.Open(path)
	c.Assert(err, IsNil)
	defer f.Close()
	files := map[string]string{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		c.Assert(err, IsNil)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			c.Assert(err, IsNil)
			files[h.Name] = string(b)
		}
	}
}

// layoutFiles returns the regular files under dir by slash-separated path.
func layoutFiles(c *C, dir string) map[string]string {
	files := map[string]string{}
	c.Assert(filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	}), IsNil)
	return files
}
