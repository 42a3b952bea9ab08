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
	path    string
	created bool // this lock created the lock file
	once    sync.Once
	f       *os.File
	err     error
}

// lockAttempts bounds lockDataDir's retries when the lock file it locked
// was removed or replaced meanwhile (discard by a start that failed).
const lockAttempts = 10

// lockDataDir takes the exclusive lock of <dir>/lock without waiting and
// writes this process's pid into the file. When another owner holds it the
// error is a *DataDirInUseError naming the directory and the owner's pid
// (as read from the file). The lock is only taken on the file the path
// names once locked: a file removed meanwhile (a failed start discarding
// the lock file it created) is let go and the path opened again, so two
// processes never hold locks on two different files of the same path.
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, lockFile)
	for range lockAttempts {
		created := true
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			created = false
			f, err = os.OpenFile(path, os.O_RDWR, 0o600)
			if errors.Is(err, os.ErrNotExist) {
				continue // removed since: create it again
			}
		}
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
		if !samePathFile(path, f) {
			f.Close()
			continue
		}
		err = f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("data dir %s: write lock file %s: %w", dir, path, err)
		}
		return &dataDirLock{path: path, created: created, f: f}, nil
	}
	return nil, fmt.Errorf("data dir %s: lock file %s keeps being replaced", dir, path)
}

// samePathFile says whether path still names the open file f.
func samePathFile(path string, f *os.File) bool {
	onPath, err := os.Stat(path)
	if err != nil {
		return false
	}
	held, err := f.Stat()
	return err == nil && os.SameFile(onPath, held)
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

// discard releases the lock of a start that failed, removing the lock
// file first (still locked) if this lock created it, so that the start
// leaves the data dir as it found it. Another process's lockDataDir that
// opened the removed file lets it go (samePathFile).
func (l *dataDirLock) discard() error {
	if l == nil {
		return nil
	}
	var err error
	if l.created {
		err = os.Remove(l.path)
	}
	return errors.Join(err, l.release())
}

// makeDataDir creates dir (mode 0700) and its missing parents, and
// returns the directories it created, dir first and each parent after its
// child: what removeCreatedDirs removes when the start fails.
func makeDataDir(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		err := os.Mkdir(missing[i], 0o700)
		if errors.Is(err, os.ErrExist) {
			continue // created meanwhile by someone else: not ours
		}
		if err != nil {
			removeCreatedDirs(created)
			return nil, fmt.Errorf("data dir: %w", err)
		}
		created = append([]string{missing[i]}, created...)
	}
	if len(missing) == 0 {
		if err := os.MkdirAll(dir, 0o700); err != nil { // not a directory, ...
			return nil, fmt.Errorf("data dir: %w", err)
		}
	}
	return created, nil
}

// removeCreatedDirs removes the directories makeDataDir created, in its
// order, while they are empty: a directory something was written to stays,
// and so do its parents.
func removeCreatedDirs(created []string) {
	for _, d := range created {
		if os.Remove(d) != nil {
			return
		}
	}
}
