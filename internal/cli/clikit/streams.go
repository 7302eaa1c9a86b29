package clikit

import "io"

// Streams are where a command reads its input and writes its output and messages.
type Streams struct {
	// In is read where a file is given as - (--rules -, -f -).
	In io.Reader
	// Out receives the command's output.
	Out io.Writer
	// ErrOut receives its warnings and progress.
	ErrOut io.Writer
}
