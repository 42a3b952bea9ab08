package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// lockFile is the file in the data dir whose exclusive lock marks the one
// process that owns the data dir; it holds that process's pid.
const lockFile = "lock"

// DataDirInUseError is Options.Config's error when another process (or
// another Config of this process that was not yet released) owns the data
// dir. Check for it with errors.As.
type DataDirInUseError struct {
	// Dir is the absolute data dir.
	Dir string
	// PID is the owner's process id as written in <Dir>/lock; 0 when the
	// file does not hold one (yet).
	PID int
}

// Error names the data dir, the owner's pid and what to do.
func (e *DataDirInUseError) Error() string {
	owner := "pid unknown"
	if e.PID > 0 {
		owner = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("data dir %s is in use by another customapi process (%s, lock file %s): stop it or choose another --data-dir",
		e.Dir, owner, filepath.Join(e.Dir, lockFile))
}

// dataDirLock is the held lock of a data dir. Release is idempotent.
type dataDirLock struct {
	path string
	once sync.Once
	f    *os.File
	err  error
}

// lockDataDir takes the exclusive lock of <dir>/lock without waiting and
// writes this process's pid into the file. When another owner holds it the
// error is a *DataDirInUseError naming the directory and the owner's pid
// (as read from the file).
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: lock: %w", dir, err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errLockHeld) {
			inUse := &DataDirInUseError{Dir: dir}
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
					inUse.PID = pid
				}
			}
			return nil, inUse
		}
		return nil, fmt.Errorf("data dir %s: lock %s: %w", dir, path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data dir %s: write lock file %s: %w", dir, path, err)
	}
	return &dataDirLock{path: path, f: f}, nil
}

// release empties the lock file and drops the lock (closing the file drops
// it). The file is kept: removing it would let a second process lock a
// fresh file while a third still holds the old one.
func (l *dataDirLock) release() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		_ = l.f.Truncate(0)
		l.err = l.f.Close()
	})
	return l.err
}
