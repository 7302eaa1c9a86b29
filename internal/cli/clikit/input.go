package clikit

import (
	"fmt"
	"io"
	"os"
)

// StdinName names the standard input in messages, where "-" was given for a file.
const StdinName = "<stdin>"

// ReadInput reads a file, or the standard input when path is "-". It returns the name
// to use in messages: the path, or <stdin>.
func ReadInput(stdin io.Reader, path string) (data []byte, name string, err error) {
	if path != "-" {
		data, err = os.ReadFile(path)
		return data, path, err
	}
	data, err = io.ReadAll(stdin)
	if err != nil {
		return nil, StdinName, fmt.Errorf("read %s: %w", StdinName, err)
	}
	return data, StdinName, nil
}

// InputName is the name of a file in messages: <stdin> for -.
func InputName(path string) string {
	if path == "-" {
		return StdinName
	}
	return path
}

// OneStdin refuses a command line that would read the standard input twice: among the
// rules files (--rules) and the files of -f.
func OneStdin(rulesFiles, files []string) error {
	n := 0
	for _, f := range append(append([]string(nil), rulesFiles...), files...) {
		if f == "-" {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("only one of --rules and -f can be - (the standard input)")
	}
	return nil
}
