package treecheck_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/hack/treecheck"
)

func Test(t *testing.T) { TestingT(t) }

type TreeSuite struct{}

var _ = Suite(&TreeSuite{})

// blob is one tracked file as the index holds it.
type blob struct {
	path string
	mode string
	size int64
	head []byte
}

// executableMagic lists the leading bytes of the executable formats Go and C
// toolchains write: ELF, Mach-O (both byte orders, 32 and 64 bit, universal),
// PE (MZ) and WebAssembly.
var executableMagic = [][]byte{
	[]byte("\x7fELF"),
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe},
	{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	[]byte("MZ"),
	[]byte("\x00asm"),
}

// problem returns why b may not be tracked, or "" when it may.
func problem(b blob) string {
	for _, m := range executableMagic {
		if bytes.HasPrefix(b.head, m) {
			return "an executable binary"
		}
	}
	if b.mode == "100755" && bytes.IndexByte(b.head, 0) >= 0 {
		return "an executable file with binary content"
	}
	if b.size > treecheck.MaxFileBytes && !inTestdata(b.path) {
		return fmt.Sprintf("%d bytes, more than %d outside testdata", b.size, treecheck.MaxFileBytes)
	}
	return ""
}

func inTestdata(p string) bool {
	for _, part := range strings.Split(path.Dir(p), "/") {
		if part == "testdata" {
			return true
		}
	}
	return false
}

// tracked reads every file of git's index with its mode, size and first
// 512 bytes.
func tracked(c *C) []blob {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	c.Assert(err, IsNil, Commentf("the tree check reads git's index: run it in a git checkout"))
	dir := strings.TrimSpace(string(root))
	out, err := exec.Command("git", "-C", dir, "ls-files", "-s", "-z").Output()
	c.Assert(err, IsNil)
	var blobs []blob
	var ids bytes.Buffer
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		c.Assert(ok && len(f) == 3, Equals, true, Commentf("ls-files record %q", rec))
		if f[0] == "160000" { // a submodule: no blob here
			continue
		}
		blobs = append(blobs, blob{path: p, mode: f[0]})
		ids.WriteString(f[1] + "\n")
	}
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	cmd.Stdin = &ids
	content, err := cmd.Output()
	c.Assert(err, IsNil)
	r := bufio.NewReader(bytes.NewReader(content))
	for i := range blobs {
		header, err := r.ReadString('\n')
		c.Assert(err, IsNil)
		f := strings.Fields(header)
		c.Assert(f, HasLen, 3, Commentf("cat-file header %q for %s", header, blobs[i].path))
		size, err := strconv.ParseInt(f[2], 10, 64)
		c.Assert(err, IsNil)
		data := make([]byte, size+1) // the blob and its trailing newline
		_, err = io.ReadFull(r, data)
		c.Assert(err, IsNil)
		blobs[i].size = size
		blobs[i].head = data[:min(size, 512)]
	}
	return blobs
}

func (s *TreeSuite) TestNoBinaryOrLargeFileTracked(c *C) {
	blobs := tracked(c)
	c.Assert(len(blobs) > 100, Equals, true, Commentf("only %d tracked files read", len(blobs)))
	var bad []string
	for _, b := range blobs {
		if why := problem(b); why != "" {
			bad = append(bad, b.path+": "+why)
		}
	}
	c.Check(bad, HasLen, 0, Commentf("tracked files that belong in .gitignore or testdata:\n%s", strings.Join(bad, "\n")))
}

// The check itself: each rule rejects what it is for and passes sources.
func (s *TreeSuite) TestProblem(c *C) {
	for _, t := range []struct {
		b    blob
		want string
	}{
		{blob{path: "velero-plugin-nacflow", mode: "100755", size: 67 << 20, head: []byte("\x7fELF\x02\x01\x01")}, "an executable binary"},
		{blob{path: "nac.exe", mode: "100644", size: 4096, head: []byte("MZ\x90\x00")}, "an executable binary"},
		{blob{path: "bin/tool", mode: "100644", size: 4096, head: []byte{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1}}, "an executable binary"},
		{blob{path: "hack/run", mode: "100755", size: 10, head: []byte("\x01\x00\x02")}, "an executable file with binary content"},
		{blob{path: "docs/big.md", mode: "100644", size: treecheck.MaxFileBytes + 1, head: []byte("# big")}, "1000001 bytes, more than 1000000 outside testdata"},
		{blob{path: "phases/testdata/backup.tar.gz", mode: "100644", size: 5 << 20, head: []byte{0x1f, 0x8b, 8, 0}}, ""},
		{blob{path: ".ci/run", mode: "100755", size: 400, head: []byte("#!/usr/bin/env bash\n")}, ""},
		{blob{path: "main.go", mode: "100644", size: treecheck.MaxFileBytes, head: []byte("package main")}, ""},
	} {
		c.Check(problem(t.b), Equals, t.want, Commentf("%s", t.b.path))
	}
}
