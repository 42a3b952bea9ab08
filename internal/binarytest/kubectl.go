package binarytest

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// kubectlPath is where Kubectl finds kubectl, "" if nowhere.
var kubectlPath = sync.OnceValue(func() string {
	if st, err := os.Stat("/usr/bin/kubectl"); err == nil && !st.IsDir() {
		return "/usr/bin/kubectl"
	}
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	return ""
})

// Kubectl returns /usr/bin/kubectl, or the first kubectl on PATH. Without
// one it skips the test, or fails it when CI=true is in the environment:
// CI must not skip silently.
func Kubectl(tb testing.TB) string {
	tb.Helper()
	p := kubectlPath()
	if p == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("kubectl not found (not in /usr/bin, not on PATH); CI=true, so this is a failure, not a skip")
		}
		tb.Skip("kubectl not found (not in /usr/bin, not on PATH)")
	}
	return p
}
