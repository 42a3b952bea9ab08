package logfilter

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"
)

// DefaultInterval and DefaultBurst let each distinct message through at
// most 3 times per second.
const (
	DefaultInterval = time.Second
	DefaultBurst    = 3
)

// maxTracked bounds the memory of distinct messages: when more are tracked,
// those not seen for an interval are forgotten.
const maxTracked = 4096

// RepeatLimiter is an io.Writer that passes each log entry (one Write call,
// as klog's text and JSON loggers make) to the underlying writer unless the
// same message was already written burst times in the current interval.
// Two entries are the same message when they are equal once the klog
// header (severity, time, pid, file:line) or the JSON "ts" field is
// ignored. When a message is let through again after some copies were
// dropped, a text entry gets the suffix " (N identical messages dropped)".
// It is safe for concurrent use.
type RepeatLimiter struct {
	out      io.Writer
	interval time.Duration
	burst    int
	now      func() time.Time

	mu   sync.Mutex
	seen map[string]*repeats
}

type repeats struct {
	windowStart time.Time
	written     int
	dropped     int
}

// NewRepeatLimiter returns a RepeatLimiter writing to out that lets each
// message through at most burst times per interval (burst < 1 means 1;
// interval <= 0 means DefaultInterval).
func NewRepeatLimiter(out io.Writer, interval time.Duration, burst int) *RepeatLimiter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if burst < 1 {
		burst = 1
	}
	return &RepeatLimiter{out: out, interval: interval, burst: burst, now: time.Now, seen: map[string]*repeats{}}
}

// Write writes p to the underlying writer, or drops it as a repeat. It
// reports len(p) written for a dropped entry, so loggers do not see an error.
func (l *RepeatLimiter) Write(p []byte) (int, error) {
	key := messageKey(p)
	now := l.now()
	l.mu.Lock()
	r, ok := l.seen[key]
	if !ok {
		if len(l.seen) >= maxTracked {
			l.forget(now)
		}
		r = &repeats{windowStart: now}
		l.seen[key] = r
	}
	if now.Sub(r.windowStart) >= l.interval {
		r.windowStart, r.written = now, 0
	}
	if r.written >= l.burst {
		r.dropped++
		l.mu.Unlock()
		return len(p), nil
	}
	r.written++
	dropped := r.dropped
	r.dropped = 0
	l.mu.Unlock()

	if dropped > 0 && isText(p) {
		line := bytes.TrimSuffix(p, []byte("\n"))
		if _, err := fmt.Fprintf(l.out, "%s (%d identical messages dropped)\n", line, dropped); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return l.out.Write(p)
}

// forget drops the messages not seen for an interval; called with mu held.
func (l *RepeatLimiter) forget(now time.Time) {
	for k, r := range l.seen {
		if now.Sub(r.windowStart) >= l.interval && r.dropped == 0 {
			delete(l.seen, k)
		}
	}
}

// klogHeader matches klog's text header, for example
// "E0102 15:04:05.123456   12345 watcher.go:425] ".
var klogHeader = regexp.MustCompile(`^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [^\]]*\] `)

// jsonTime matches the timestamp field of the JSON log format.
var jsonTime = regexp.MustCompile(`"ts":[0-9.e+]+,?`)

// messageKey is an entry without what changes between repeats of it.
func messageKey(p []byte) string {
	if loc := klogHeader.FindIndex(p); loc != nil {
		return string(p[loc[1]:])
	}
	if len(p) > 0 && p[0] == '{' {
		return string(jsonTime.ReplaceAll(p, nil))
	}
	return string(p)
}

// isText says whether an entry is a text line that may get a suffix (not a
// JSON object, which must stay valid).
func isText(p []byte) bool {
	return len(p) == 0 || p[0] != '{'
}
