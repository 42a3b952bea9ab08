package binarytest

import "syscall"

// childProcAttr makes the kernel kill a child process when the test binary
// dies, so that no server or kubectl outlives an interrupted test run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
