package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pauseImage is the reference of the local node's sandbox image: a name no
// registry serves, so that containerd never tries to pull it (it is
// imported, see writePauseImage).
const pauseImage = "localhost/nacflow/pause:local"

// writePauseImage writes to out an image tarball (docker-archive format, as
// `ctr images import` reads it) named pauseImage holding the static binary
// at binPath as /pause, its entrypoint, run as uid 65535 as Kubernetes'
// pause image does. Files and the config carry the Unix epoch as time, so
// the image and its digest are the same on every start. Errors: the binary
// unreadable, out not writable.
func writePauseImage(binPath, out, arch string) error {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return fmt.Errorf("reading the pause binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromReader(&buf)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{"/pause"}
	cf.Config.User = "65535:65535"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	ref, err := name.NewTag(pauseImage)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}
