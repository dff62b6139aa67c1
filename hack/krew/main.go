// Command krew packs kubectl-nac's release archives for krew and fills in
// the plugin manifest (make krew): for each platform, the archive
// kubectl-nac_<version>_<os>_<arch>.tar.gz holding that platform's
// kubectl-nac and the platform-independent files (kubectl_complete-nac);
// then the template plugins/nac.yaml, rendered into <dist>/nac.yaml with
// each archive's sha256.
//
// The template is written in krew-release-bot's .krew.yaml syntax (the
// release tag as .TagName; addURIAndSha "<url template>" .TagName writing
// a platform's uri and sha256), so the same file can drive that bot on a
// GitHub release; here the sha256 is of the archive in <dist> named like the
// URL's last element.
//
// Archives are reproducible: entries sorted, owned by 0:0 with no names,
// mode 0755, one fixed modification time (-mtime, the commit's time), gzip
// without a name or time.
//
// Usage: krew -version v0.1.0 -bin-dir dist/krew -dist dist -file hack/kubectl_complete-nac
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
	"time"
)

// Platforms are the os_arch pairs archived by default: those kubectl-nac is
// released for.
var Platforms = []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"}

// semverTag is krew's rule for spec.version: a semantic version with a
// leading v (krew's internal/installation/semver).
var semverTag = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var o Options
	var files stringList
	flag.StringVar(&o.Version, "version", "", "Release tag, a semantic version with a leading v (krew's spec.version).")
	flag.StringVar(&o.BinDir, "bin-dir", "dist/krew", "Directory holding <os>_<arch>/kubectl-nac for each platform.")
	flag.StringVar(&o.Dist, "dist", "dist", "Where the archives and nac.yaml are written.")
	flag.StringVar(&o.Template, "template", "plugins/nac.yaml", "The manifest template.")
	flag.Int64Var(&o.MTime, "mtime", 0, "Modification time of every archive entry, Unix seconds.")
	flag.Var(&files, "file", "A platform-independent file to add to every archive (may be repeated).")
	platforms := flag.String("platforms", strings.Join(Platforms, ","), "Comma-separated os_arch pairs.")
	flag.Parse()
	o.Files = files
	o.Platforms = strings.Split(*platforms, ",")
	manifest, err := Package(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
	fmt.Println(manifest)
}

// Options say what Package packs.
type Options struct {
	// Version is the release tag, e.g. v0.1.0.
	Version string
	// BinDir holds <os>_<arch>/kubectl-nac for each of Platforms.
	BinDir string
	// Files are added to every archive, under their base names.
	Files []string
	// Platforms are os_arch pairs, e.g. linux_amd64.
	Platforms []string
	// Dist receives the archives and nac.yaml.
	Dist string
	// Template is the manifest template's path.
	Template string
	// MTime is every entry's modification time, Unix seconds.
	MTime int64
}

// ArchiveName is a platform's archive: kubectl-nac_<version>_<os>_<arch>.tar.gz.
func ArchiveName(version, platform string) string {
	return "kubectl-nac_" + version + "_" + platform + ".tar.gz"
}

// Package writes each platform's archive and the filled-in manifest into
// o.Dist and returns the manifest's path.
func Package(o Options) (string, error) {
	if !semverTag.MatchString(o.Version) {
		return "", fmt.Errorf("version %q is not a semantic version with a leading v, as krew requires (tag the release, or pass KREW_VERSION)", o.Version)
	}
	if err := os.MkdirAll(o.Dist, 0o755); err != nil {
		return "", err
	}
	for _, p := range o.Platforms {
		entries := append([]string{filepath.Join(o.BinDir, p, "kubectl-nac")}, o.Files...)
		if err := writeArchive(filepath.Join(o.Dist, ArchiveName(o.Version, p)), entries, time.Unix(o.MTime, 0)); err != nil {
			return "", fmt.Errorf("archive for %s: %w", p, err)
		}
	}
	tmpl, err := os.ReadFile(o.Template)
	if err != nil {
		return "", err
	}
	manifest, err := Render(string(tmpl), o.Version, o.Dist)
	if err != nil {
		return "", err
	}
	out := filepath.Join(o.Dist, filepath.Base(o.Template))
	return out, os.WriteFile(out, []byte(manifest), 0o644)
}

// writeArchive writes a reproducible tar.gz of files (each under its base
// name, sorted) to name.
func writeArchive(name string, files []string, mtime time.Time) error {
	sorted := append([]string(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return filepath.Base(sorted[i]) < filepath.Base(sorted[j]) })
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, f := range sorted {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     filepath.Base(f),
			Mode:     0o755,
			Size:     int64(len(b)),
			ModTime:  mtime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}

// Render fills in the manifest template src for the release tag: .TagName,
// and addURIAndSha, whose URL is itself a template of .TagName and .Version
// (the tag's digits) and whose sha256 is of the file of dist named like the
// URL's last element.
func Render(src, tag, dist string) (string, error) {
	funcs := template.FuncMap{
		"addURIAndSha": func(urlTemplate, tag string) (string, error) {
			var url strings.Builder
			t, err := template.New("url").Option("missingkey=error").Parse(urlTemplate)
			if err != nil {
				return "", err
			}
			data := map[string]string{"TagName": tag, "Version": strings.TrimPrefix(tag, "v")}
			if err := t.Execute(&url, data); err != nil {
				return "", err
			}
			sum, err := sha256File(filepath.Join(dist, path.Base(url.String())))
			if err != nil {
				return "", err
			}
			// The next line's indent is the bot's: the call stands in a
			// platform, 4 spaces in.
			return fmt.Sprintf("uri: %s\n    sha256: %s", url.String(), sum), nil
		},
	}
	t, err := template.New("manifest").Option("missingkey=error").Funcs(funcs).Parse(src)
	if err != nil {
		return "", fmt.Errorf("parsing the manifest template: %w", err)
	}
	var out strings.Builder
	if err := t.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		return "", fmt.Errorf("rendering the manifest: %w", err)
	}
	return out.String(), nil
}

func sha256File(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
