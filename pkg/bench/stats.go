package bench

import (
	"slices"
	"time"
)

// latencies collects durations and reports percentiles.
type latencies []time.Duration

// percentile returns the p-th percentile (0 < p <= 100), nearest rank.
func (l latencies) percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
