package backup

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBytesString(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{123_456_789, "117.7 MiB"}, {5 << 30, "5.0 GiB"},
	} {
		if got := bytesString(tc.n); got != tc.want {
			t.Errorf("bytesString(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestProgressLines: a transfer that lasts reports periodic lines with a
// rate, then one closing line; a nil Progress reports nothing.
func TestProgressLines(t *testing.T) {
	var out bytes.Buffer
	p := &Progress{W: &out, Interval: 5 * time.Millisecond}
	tr := p.begin("snapshot", nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.add(1 << 10)
		p.mu.Lock()
		lines := strings.Count(out.String(), "\n")
		p.mu.Unlock()
		if lines >= 2 || time.Now().After(deadline) {
			break
		}
	}
	tr.end(-1)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.HasSuffix(lines[0], "iB/s") || !strings.Contains(lines[len(lines)-1], " in ") {
		t.Fatalf("lines: %q", lines)
	}
	var none *Progress
	none.begin("x", nil).end(10)
	none.note("nothing")
}
