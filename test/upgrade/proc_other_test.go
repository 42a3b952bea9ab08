//go:build !linux

package upgrade

import "syscall"

// childProcAttr is nil outside Linux, which has no parent-death signal.
func childProcAttr() *syscall.SysProcAttr { return nil }
