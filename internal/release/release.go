package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Platform is an operating system and architecture, as GOOS and GOARCH name them.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are those a full release builds.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// ParsePlatforms reads a list such as "linux/amd64 darwin/arm64" (spaces or commas); it
// accepts only the platforms of Platforms.
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		os, arch, _ := strings.Cut(f, "/")
		p := Platform{os, arch}
		if !slices.Contains(Platforms, p) {
			return nil, fmt.Errorf("platform %q: want one of %v", f, Platforms)
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("platform %s given twice", p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("no platform: want one or more of " + fmt.Sprint(Platforms))
	}
	return out, nil
}

// versionPattern is a semantic version tag without build metadata, which an image tag
// cannot carry (no +).
var versionPattern = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// Config says what to build and from where.
type Config struct {
	// Version is the release's tag, vMAJOR.MINOR.PATCH with an optional pre-release.
	Version string
	// Revision is the commit built (40 hex digits); Modified says the tree had local
	// changes, which the binaries then report as dirty.
	Revision string
	Modified bool
	// Time is the commit's time (SOURCE_DATE_EPOCH): every archive entry and the image
	// are dated at it.
	Time time.Time
	// Platforms are the binaries to build; the linux ones also get an image.
	Platforms []Platform
	// Root is the module's root directory; Dist is where the artefacts go (created,
	// and emptied of earlier artefacts).
	Root, Dist string
	// Helm is the helm binary that renders install.yaml.
	Helm string
	// Log receives a line per step.
	Log func(format string, args ...any)
}

// ChartVersion is the chart's version: the release's without its v.
func (c Config) ChartVersion() string { return strings.TrimPrefix(c.Version, "v") }

var revisionPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

func (c Config) validate() error {
	if !versionPattern.MatchString(c.Version) {
		return fmt.Errorf("version %q: want a semantic version tag such as v0.3.0 or v0.3.0-rc.1 (make release VERSION=v0.3.0)", c.Version)
	}
	if !revisionPattern.MatchString(c.Revision) {
		return fmt.Errorf("revision %q: want the commit's 40 hex digits (git rev-parse HEAD)", c.Revision)
	}
	if c.Time.IsZero() || c.Time.Unix() <= 0 {
		return errors.New("no source time: set the commit's time (SOURCE_DATE_EPOCH, git log -1 --format=%ct)")
	}
	if len(c.Platforms) == 0 {
		return errors.New("no platform to build")
	}
	if c.Root == "" || c.Dist == "" || c.Helm == "" {
		return errors.New("the module root, the dist directory and helm must be set")
	}
	return nil
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

// Artefact names.
func binaryArchive(p Platform) string { return fmt.Sprintf("kubecel_%s_%s.tar.gz", p.OS, p.Arch) }
func imageArchive(arch string) string { return fmt.Sprintf("kubecel_image_%s.tar", arch) }
func chartArchive(c Config) string    { return fmt.Sprintf("kubecel-%s.tgz", c.ChartVersion()) }

const (
	installYAML = "install.yaml"
	sumsFile    = "SHA256SUMS"
)

// Build writes every artefact of c into c.Dist, then SHA256SUMS.
func Build(ctx context.Context, c Config) error {
	if err := c.validate(); err != nil {
		return err
	}
	if err := cleanDist(c.Dist); err != nil {
		return err
	}
	if c.Modified {
		c.logf("the tree has local changes: the binaries report commit %s as dirty", c.Revision[:12])
	}
	written := map[string][]byte{}
	for _, p := range c.Platforms {
		start := time.Now()
		bin, err := buildBinary(ctx, c, p)
		if err != nil {
			return err
		}
		license, err := os.ReadFile(filepath.Join(c.Root, "LICENSE"))
		if err != nil {
			return err
		}
		archive, err := tarGz([]entry{file("kubecel", 0o755, bin), file("LICENSE", 0o644, license)}, c.Time)
		if err != nil {
			return err
		}
		written[binaryArchive(p)] = archive
		c.logf("built %s (%s, binary %s) in %s", binaryArchive(p), size(len(archive)), size(len(bin)), time.Since(start).Round(time.Second))
		if p.OS == "linux" {
			start := time.Now()
			img, err := imageTar(c, p.Arch, bin)
			if err != nil {
				return fmt.Errorf("image for %s: %w", p, err)
			}
			written[imageArchive(p.Arch)] = img
			c.logf("built %s (%s) in %s", imageArchive(p.Arch), size(len(img)), time.Since(start).Round(time.Millisecond))
		}
	}
	chart, err := packageChart(c)
	if err != nil {
		return err
	}
	written[chartArchive(c)] = chart
	c.logf("packaged %s (%s)", chartArchive(c), size(len(chart)))
	install, err := renderInstall(ctx, c, chart)
	if err != nil {
		return err
	}
	written[installYAML] = install
	c.logf("rendered %s (%s)", installYAML, size(len(install)))
	written[sumsFile] = sums(written)
	for name, data := range written {
		if err := os.WriteFile(filepath.Join(c.Dist, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cleanDist creates dist, or removes from it the artefacts of an earlier build, so that
// SHA256SUMS describes exactly what is there. Other files are left alone.
func cleanDist(dist string) error {
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if isArtefact(e.Name()) {
			if err := os.Remove(filepath.Join(dist, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

var artefactPattern = regexp.MustCompile(`^(kubecel_[a-z]+_[a-z0-9]+\.tar\.gz|kubecel_image_[a-z0-9]+\.tar|kubecel-.+\.tgz|install\.yaml|SHA256SUMS)$`)

func isArtefact(name string) bool { return artefactPattern.MatchString(name) }

// sums is the SHA256SUMS file of the artefacts: "<hex>  <name>" lines sorted by name, as
// sha256sum prints them and sha256sum --check reads them.
func sums(files map[string][]byte) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		sum := sha256.Sum256(files[n])
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return []byte(b.String())
}

// size is a byte count in MB with one decimal, or in KB below a megabyte.
func size(n int) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
