package main

import (
	"fmt"
	"io"
	"os"
)

// stdinName names the standard input in messages, where "-" was given for a file.
const stdinName = "<stdin>"

// readInput reads a file, or the standard input when path is "-". It returns the name
// to use in messages: the path, or <stdin>.
func readInput(stdin io.Reader, path string) (data []byte, name string, err error) {
	if path != "-" {
		data, err = os.ReadFile(path)
		return data, path, err
	}
	data, err = io.ReadAll(stdin)
	if err != nil {
		return nil, stdinName, fmt.Errorf("read %s: %w", stdinName, err)
	}
	return data, stdinName, nil
}

// inputName is the name of a file in messages: <stdin> for -.
func inputName(path string) string {
	if path == "-" {
		return stdinName
	}
	return path
}

// oneStdin refuses a command line that would read the standard input twice: among the
// rules files (--rules) and the files of -f.
func oneStdin(rulesFiles, files []string) error {
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
