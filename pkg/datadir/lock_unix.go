//go:build unix

package datadir

import (
	"errors"
	"os"
	"syscall"
)

// errLockHeld is tryLock's error when another open file description holds
// the lock.
var errLockHeld = errors.New("lock held")

// tryLock takes an exclusive flock(2) on f without blocking. flock locks
// belong to the open file description, so a second open of the same file in
// this process conflicts too, and the kernel drops the lock when the
// process exits, however it exits.
func tryLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLockHeld
		default:
			return err
		}
	}
}
