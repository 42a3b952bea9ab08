package ecosystem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// tmuxPane is a program running in the only pane of a tmux server of the
// test's own (a socket in a temporary directory, no configuration file),
// which the test reads as a user sees it (capture-pane) and types into
// (send-keys).
type tmuxPane struct {
	tmux, socket string
	// statusFile receives the program's exit status: a shell in the pane
	// runs the program and writes it. tmux 3.3a's own #{pane_dead_status}
	// is not reliable: now and then it leaves the pane's exited process
	// unreaped, its status unknown.
	statusFile string
}

// paneTarget names the pane: the first window of the session "main".
const paneTarget = "main:0.0"

// startInTmux starts argv in a new tmux server, in a pane of width x
// height characters, with env added to the test's environment. The tmux
// server is killed when the test ends.
func startInTmux(t *testing.T, tmux string, env []string, width, height int, argv ...string) *tmuxPane {
	t.Helper()
	dir := t.TempDir()
	p := &tmuxPane{tmux: tmux, socket: filepath.Join(dir, "tmux.sock"), statusFile: filepath.Join(dir, "exit-status")}
	args := []string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", "main", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height)}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	args = append(args, "sh", "-c", `status=$1; shift; "$@"; echo $? >"$status"`, "sh", p.statusFile)
	p.run(t, append(args, argv...)...)
	t.Cleanup(func() {
		binarytest.Run(t, binarytest.RunOptions{}, p.tmux, "-S", p.socket, "kill-server")
	})
	return p
}

// run runs a tmux command against the pane's server and fails the test
// unless it succeeds; it returns tmux's output.
func (p *tmuxPane) run(t *testing.T, args ...string) string {
	t.Helper()
	res := binarytest.Run(t, binarytest.RunOptions{}, p.tmux, append([]string{"-S", p.socket, "-f", "/dev/null"}, args...)...)
	if res.ExitCode != 0 {
		t.Fatalf("tmux %s: %s", strings.Join(args, " "), res)
	}
	return res.Stdout
}

// screen returns what the pane shows, one line a row.
func (p *tmuxPane) screen(t *testing.T) string {
	t.Helper()
	return p.run(t, "capture-pane", "-p", "-t", paneTarget)
}

// sendKeys types keys as send-keys takes them: "Enter", "Escape" and
// "C-c" name keys, anything else is typed as is.
func (p *tmuxPane) sendKeys(t *testing.T, keys ...string) {
	t.Helper()
	p.run(t, append([]string{"send-keys", "-t", paneTarget}, keys...)...)
}

// waitScreen polls the pane until its screen matches every one of want
// and none of absent (regular expressions), and returns that screen; it
// fails the test with the last screen if that does not happen within
// timeout.
func (p *tmuxPane) waitScreen(t *testing.T, timeout time.Duration, what string, want, absent []*regexp.Regexp) string {
	t.Helper()
	var last string
	customapitest.Eventually(t, timeout, what, func(context.Context) (bool, error) {
		last = p.screen(t)
		for _, re := range want {
			if !re.MatchString(last) {
				return false, fmt.Errorf("no match for %q on the screen:\n%s", re, compactScreen(last))
			}
		}
		for _, re := range absent {
			if re.MatchString(last) {
				return false, fmt.Errorf("%q still on the screen:\n%s", re, compactScreen(last))
			}
		}
		return true, nil
	})
	return last
}

// exitStatus waits up to timeout for the program to exit and returns its
// exit status.
func (p *tmuxPane) exitStatus(t *testing.T, timeout time.Duration) int {
	t.Helper()
	status := -1
	customapitest.Eventually(t, timeout, "the program in tmux exits", func(context.Context) (bool, error) {
		data, err := os.ReadFile(p.statusFile)
		if err != nil {
			return false, err
		}
		status, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil, err
	})
	return status
}

// blankRow is a row of a screen that shows only a frame's sides.
var blankRow = regexp.MustCompile(`^\s*│?\s*│?\s*$`)

// compactScreen is screen without its trailing spaces and its empty rows
// (blank or frame sides only), for a log.
func compactScreen(screen string) string {
	var rows []string
	for _, row := range strings.Split(screen, "\n") {
		if !blankRow.MatchString(row) {
			rows = append(rows, strings.TrimRight(row, " "))
		}
	}
	return strings.Join(rows, "\n")
}
