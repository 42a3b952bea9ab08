package binarytest

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// errorLogLine matches log lines that must not appear: zap (etcd)
	// lines at error level or above, klog fatal lines, panics and races.
	errorLogLine = regexp.MustCompile(`"level":"(error|dpanic|panic|fatal)"|^F\d{4} |^panic: |^fatal error: |WARNING: DATA RACE`)
	// klogErrorLine matches klog's error lines.
	klogErrorLine = regexp.MustCompile(`^E\d{4} `)
	// portRaceLine is etcd's error line when a port pkg/etcd found free was
	// taken before etcd bound it; pkg/etcd then retries with new ports.
	portRaceLine = regexp.MustCompile(`"msg":"creating (peer|client) listener failed".*address already in use`)
	// storageVersionLine is etcd's error line when its storage version
	// monitor runs before a new member (a new or restored data dir) has
	// recorded its first term or confState; etcd retries later, and its
	// maintainers call it harmless.
	storageVersionLine = regexp.MustCompile(`"msg":"failed to update storage version".*cannot detect storage schema version: missing (term|confstate) information`)
)

// StderrLines are a server's stderr lines that matter, sorted by
// ClassifyStderr.
type StderrLines struct {
	// Errors are lines a clean run must not have: zap (etcd) lines at
	// error level or above, klog fatal lines, panics and data races.
	Errors []string
	// KlogErrors are klog's error lines ("E1207 ...").
	KlogErrors []string
	// Expected are etcd's error lines known to be harmless: a port taken
	// before etcd bound it (pkg/etcd retries with new ports), and the
	// storage version monitor running before a new member's first term.
	Expected []string
}

// ClassifyStderr sorts a server's stderr lines into StderrLines; other
// lines are left out.
func ClassifyStderr(stderr string) StderrLines {
	var l StderrLines
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case portRaceLine.MatchString(line), storageVersionLine.MatchString(line):
			l.Expected = append(l.Expected, line)
		case errorLogLine.MatchString(line):
			l.Errors = append(l.Errors, line)
		case klogErrorLine.MatchString(line):
			l.KlogErrors = append(l.KlogErrors, line)
		}
	}
	return l
}

// Tail returns the last n lines of s, after a line counting those left out.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
