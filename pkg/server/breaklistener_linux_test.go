package server_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// shutdownListener finds this process's listening socket of endpoint (a
// tcp "http(s)://127.0.0.1:port" or a "unix(s)://path" URL) through /proc
// and shuts it down, so that the server accepting on it fails as on a
// fatal listener error.
func shutdownListener(t *testing.T, endpoint string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var inodes map[string]bool
	switch u.Scheme {
	case "unix", "unixs":
		path := u.Host + u.Path
		inodes = socketInodes(t, "/proc/net/unix", func(f []string) bool { return len(f) >= 8 && f[len(f)-1] == path }, 6)
	default:
		port, err := strconv.Atoi(u.Port())
		if err != nil {
			t.Fatalf("endpoint %q: %v", endpoint, err)
		}
		hexPort := strings.ToUpper(strconv.FormatInt(int64(port), 16))
		for len(hexPort) < 4 {
			hexPort = "0" + hexPort
		}
		match := func(f []string) bool { return len(f) >= 10 && f[3] == "0A" && strings.HasSuffix(f[1], ":"+hexPort) }
		inodes = socketInodes(t, "/proc/net/tcp", match, 9)
		for k := range socketInodes(t, "/proc/net/tcp6", match, 9) {
			inodes[k] = true
		}
	}
	if len(inodes) == 0 {
		t.Fatalf("no listening socket for %s", endpoint)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if !inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			continue
		}
		num, _ := strconv.Atoi(fd.Name())
		if err := syscall.Shutdown(num, syscall.SHUT_RDWR); err != nil {
			t.Fatalf("shutdown fd %d (%s): %v", num, endpoint, err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no descriptor of this process listens on %s", endpoint)
	}
}

// socketInodes returns the inodes (column inodeCol) of the lines of a
// /proc/net table that match.
func socketInodes(t *testing.T, table string, match func([]string) bool, inodeCol int) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if match(f) {
			out[f[inodeCol]] = true
		}
	}
	return out
}
