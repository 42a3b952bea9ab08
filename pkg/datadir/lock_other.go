//go:build !unix

package datadir

import (
	"errors"
	"os"
)

// errLockHeld is tryLock's error when another owner holds the lock.
var errLockHeld = errors.New("lock held")

// tryLock does not lock on systems without flock(2): there the embedded
// etcd's own database lock is the only guard against a second owner.
func tryLock(*os.File) error { return nil }
