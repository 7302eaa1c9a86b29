package importkro

import (
	"fmt"
	"os"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/kro"
)

// Run converts the ResourceGraphDefinition of the file path and prints the rules on
// s.Out, then a note a line on s.ErrOut for what it left out. It exits with status 1
// when the file cannot be read or converted, or when the converted rules do not load
// (they are printed all the same).
func Run(path string, s clikit.Streams) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	res, err := kro.Convert(data)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("%s: %w", path, err)}
	}
	if _, err := s.Out.Write(res.Rules); err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Fprintln(s.ErrOut, "note: "+n)
	}
	if res.Load != nil {
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("the rules converted from %s do not load: %w", path, res.Load)}
	}
	return nil
}
