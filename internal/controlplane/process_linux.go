package controlplane

import "syscall"

// dieWithParent makes a child process get SIGKILL when this one dies.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
