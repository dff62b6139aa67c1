// Package build assembles nacflow's container image with go-containerregistry:
// an empty base, one layer (the nac binary, CA roots, the non-root user's
// passwd and group entries, /tmp and its home), and an OCI config that runs
// /nac as uid 65532 with org.opencontainers.image labels. Everything that
// could differ between two builds of one commit — file times, owners, order,
// the image's creation time — is fixed, so the digest depends only on the
// inputs.
package build

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the uid and gid the image runs as: distroless' "nonroot",
// which config/manager's runAsUser names too.
const NonRoot = 65532

// Options are the inputs of an image build.
type Options struct {
	// Binary is the path of the static nac binary (GOOS=linux).
	Binary string
	// CARoots is the path of a PEM bundle of CA roots.
	CARoots string
	// Tag is the image reference the tarball names.
	Tag string
	// Version, Revision and Source are the org.opencontainers.image labels
	// of the same names (empty: left out).
	Version, Revision, Source string
	// Arch is the GOARCH of Binary (the image's architecture).
	Arch string
	// Created is the image's creation time and every file's time: the
	// commit's time, so that a rebuild gives the same digest.
	Created time.Time
	// Out is the OCI archive written: the image layout as a tar, which
	// `ctr images import`, `docker load` (Docker 25 and later) and crane
	// read with the digest unchanged.
	Out string
	// Layout, when set, is the directory the OCI image layout is written
	// to (replaced), besides the archive.
	Layout string
}

// file is one entry of the image's layer.
type file struct {
	name     string
	mode     int64
	uid      int
	dir      bool
	contents []byte
}

// Image returns the image o describes. Errors: reading Binary or CARoots,
// and go-containerregistry's.
func Image(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	ca, err := os.ReadFile(o.CARoots)
	if err != nil {
		return nil, fmt.Errorf("reading the CA roots: %w", err)
	}
	files := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, contents: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", NonRoot)},
		{name: "etc/nsswitch.conf", mode: 0o644, contents: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, contents: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, contents: ca},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: NonRoot, dir: true},
		{name: "nac", mode: 0o755, contents: bin},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	layerTar, err := tarOf(files, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: o.Created},
		CreatedBy: "hack/image: nac, CA roots, nonroot user",
	}})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.Arch, "linux"
	cf.Created = v1.Time{Time: o.Created}
	cf.Config.Entrypoint = []string{"/nac"}
	cf.Config.User = fmt.Sprintf("%d:%d", NonRoot, NonRoot)
	cf.Config.WorkingDir = "/home/nonroot"
	cf.Config.Env = []string{"PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cf.Config.Labels = labels(o)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	return img, nil
}

// labels returns the org.opencontainers.image annotations of o.
func labels(o Options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "nacflow",
		"org.opencontainers.image.description": "Non-admin backup and restore with Velero: OADP's Non-Admin Controller as a workflow engine with blueprints",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.Created.UTC().Format(time.RFC3339),
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.source":   o.Source,
	} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// tarOf returns files as an uncompressed tar, in name order, each with time
// at, owned by its uid (its gid the same), with no user or group names.
func tarOf(files []file, at time.Time) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: at, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.contents))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.contents); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write builds the image of o, writes it as an OCI image layout into
// o.Layout (a temporary directory when empty) and as an OCI archive (the
// layout as a tar: what `ctr images import`, `docker load` and `crane` read,
// keeping the digest) to o.Out, and returns its digest ("sha256:…").
// Errors: Image's, a malformed Tag, and writing the files.
func Write(o Options) (string, error) {
	img, err := Image(o)
	if err != nil {
		return "", err
	}
	if _, err := name.ParseReference(o.Tag); err != nil {
		return "", fmt.Errorf("-tag %q: %w", o.Tag, err)
	}
	dir := o.Layout
	if dir == "" {
		tmp, err := os.MkdirTemp("", "nacflow-image-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	// containerd names an imported image by this annotation.
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Tag})); err != nil {
		return "", fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	if err := archive(dir, o.Out, o.Created); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// archive writes the files under dir into the tar out, in name order, each
// with time at and no owner: the same layout always gives the same bytes.
func archive(dir, out string, at time.Time) error {
	var files []file
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			files = append(files, file{name: rel + "/", mode: 0o755, dir: true})
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, file{name: rel, mode: 0o644, contents: b})
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	b, err := tarOf(files, at)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
