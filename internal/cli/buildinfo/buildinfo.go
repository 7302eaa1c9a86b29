package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

// Stamp is what the linker stamped into package main (-X main.version=...): make build
// stamps the version from git describe; make release (internal/release), which builds
// without VCS information so that a release's binaries depend on its sources alone,
// stamps all three. They are used only where the Go toolchain recorded nothing: Version
// when the module version is "(devel)", Revision and Modified when there is no VCS
// information.
type Stamp struct {
	Version, Revision string
	Modified          bool // a tree with local changes
}

// Info says which kubecel this is.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Dirty     bool   `json:"dirty"`
	GoVersion string `json:"goVersion"`
}

// Read reads the version from what the Go toolchain recorded in the binary, with
// stamped as the fallback.
func Read(stamped Stamp) Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi, stamped)
}

// From reads the toolchain's record (nil when there is none), with what the linker
// stamped as the fallback for "(devel)" and for missing VCS information.
func From(bi *debug.BuildInfo, stamped Stamp) Info {
	b := Info{Version: "(devel)", GoVersion: runtime.Version()}
	if bi != nil {
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			b.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Dirty = s.Value == "true"
			}
		}
	}
	if b.Version == "(devel)" && stamped.Version != "" {
		b.Version = stamped.Version
	}
	if b.Revision == "" && stamped.Revision != "" {
		b.Revision, b.Dirty = stamped.Revision, stamped.Modified
	}
	return b
}

// String is the one-line form: kubecel v0.1.0 (revision 0123456789ab, dirty) go1.26.8.
func (b Info) String() string {
	s := "kubecel " + b.Version
	if b.Revision != "" {
		rev := b.Revision[:min(len(b.Revision), 12)]
		if b.Dirty {
			rev += ", dirty"
		}
		s += " (revision " + rev + ")"
	}
	return s + " " + b.GoVersion
}

// Options are kubecel version's flags.
type Options struct {
	// Output is the format: text (the one-line form), json or yaml.
	Output string
	// Info is the build to print.
	Info Info
}

// Run prints the build on s.Out: kubecel version.
func Run(o *Options, s clikit.Streams) error {
	if o.Output == "text" {
		_, err := fmt.Fprintln(s.Out, o.Info)
		return err
	}
	return clikit.PrintData(s.Out, o.Output, o.Info)
}

// Register adds kubecel_build_info, the usual constant 1 labelled with b's version, VCS
// revision and Go version, to a metrics registry.
func Register(reg prometheus.Registerer, b Info) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "kubecel_build_info",
		Help:        "Always 1, labelled with the version, VCS revision and Go version of the running kubecel.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	return reg.Register(g)
}
