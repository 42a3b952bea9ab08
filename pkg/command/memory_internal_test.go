package command

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

// --memory-limit sets the Go heap's soft limit to 90% of it; GOMEMLIMIT in
// the environment wins; a value that is not a positive quantity is refused.
func TestApplyMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore the process's limit
	for _, tc := range []struct {
		name, flag, env string
		wantLimit       int64 // the runtime's limit after; -1: unchanged
		want, wantErr   string
	}{
		{name: "flag", flag: "1000Mi", wantLimit: 900 << 20, want: "Go heap soft limit 900 MiB (90% of 1000 MiB from --memory-limit)"},
		{name: "environment wins", flag: "1Gi", env: "3GiB", wantLimit: -1, want: "GOMEMLIMIT=3GiB (environment)"},
		{name: "not a quantity", flag: "lots", wantLimit: -1, wantErr: `--memory-limit "lots" is not a positive quantity`},
		{name: "zero", flag: "0", wantLimit: -1, wantErr: `--memory-limit "0" is not a positive quantity`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			if tc.env != "" {
				t.Setenv("GOMEMLIMIT", tc.env)
			}
			got, err := memoryLimitOptions{limit: tc.flag}.applyMemoryLimit()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			limit := debug.SetMemoryLimit(-1)
			if tc.wantLimit == -1 && limit != math.MaxInt64 || tc.wantLimit != -1 && limit != tc.wantLimit {
				t.Errorf("runtime limit %d, want %d", limit, tc.wantLimit)
			}
		})
	}
}
