package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

// flagError is the root command's FlagErrorFunc: an unknown flag gets the closest flag
// of the command ("did you mean --rules?"), and every flag error says where the usage is,
// as kubectl does.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if near := closestFlag(cmd.Flags(), name); near != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", near)
		}
	}
	return &clikit.UsageError{Msg: msg, Command: cmd.CommandPath()}
}

// closestFlag returns the visible flag of fs nearest to name: one that starts with it,
// or that it starts with, or within two edits of it; "" when none is that close.
func closestFlag(fs *pflag.FlagSet, name string) string {
	best, bestDist := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := clikit.EditDistance(name, f.Name)
		if strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name) {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}
