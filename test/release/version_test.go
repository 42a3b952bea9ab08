package release

import (
	"strings"
	"testing"

	"github.com/customapi/customapi/internal/binarytest"
)

// TestStampedVersion: the link-time variables hack/release.sh sets (their
// -X names) reach `customapi version` and `customapi --version`, which
// print the same line.
func TestStampedVersion(t *testing.T) {
	want := "customapi " + testVersion + " "
	var lines []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, args...)
			if res.ExitCode != 0 {
				t.Fatal(res)
			}
			line := strings.TrimSpace(res.Stdout)
			if !strings.HasPrefix(line, want) || !strings.Contains(line, "date "+testDate) {
				t.Errorf("got %q, want %q... with date %s", line, want, testDate)
			}
			lines = append(lines, line)
		})
	}
	if len(lines) == 2 && lines[0] != lines[1] {
		t.Errorf("version printed %q, --version %q", lines[0], lines[1])
	}
}
