package bench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestMedianSpread(t *testing.T) {
	for _, c := range []struct {
		in             []float64
		median, lo, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{0.5}, 0.5, 0.5, 0.5},
		{[]float64{0.9, 0.3}, 0.6, 0.3, 0.9},
		{[]float64{0.72, 0.42, 0.55}, 0.55, 0.42, 0.72},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{0.5, 0.5, 9, 0.5, 0.1}, 0.5, 0.1, 9},
	} {
		in := fmt.Sprint(c.in)
		m, lo, hi := medianSpread(c.in)
		if m != c.median || lo != c.lo || hi != c.hi {
			t.Errorf("medianSpread(%s) = %v, %v, %v; want %v, %v, %v", in, m, lo, hi, c.median, c.lo, c.hi)
		}
		if fmt.Sprint(c.in) != in {
			t.Errorf("medianSpread(%s) reordered its argument to %v", in, c.in)
		}
	}
}

// addRatios pairs the rounds of a target with etcd's rounds of the same
// index; rows without rounds keep the ratio of their throughputs.
func TestAddRatiosRounds(t *testing.T) {
	for _, c := range []struct {
		name         string
		etcd, target Result
		vs, lo, hi   float64
		rounds       []float64
	}{
		{"rounds", Result{OpsPerSec: 1000, RoundOpsPerSec: []float64{1000, 500, 1000}},
			Result{OpsPerSec: 400, RoundOpsPerSec: []float64{500, 400, 300}}, 0.5, 0.3, 0.8, []float64{0.5, 0.8, 0.3}},
		{"one round", Result{OpsPerSec: 1000, RoundOpsPerSec: []float64{1000}},
			Result{OpsPerSec: 250, RoundOpsPerSec: []float64{250}}, 0.25, 0.25, 0.25, []float64{0.25}},
		{"no rounds", Result{OpsPerSec: 1000}, Result{OpsPerSec: 600}, 0.6, 0, 0, nil},
		{"rounds of another count", Result{OpsPerSec: 1000, RoundOpsPerSec: []float64{1000, 1000}},
			Result{OpsPerSec: 300, RoundOpsPerSec: []float64{300}}, 0.3, 0, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.etcd.Target, c.etcd.Workload, c.etcd.Workers = "etcd", "create", 16
			c.target.Target, c.target.Workload, c.target.Workers = "inprocess", "create", 16
			rows := []Result{c.etcd, c.target}
			addRatios(rows)
			got := rows[1]
			if !ratioNear(got.VsEtcd, c.vs) || !ratioNear(got.VsEtcdMin, c.lo) || !ratioNear(got.VsEtcdMax, c.hi) || len(got.VsEtcdRounds) != len(c.rounds) {
				t.Fatalf("vsEtcd %v (%v-%v) rounds %v; want %v (%v-%v) rounds %v", got.VsEtcd, got.VsEtcdMin, got.VsEtcdMax, got.VsEtcdRounds, c.vs, c.lo, c.hi, c.rounds)
			}
			for k := range c.rounds {
				if !ratioNear(got.VsEtcdRounds[k], c.rounds[k]) {
					t.Errorf("round %d: %v, want %v", k, got.VsEtcdRounds[k], c.rounds[k])
				}
			}
			if rows[0].VsEtcd != 0 {
				t.Errorf("etcd's own row has a ratio: %v", rows[0].VsEtcd)
			}
		})
	}
}

func ratioNear(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// recordingTarget records the order of the creates it is asked for.
type recordingTarget struct {
	Target
	name string
	log  *[]string
}

func (t recordingTarget) Name() string { return t.name }

func (t recordingTarget) Create(_ context.Context, _, name string, _ *sample) (string, error) {
	*t.log = append(*t.log, t.name+" "+name)
	return "1", nil
}

// inRounds gives every runner each round's batch before the next round,
// rotates the order by one each round, hands out every item number once per
// runner, and clamps the rounds to the number of items.
func TestInRounds(t *testing.T) {
	for _, c := range []struct {
		n, rounds, wantRounds int
		want                  string
	}{
		{6, 3, 3, "[a s-0 a s-1 b s-0 b s-1 b s-2 b s-3 a s-2 a s-3 a s-4 a s-5 b s-4 b s-5]"},
		{2, 5, 2, "[a s-0 b s-0 b s-1 a s-1]"},
		{3, 0, 1, "[a s-0 a s-1 a s-2 b s-0 b s-1 b s-2]"},
	} {
		t.Run(fmt.Sprintf("n=%d,rounds=%d", c.n, c.rounds), func(t *testing.T) {
			var log []string
			cfg := DefaultConfig()
			runners := []*runner{
				{cfg: cfg, target: recordingTarget{name: "a", log: &log}},
				{cfg: cfg, target: recordingTarget{name: "b", log: &log}},
			}
			res, err := inRounds(t.Context(), runners, "create", 1, c.n, c.rounds, createBatch(1))
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(log); got != c.want {
				t.Errorf("calls %s\nwant  %s", got, c.want)
			}
			for i, r := range res {
				if r.Target != runners[i].target.Name() || r.Ops != c.n || r.Rounds != c.wantRounds || len(r.RoundOpsPerSec) != c.wantRounds || r.OpsPerSec <= 0 || r.P50 < 0 || r.P50 > time.Second {
					t.Errorf("row %d: %+v", i, r)
				}
			}
		})
	}
}
