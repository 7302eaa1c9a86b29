package main

import "strconv"

// exitError carries a specific exit code out of a command (for example `plan` exits 2
// when it finds changes). A nil err exits with code and prints nothing more.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit status " + strconv.Itoa(e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }
