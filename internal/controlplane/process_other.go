//go:build !linux

package controlplane

import "syscall"

// dieWithParent: only Linux has a parent-death signal; elsewhere the watchdog alone
// stops a child whose parent died.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
