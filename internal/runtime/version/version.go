// Package version tells which build of nacflow is running: the release (git
// describe) and commit the Makefile stamps into the binaries with -ldflags
// -X, or what the Go toolchain recorded of the checkout (go build's VCS
// stamping) when they were built another way.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the Makefile: -X github.com/nacflow/nacflow/internal/runtime/version.version=…
// and .revision=….
var (
	version  string
	revision string
)

// Info is a build's identity.
type Info struct {
	// Version is git describe of the commit built (e.g. v0.1.0-3-gabc1234,
	// with -dirty for uncommitted changes), or "devel" when unknown.
	Version string `json:"version"`
	// Revision is the commit's hash ("" when unknown).
	Revision string `json:"revision,omitempty"`
	// GoVersion is the Go toolchain's version (e.g. go1.26.8).
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the running binary's Info.
func Get() Info {
	i := Info{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Revision == "" {
					i.Revision = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		if i.Version == "" && i.Revision != "" {
			i.Version = "devel-" + short(i.Revision)
			if modified {
				i.Version += "-dirty"
			}
		}
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	return i
}

// String returns i in one line: "v0.1.0 (commit abc…, go1.26.8, linux/amd64)".
func (i Info) String() string {
	if i.Revision == "" {
		return fmt.Sprintf("%s (%s, %s)", i.Version, i.GoVersion, i.Platform)
	}
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, i.Revision, i.GoVersion, i.Platform)
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
