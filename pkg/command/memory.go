package command

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// cgroupMemoryMax is where cgroup v2 puts the memory limit of the
// process's own cgroup (a container's limit), as seen from inside it.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// heapShareOfLimit is the share of --memory-limit given to the Go heap
// (the runtime's soft memory limit, GOMEMLIMIT): the rest is for what the
// limit counts that the heap is not (goroutine stacks, the binary, and
// with the embedded etcd its mmap'd database pages).
const heapShareOfLimit = 0.9

// memoryLimitOptions is serve's --memory-limit.
type memoryLimitOptions struct {
	limit string // --memory-limit; "" derives it from the cgroup
}

// applyMemoryLimit sets the Go runtime's soft memory limit from
// --memory-limit (90% of it), or from the cgroup's memory limit when the
// flag is empty and there is one, unless GOMEMLIMIT is set in the
// environment, which always wins (the runtime has already applied it). It
// returns a description for the log, "" when no limit applies.
func (o memoryLimitOptions) applyMemoryLimit() (string, error) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return "GOMEMLIMIT=" + v + " (environment)", nil
	}
	limit, from := int64(0), "--memory-limit"
	if o.limit != "" {
		q, err := resource.ParseQuantity(o.limit)
		if err != nil || q.Sign() <= 0 {
			return "", fmt.Errorf("--memory-limit %q is not a positive quantity (for example 8Gi)", o.limit)
		}
		limit = q.Value()
	} else {
		var err error
		if limit, err = cgroupLimit(); err != nil || limit == 0 {
			return "", err
		}
		from = cgroupMemoryMax
	}
	heap := int64(float64(limit) * heapShareOfLimit)
	debug.SetMemoryLimit(heap)
	return fmt.Sprintf("Go heap soft limit %d MiB (90%% of %d MiB from %s)", heap>>20, limit>>20, from), nil
}

// cgroupLimit reads the cgroup v2 memory limit; 0 when there is none
// (no cgroup v2, or "max").
func cgroupLimit() (int64, error) {
	b, err := os.ReadFile(cgroupMemoryMax)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", cgroupMemoryMax, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n == math.MaxInt64 {
		return 0, nil
	}
	return n, nil
}
