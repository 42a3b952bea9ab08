package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one row of the report: one workload on one target.
type Result struct {
	// Target is etcd, etcd-put, inprocess, self, or a kubeconfig's current
	// context (its server URL when it has none).
	Target string `json:"target"`
	// Workload names what was measured, for example "create",
	// "list rv=\"\"", "watch".
	Workload string `json:"workload"`
	// Workers is the number of concurrent workers (watchers for watch).
	Workers int `json:"workers"`
	// Ops is the number of operations measured.
	Ops int `json:"ops"`
	// OpsPerSec is Ops divided by the wall time of the workload.
	OpsPerSec float64 `json:"opsPerSec,omitempty"`
	// P50 and P99 are latency percentiles (for watch: delivery latency from
	// write acknowledgement to event receipt).
	P50 time.Duration `json:"p50,omitempty"`
	P99 time.Duration `json:"p99,omitempty"`
	// Value is a single measured quantity where latency does not apply
	// (bytes for memory rows, seconds for startup).
	Value float64 `json:"value,omitempty"`
	// Notes says what else was observed: conflicts, lost or duplicated
	// events, what a memory figure covers.
	Notes string `json:"notes,omitempty"`
	// VsEtcd is the target's speed relative to raw etcd on the same workload
	// in the same run, 0 when there is no etcd row to compare with. For the
	// workloads run in rounds (Rounds > 0) it is the median of the
	// per-round throughput ratios (VsEtcdRounds); for lists and watches,
	// etcd's p50 over the target's.
	VsEtcd float64 `json:"vsEtcd,omitempty"`

	// Rounds is the number of alternating rounds the workload ran in
	// (create, get, update); 0 for workloads run once per target.
	Rounds int `json:"rounds,omitempty"`
	// RoundOpsPerSec is the throughput of each round, in round order.
	RoundOpsPerSec []float64 `json:"roundOpsPerSec,omitempty"`
	// VsEtcdRounds is the throughput ratio against raw etcd of each round
	// (this target's round k over etcd's round k), in round order.
	VsEtcdRounds []float64 `json:"vsEtcdRounds,omitempty"`
	// VsEtcdMin and VsEtcdMax are the smallest and largest of VsEtcdRounds:
	// the spread of the median VsEtcd.
	VsEtcdMin float64 `json:"vsEtcdMin,omitempty"`
	VsEtcdMax float64 `json:"vsEtcdMax,omitempty"`
}

// key identifies the comparable row of another target.
func (r Result) key() string { return fmt.Sprintf("%s/%d", r.Workload, r.Workers) }

// addRatios fills VsEtcd of every row that has an etcd counterpart. Creates
// are compared with etcd's create-if-absent transaction (target "etcd").
// Rows run in rounds with etcd get per-round ratios (VsEtcdRounds), their
// median as VsEtcd and their range.
func addRatios(results []Result) {
	base := map[string]Result{}
	for _, r := range results {
		if r.Target == "etcd" {
			base[r.key()] = r
		}
	}
	for i, r := range results {
		b, ok := base[r.key()]
		if !ok || r.Target == "etcd" {
			continue
		}
		switch {
		case len(r.RoundOpsPerSec) > 0 && len(r.RoundOpsPerSec) == len(b.RoundOpsPerSec):
			ratios := make([]float64, 0, len(r.RoundOpsPerSec))
			for k, v := range r.RoundOpsPerSec {
				if b.RoundOpsPerSec[k] > 0 {
					ratios = append(ratios, v/b.RoundOpsPerSec[k])
				}
			}
			if len(ratios) > 0 {
				results[i].VsEtcdRounds = ratios
				results[i].VsEtcd, results[i].VsEtcdMin, results[i].VsEtcdMax = medianSpread(ratios)
			}
		case strings.HasPrefix(r.Workload, "list"), r.Workload == "watch":
			if r.P50 > 0 {
				results[i].VsEtcd = float64(b.P50) / float64(r.P50)
			}
		case r.OpsPerSec > 0 && b.OpsPerSec > 0:
			results[i].VsEtcd = r.OpsPerSec / b.OpsPerSec
		}
	}
}

// WriteTable prints results as an aligned table.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tWORKLOAD\tWORKERS\tOPS\tOPS/S\tP50\tP99\tVALUE\tVS ETCD\tNOTES")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Target, r.Workload, r.Workers, r.Ops,
			blankIfZero(r.OpsPerSec, "%.0f"), dur(r.P50), dur(r.P99), value(r), vsEtcd(r), r.Notes)
	}
	return tw.Flush()
}

// WriteJSON prints results as a JSON array.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// vsEtcd formats the VS ETCD column: the ratio, and for rows run in
// rounds the range of the per-round ratios after it.
func vsEtcd(r Result) string {
	if len(r.VsEtcdRounds) > 1 {
		return fmt.Sprintf("%.2fx (%.2f-%.2f)", r.VsEtcd, r.VsEtcdMin, r.VsEtcdMax)
	}
	return blankIfZero(r.VsEtcd, "%.2fx")
}

func blankIfZero(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fus", float64(d)/float64(time.Microsecond))
	default:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
}

func value(r Result) string {
	switch {
	case r.Value == 0:
		return "-"
	case strings.HasPrefix(r.Workload, "memory"):
		return fmt.Sprintf("%.1fMB", r.Value/1e6)
	case r.Workload == "etcd value":
		return fmt.Sprintf("%.0fB", r.Value)
	case r.Workload == "startup", r.Workload == "server cpu":
		return fmt.Sprintf("%.2fs", r.Value)
	default:
		return fmt.Sprintf("%g", r.Value)
	}
}
