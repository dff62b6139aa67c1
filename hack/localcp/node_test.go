package main

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "gopkg.in/check.v1"
)

// A mountinfo excerpt: the node's mounts at two depths, one with a space
// in its path (octal \040), and mounts outside the node's directory (one
// whose path only starts like it).
const mountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
97 22 0:50 / /w/.local/node/containerd/state/t/abc/rootfs rw,relatime - overlay overlay rw
98 22 0:51 / /w/.local/node/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access rw - tmpfs tmpfs rw
99 22 0:52 / /w/.local/node/a\040b rw - tmpfs tmpfs rw
100 22 0:53 / /w/.local/nodes/other rw - tmpfs tmpfs rw
101 22 0:54 / /proc rw - proc proc rw
`

func (s *LocalCPUnitSuite) TestMountsUnder(c *C) {
	path := filepath.Join(c.MkDir(), "mountinfo")
	c.Assert(os.WriteFile(path, []byte(mountinfo), 0o644), IsNil)
	got, err := mountsUnder(path, "/w/.local/node")
	c.Assert(err, IsNil)
	c.Check(got, DeepEquals, []string{
		"/w/.local/node/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access",
		"/w/.local/node/containerd/state/t/abc/rootfs",
		"/w/.local/node/a b",
	})
	_, err = mountsUnder(filepath.Join(c.MkDir(), "missing"), "/w")
	c.Check(err, NotNil)
}

func (s *LocalCPUnitSuite) TestUnescapeMount(c *C) {
	c.Check(unescapeMount(`/a\040b\011c`), Equals, "/a b\tc")
	c.Check(unescapeMount(`/plain`), Equals, "/plain")
	c.Check(unescapeMount(`/bad\09`), Equals, `/bad\09`)
}

// The sandbox image: /pause as its entrypoint, uid 65535, the binary's
// bytes, and the same digest on every build.
func (s *LocalCPUnitSuite) TestPauseImage(c *C) {
	dir := c.MkDir()
	bin := filepath.Join(dir, "pause")
	c.Assert(os.WriteFile(bin, []byte("#!pause binary"), 0o755), IsNil)
	tag, err := name.NewTag(pauseImage)
	c.Assert(err, IsNil)
	var digests []string
	for _, out := range []string{filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")} {
		c.Assert(writePauseImage(bin, out, "amd64"), IsNil)
		img, err := tarball.ImageFromPath(out, &tag)
		c.Assert(err, IsNil)
		cf, err := img.ConfigFile()
		c.Assert(err, IsNil)
		c.Check(cf.Config.Entrypoint, DeepEquals, []string{"/pause"})
		c.Check(cf.Config.User, Equals, "65535:65535")
		c.Check(cf.OS+"/"+cf.Architecture, Equals, "linux/amd64")
		layers, err := img.Layers()
		c.Assert(err, IsNil)
		c.Assert(layers, HasLen, 1)
		d, err := img.Digest()
		c.Assert(err, IsNil)
		digests = append(digests, d.String())
	}
	c.Check(digests[0], Equals, digests[1])
	c.Check(writePauseImage(filepath.Join(dir, "missing"), filepath.Join(dir, "c.tar"), "amd64"), ErrorMatches, "reading the pause binary: .*")
}

// A process named kubelet in a /proc tree is found; others are not.
func (s *LocalCPUnitSuite) TestOtherKubelet(c *C) {
	root := c.MkDir()
	for pid, comm := range map[string]string{"12": "bash\n", "345": "kubelet\n", "self": "x\n"} {
		c.Assert(os.MkdirAll(filepath.Join(root, pid), 0o755), IsNil)
		c.Assert(os.WriteFile(filepath.Join(root, pid, "comm"), []byte(comm), 0o644), IsNil)
	}
	pid, ok := otherKubelet(root)
	c.Check(ok, Equals, true)
	c.Check(pid, Equals, 345)
	c.Assert(os.WriteFile(filepath.Join(root, "345", "comm"), []byte("kubelet-x\n"), 0o644), IsNil)
	_, ok = otherKubelet(root)
	c.Check(ok, Equals, false)
}

// The node's PKI: a CA and a client certificate of kube-apiserver's kubelet
// user that it signed, the key readable by its owner only.
func (s *LocalCPUnitSuite) TestNodePKI(c *C) {
	p, err := writeNodePKI(filepath.Join(c.MkDir(), "pki"))
	c.Assert(err, IsNil)
	ca, err := os.ReadFile(p.caCert)
	c.Assert(err, IsNil)
	c.Check(strings.HasPrefix(string(ca), "-----BEGIN CERTIFICATE-----"), Equals, true)
	fi, err := os.Stat(p.clientKey)
	c.Assert(err, IsNil)
	c.Check(fi.Mode().Perm(), Equals, os.FileMode(0o600))
	cert, key := readPair(c, p)
	c.Check(cert.Subject.CommonName, Equals, kubeletClientUser)
	c.Check(cert.Subject.Organization, HasLen, 0)
	c.Check(key, NotNil)
}

// readPair verifies that p's client certificate chains to p's CA for
// client authentication and returns it with its key.
func readPair(c *C, p nodePKI) (*x509.Certificate, crypto.PrivateKey) {
	pair, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	c.Assert(err, IsNil)
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	c.Assert(err, IsNil)
	caPEM, err := os.ReadFile(p.caCert)
	c.Assert(err, IsNil)
	pool := x509.NewCertPool()
	c.Assert(pool.AppendCertsFromPEM(caPEM), Equals, true)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	c.Check(err, IsNil)
	return cert, pair.PrivateKey
}
