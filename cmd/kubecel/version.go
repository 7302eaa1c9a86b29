package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/buildinfo"
	"github.com/kubecel/kubecel/internal/cli/clikit"
)

// The linker stamps these (-X main.version=...): make build stamps version from git
// describe; make release (internal/release) stamps all three. See buildinfo.Stamp.
var (
	version  string
	revision string
	modified string // "true" for a tree with local changes
)

// readBuildInfo says which kubecel this is, from what the Go toolchain recorded in the
// binary and what the linker stamped.
func readBuildInfo() buildinfo.Info {
	return buildinfo.Read(buildinfo.Stamp{Version: version, Revision: revision, Modified: modified == "true"})
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
			return buildinfo.Run(&buildinfo.Options{Output: output.Value, Info: readBuildInfo()}, streamsOf(cmd))
		},
	}
	output.AddFlag(cmd.Flags(), "text", "json", "yaml")
	return cmd
}
