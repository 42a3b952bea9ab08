//go:build !linux

package e2e

import "syscall"

// childProcAttr is empty outside Linux: there the tests' cleanups alone stop
// child processes.
func childProcAttr() *syscall.SysProcAttr { return nil }
