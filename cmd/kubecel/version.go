package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

// The linker stamps these (-X main.version=...): make build stamps version from git
// describe; make release (internal/release), which builds without VCS information so
// that a release's binaries depend on its sources alone, stamps all three. They are used
// only where the Go toolchain recorded nothing: version when the module version is
// "(devel)", revision and modified when there is no VCS information.
var (
	version  string
	revision string
	modified string // "true" for a tree with local changes
)

// stamp is what the linker stamped.
type stamp struct {
	version, revision string
	modified          bool
}

// buildInfo says which kubecel this is.
type buildInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Dirty     bool   `json:"dirty"`
	GoVersion string `json:"goVersion"`
}

// readBuildInfo reads the version from what the Go toolchain recorded in the binary.
func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfoFrom(bi, stamp{version: version, revision: revision, modified: modified == "true"})
}

// buildInfoFrom reads the toolchain's record (nil when there is none), with what the
// linker stamped as the fallback for "(devel)" and for missing VCS information.
func buildInfoFrom(bi *debug.BuildInfo, stamped stamp) buildInfo {
	b := buildInfo{Version: "(devel)", GoVersion: runtime.Version()}
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
	if b.Version == "(devel)" && stamped.version != "" {
		b.Version = stamped.version
	}
	if b.Revision == "" && stamped.revision != "" {
		b.Revision, b.Dirty = stamped.revision, stamped.modified
	}
	return b
}

// String is the one-line form: kubecel v0.1.0 (revision 0123456789ab, dirty) go1.26.8.
func (b buildInfo) String() string {
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

func newVersionCommand() *cobra.Command {
	var output clikit.OutputFlag
	cmd := &cobra.Command{
		Use:   "version [-o text|json|yaml]",
		Short: "Print kubecel's version",
		Long: `version prints the version of this kubecel binary: its module version (or, for a
build from a checkout, the version make build stamps from git describe; for a release,
its tag), the VCS revision it was built from and whether the tree had local changes
("dirty"), and the Go version. kubecel --version prints the same line.`,
		Example: `  kubecel version
  kubecel version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo()
			if output.Value == "text" {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), b)
				return err
			}
			return clikit.PrintData(cmd.OutOrStdout(), output.Value, b)
		},
	}
	output.AddFlag(cmd.Flags(), "text", "json", "yaml")
	return cmd
}

// registerBuildInfo adds kubecel_build_info, the usual constant 1 labelled with the
// version, to a metrics registry.
func registerBuildInfo(reg prometheus.Registerer) error {
	b := readBuildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "kubecel_build_info",
		Help:        "Always 1, labelled with the version, VCS revision and Go version of the running kubecel.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	return reg.Register(g)
}
