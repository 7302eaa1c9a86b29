package clikit

import "fmt"

// UsageError is a mistake in a command line; main prints where the usage is after it.
type UsageError struct {
	// Msg says what is wrong.
	Msg string
	// Command is the command whose usage to read, such as "kubecel check".
	Command string
}

func (e *UsageError) Error() string { return e.Msg }

// Hint is the line main prints after the error.
func (e *UsageError) Hint() string {
	return fmt.Sprintf("See '%s --help' for usage.", e.Command)
}
