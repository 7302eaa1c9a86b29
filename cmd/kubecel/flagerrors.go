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
		d := editDistance(name, f.Name)
		if strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name) {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
