package logfilter

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRepeatLimiter(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	var out bytes.Buffer
	l := NewRepeatLimiter(&out, time.Second, 2)
	l.now = func() time.Time { return now }
	write := func(s string) {
		t.Helper()
		if n, err := l.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	noLeader := func(i int) string {
		return fmt.Sprintf("E0102 15:04:05.%06d   12345 watcher.go:425] watch chan error: etcdserver: no leader\n", i)
	}
	for i := range 1000 {
		write(noLeader(i))
	}
	// Another message is never held back by the flood.
	write("E0102 15:04:05.999999   12345 store.go:1] something else\n")
	write(`{"ts":1767366245.1,"msg":"json entry"}` + "\n")
	write(`{"ts":1767366245.2,"msg":"json entry"}` + "\n")
	write(`{"ts":1767366245.3,"msg":"json entry"}` + "\n")
	now = now.Add(time.Second)
	write(noLeader(1001))

	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		strings.TrimSuffix(noLeader(0), "\n"),
		strings.TrimSuffix(noLeader(1), "\n"),
		"E0102 15:04:05.999999   12345 store.go:1] something else",
		`{"ts":1767366245.1,"msg":"json entry"}`,
		`{"ts":1767366245.2,"msg":"json entry"}`,
		strings.TrimSuffix(noLeader(1001), "\n") + " (998 identical messages dropped)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
