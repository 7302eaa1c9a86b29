package faults

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill the process when the test binary dies without its
// cleanups (a panic, a -timeout), so no controller outlives the suite.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
