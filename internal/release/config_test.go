package release

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigValidate(t *testing.T) {
	good := Config{
		Version: "v0.3.0", Revision: strings.Repeat("ab", 20), Time: epoch,
		Platforms: Platforms, Root: ".", Dist: "dist", Helm: "bin/helm",
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // "" when valid
	}{
		{"a release", func(*Config) {}, ""},
		{"a pre-release", func(c *Config) { c.Version = "v0.3.0-rc.1" }, ""},
		{"the test version", func(c *Config) { c.Version = "v0.0.0-ci" }, ""},
		{"no v", func(c *Config) { c.Version = "0.3.0" }, `version "0.3.0"`},
		{"two parts", func(c *Config) { c.Version = "v0.3" }, `version "v0.3"`},
		{"build metadata, which an image tag cannot carry", func(c *Config) { c.Version = "v0.3.0+abc" }, `version "v0.3.0+abc"`},
		{"a leading zero", func(c *Config) { c.Version = "v0.03.0" }, `version "v0.03.0"`},
		{"git describe of an untagged commit", func(c *Config) { c.Version = "5d66baa-dirty" }, `version "5d66baa-dirty"`},
		{"a short revision", func(c *Config) { c.Revision = "5d66baa" }, `revision "5d66baa"`},
		{"no time", func(c *Config) { c.Time = time.Time{} }, "no source time"},
		{"the epoch", func(c *Config) { c.Time = time.Unix(0, 0) }, "no source time"},
		{"no platform", func(c *Config) { c.Platforms = nil }, "no platform"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.change(&c)
			err := c.validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("validate: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestParsePlatforms(t *testing.T) {
	got, err := ParsePlatforms("linux/amd64, darwin/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Platform{{"linux", "amd64"}, {"darwin", "arm64"}}, got); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "windows/amd64", "linux", "linux/amd64 linux/amd64", "linux/386"} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("ParsePlatforms(%q) took it", bad)
		}
	}
}

func TestSums(t *testing.T) {
	got := string(sums(map[string][]byte{"b": []byte("b"), "a": []byte("a")}))
	// sha256sum a b
	want := "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a\n" +
		"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b\n"
	if got != want {
		t.Errorf("sums:\n%s\nwant:\n%s", got, want)
	}
}

// TestModuleGoInstallable: go install github.com/kubecel/kubecel/cmd/kubecel@VERSION,
// which docs/install.md shows, refuses a module whose go.mod has replace or exclude
// directives.
func TestModuleGoInstallable(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^\s*(replace|exclude)\b.*$`).Find(gomod); m != nil {
		t.Errorf("go.mod: %q: go install ...@version would refuse the module", m)
	}
}
