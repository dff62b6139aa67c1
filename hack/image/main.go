// Command image builds nacflow's container image without a Docker engine or
// a registry: one layer holding the static nac binary, the CA roots, and the
// passwd and group entries of the non-root user it runs as (uid 65532, as
// distroless' "nonroot"), on an empty base. The image is assembled with
// go-containerregistry and written as a tarball that containerd
// (`ctr images import`), Docker (`docker load`) and crane read.
//
// The build is reproducible: every file's time is the commit's time
// (-created), owners and modes are fixed, and the layer is written in a fixed
// order, so two builds of one commit give the same digest.
//
// Usage:
//
//	image -binary bin/linux-amd64/nac -ca /etc/ssl/certs/ca-certificates.crt \
//	  -tag ghcr.io/nacflow/nacflow:v0.1.0 -version v0.1.0 -revision $(git rev-parse HEAD) \
//	  -created $(git log -1 --format=%ct) -out dist/nacflow-image.tar
//
// It prints the image's digest (sha256:…) on standard output.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nacflow/nacflow/hack/image/build"
)

func main() {
	var o build.Options
	var created string
	flag.StringVar(&o.Binary, "binary", "", "the static nac binary for linux (required)")
	flag.StringVar(&o.CARoots, "ca", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of CA roots, installed at /etc/ssl/certs/ca-certificates.crt")
	flag.StringVar(&o.Tag, "tag", "", "image reference the tarball names, e.g. ghcr.io/nacflow/nacflow:v0.1.0 (required)")
	flag.StringVar(&o.Version, "version", "", "org.opencontainers.image.version (git describe)")
	flag.StringVar(&o.Revision, "revision", "", "org.opencontainers.image.revision (the commit)")
	flag.StringVar(&o.Source, "source", "https://github.com/nacflow/nacflow", "org.opencontainers.image.source")
	flag.StringVar(&o.Arch, "arch", "amd64", "the binary's architecture")
	flag.StringVar(&created, "created", "0", "the image's and its files' time, in seconds since the epoch (the commit's time: git log -1 --format=%ct)")
	flag.StringVar(&o.Out, "out", "", "the tarball to write (required)")
	flag.StringVar(&o.Layout, "oci-layout", "", "also write an OCI image layout into this directory (optional)")
	flag.Parse()
	secs, err := strconv.ParseInt(created, 10, 64)
	if err != nil || secs < 0 {
		fail(fmt.Errorf("-created %q: want seconds since the epoch", created))
	}
	o.Created = time.Unix(secs, 0).UTC()
	if o.Binary == "" || o.Tag == "" || o.Out == "" {
		flag.Usage()
		os.Exit(2)
	}
	digest, err := build.Write(o)
	if err != nil {
		fail(err)
	}
	fmt.Println(digest)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}
