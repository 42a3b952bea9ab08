package backup

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultProgressInterval is how often a Progress reports while a
// transfer lasts.
const DefaultProgressInterval = 2 * time.Second

// Progress reports the bytes of a long transfer (a snapshot received, an
// archive read) on a terminal or log: one line "<label>: 123.4 MiB,
// 56.7 MiB/s" every Interval while the transfer lasts (none for a transfer
// shorter than that), and one closing line with the total, the time and
// the mean rate. The zero value reports nothing; a nil *Progress is valid
// and reports nothing.
type Progress struct {
	// W receives the lines (for example os.Stderr); nil reports nothing.
	W io.Writer
	// Interval is the time between two lines; 0 means
	// DefaultProgressInterval.
	Interval time.Duration

	mu sync.Mutex // serializes lines
}

// NewProgress returns a Progress that writes to w every
// DefaultProgressInterval.
func NewProgress(w io.Writer) *Progress { return &Progress{W: w} }

// transfer is one transfer being reported.
type transfer struct {
	p     *Progress
	label string
	start time.Time
	n     atomic.Int64
	stop  chan struct{}
	done  sync.WaitGroup
}

// begin starts reporting a transfer named label whose byte count is
// read by count (nil: the transfer's own counter, see add).
func (p *Progress) begin(label string, count func() int64) *transfer {
	t := &transfer{p: p, label: label, start: time.Now(), stop: make(chan struct{})}
	if p == nil || p.W == nil {
		return t
	}
	if count == nil {
		count = t.n.Load
	}
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	t.done.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				n := count()
				t.n.Store(n)
				p.printf("%s: %s, %s/s\n", label, bytesString(n), bytesString(int64(float64(n)/time.Since(t.start).Seconds())))
			case <-t.stop:
				t.n.Store(count())
				return
			}
		}
	})
	return t
}

// add counts n more bytes (for transfers without a count function).
func (t *transfer) add(n int) { t.n.Add(int64(n)) }

// end stops the periodic lines and prints the closing one with total
// bytes (or the last count when total < 0).
func (t *transfer) end(total int64) {
	close(t.stop)
	t.done.Wait()
	if t.p == nil || t.p.W == nil {
		return
	}
	if total < 0 {
		total = t.n.Load()
	}
	elapsed := time.Since(t.start)
	rate := ""
	if s := elapsed.Seconds(); s > 0 {
		rate = fmt.Sprintf(" (%s/s)", bytesString(int64(float64(total)/s)))
	}
	t.p.printf("%s: %s in %s%s\n", t.label, bytesString(total), elapsed.Round(time.Millisecond), rate)
}

// watchFile reports the growing size of the file at path (the .part file
// SaveWithVersion writes) until the returned stop is called with the
// total (or -1: the last size seen).
func (p *Progress) watchFile(path string) (stop func(total int64)) {
	t := p.begin("snapshot", func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			return 0
		}
		return st.Size()
	})
	return t.end
}

// note prints one line.
func (p *Progress) note(format string, args ...any) {
	if p == nil || p.W == nil {
		return
	}
	p.printf(format+"\n", args...)
}

func (p *Progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.W, format, args...)
}

// countingReader counts what is read through it into a transfer.
type countingReader struct {
	r io.Reader
	t *transfer
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.t.add(n)
	return n, err
}

// bytesString formats n bytes in binary units: "812 B", "4.0 KiB",
// "123.4 MiB", "1.2 GiB".
func bytesString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
