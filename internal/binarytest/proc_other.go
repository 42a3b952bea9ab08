//go:build !linux

package binarytest

import "syscall"

// childProcAttr is nil outside Linux, which alone has a parent-death
// signal: there the tests' cleanups alone stop child processes.
func childProcAttr() *syscall.SysProcAttr { return nil }
