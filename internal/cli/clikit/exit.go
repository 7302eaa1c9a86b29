package clikit

import "strconv"

// ExitError carries a specific exit code out of a command (for example `plan` exits 2
// when it finds changes).
type ExitError struct {
	// Code is the exit status.
	Code int
	// Err is printed before the command exits; nil prints nothing more.
	Err error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return "exit status " + strconv.Itoa(e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }
