package customapitest

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer that is safe for concurrent use: the
// io.Writer to hand to a child process (exec.Cmd's Stdout or Stderr),
// klog (klog.SetOutput) or a log backend while the test reads what has been
// written so far. The zero value is an empty buffer ready to use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer; it never fails.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what has been written so far.
func (b *LockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
