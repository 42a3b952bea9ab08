package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// InUseError is the error of Lock and Own when another process (or an
// Owner of this process that was not yet released) owns the data dir.
// Check for it with errors.As.
type InUseError struct {
	// Dir is the data dir, as given to Lock or Own.
	Dir string
	// PID is the owner's process id as written in <Dir>/lock; 0 when the
	// file does not hold one (yet).
	PID int
}

// Error names the data dir, the owner's pid and what to do.
func (e *InUseError) Error() string {
	owner := "pid unknown"
	if e.PID > 0 {
		owner = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("data dir %s is in use by another customapi process (%s, lock file %s): stop it or choose another --data-dir",
		e.Dir, owner, filepath.Join(e.Dir, LockFile))
}

// Lock takes the exclusive lock of <dir>/lock that a server holds while it
// runs on dir (Own) and writes this process's pid into it, without
// waiting, for tools that need the data dir to themselves (`customapi
// backup` without a server, `customapi restore`). dir must exist. When
// another process owns the data dir the error is an *InUseError naming dir
// and the owner's pid. release drops the lock and keeps the file; it is
// idempotent.
func Lock(dir string) (release func() error, err error) {
	l, err := acquire(dir)
	if err != nil {
		return nil, err
	}
	return l.release, nil
}

// Owner is a process's ownership of a data dir, taken by Own for a server
// that starts on it: the data dir's lock held, and what Own created to
// take it.
type Owner struct {
	lock    *heldLock
	created []string // the directories Own created, dir first
}

// Own creates the data dir dir (mode 0700) and its missing parents, takes
// its lock as Lock does, and makes dir mode 0700. When another process
// owns the data dir the error is an *InUseError naming dir and the owner's
// pid. On error it leaves the file system as it found it: the directories
// it created are removed again.
//
// Release the Owner when done with the data dir; Discard it instead when
// the start it was taken for fails, so that the failed start leaves no
// trace.
func Own(dir string) (_ *Owner, err error) {
	created, err := makeDir(dir)
	if err != nil {
		return nil, err
	}
	o := &Owner{created: created}
	defer func() {
		if err != nil {
			_ = o.Discard()
		}
	}()
	if o.lock, err = acquire(dir); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	return o, nil
}

// Release drops the data dir's lock and keeps the lock file (removing it
// would let a second process lock a fresh file while a third still holds
// the old one). Idempotent; a nil Owner is released.
func (o *Owner) Release() error {
	if o == nil {
		return nil
	}
	return o.lock.release()
}

// Discard undoes Own for a start that failed: it removes the lock file
// (still locked) if Own created it, drops the lock, and removes the
// directories Own created while they are empty (a directory something was
// written to stays, and so do its parents). A data dir that existed keeps
// its contents. Another process's Lock or Own that opened the removed lock
// file meanwhile lets it go and opens the path again. A nil Owner is
// discarded.
func (o *Owner) Discard() error {
	if o == nil {
		return nil
	}
	err := o.lock.discard()
	removeCreatedDirs(o.created)
	return err
}

// heldLock is the held lock of a data dir. release is idempotent.
type heldLock struct {
	path    string
	created bool // this lock created the lock file
	once    sync.Once
	f       *os.File
	err     error
}

// lockAttempts bounds acquire's retries when the lock file it locked
// was removed or replaced meanwhile (discard by a start that failed).
const lockAttempts = 10

// acquire takes the exclusive lock of <dir>/lock without waiting and
// writes this process's pid into the file. When another owner holds it the
// error is an *InUseError naming the directory and the owner's pid
// (as read from the file). The lock is only taken on the file the path
// names once locked: a file removed meanwhile (a failed start discarding
// the lock file it created) is let go and the path opened again, so two
// processes never hold locks on two different files of the same path.
func acquire(dir string) (*heldLock, error) {
	path := filepath.Join(dir, LockFile)
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
				inUse := &InUseError{Dir: dir}
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
		return &heldLock{path: path, created: created, f: f}, nil
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
func (l *heldLock) release() error {
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
// leaves the data dir as it found it. Another process's acquire that
// opened the removed file lets it go (samePathFile).
func (l *heldLock) discard() error {
	if l == nil {
		return nil
	}
	var err error
	if l.created {
		err = os.Remove(l.path)
	}
	return errors.Join(err, l.release())
}

// makeDir creates dir (mode 0700) and its missing parents, and
// returns the directories it created, dir first and each parent after its
// child: what removeCreatedDirs removes when the start fails.
func makeDir(dir string) ([]string, error) {
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

// removeCreatedDirs removes the directories makeDir created, in its
// order, while they are empty: a directory something was written to stays,
// and so do its parents.
func removeCreatedDirs(created []string) {
	for _, d := range created {
		if os.Remove(d) != nil {
			return
		}
	}
}
