package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// batchFunc runs items [from, to) of a throughput workload on one target
// and returns their latencies and wall time.
type batchFunc func(ctx context.Context, r *runner, label string, from, to int) (latencies, time.Duration, error)

// roundTally is what the rounds of one workload on one target add up to.
type roundTally struct {
	lat     latencies
	elapsed time.Duration
	perSec  []float64 // throughput of each round, in round order
}

// inRounds runs a throughput workload of n items on every runner in
// rounds: round k runs items [k*n/rounds, (k+1)*n/rounds) on each runner
// in turn, the order rotated by one each round (so that no target always
// follows the same one), and every runner finishes round k before any
// starts round k+1. Each batch starts after a garbage collection of this
// process. Item numbers, and so object names, are unique across
// rounds. It returns one row per runner, res[i] for runners[i]: throughput
// and latencies over all rounds, and the throughput of each round in
// RoundOpsPerSec (addRatios turns those into per-round ratios). rounds is
// clamped to [1, n]. On an error the rows of what was measured are still
// returned, without RoundOpsPerSec; a runner with no finished batch has a
// zero row (no Target).
func inRounds(ctx context.Context, runners []*runner, workload string, workers, n, rounds int, batch batchFunc) ([]Result, error) {
	rounds = max(1, min(rounds, n))
	tallies := make([]roundTally, len(runners))
	var err error
rounds:
	for k := range rounds {
		from, to := k*n/rounds, (k+1)*n/rounds
		label := fmt.Sprintf("%s c=%d round %d/%d", workload, workers, k+1, rounds)
		for j := range runners {
			i := (j + k) % len(runners)
			// Collect this process's garbage (it also holds the embedded
			// etcd and the in-process target) untimed, so that the
			// previous batch's is not collected on this one's time.
			runtime.GC()
			lat, elapsed, berr := batch(ctx, runners[i], label, from, to)
			if berr != nil {
				err = fmt.Errorf("%s: %w", runners[i].target.Name(), berr)
				break rounds
			}
			t := &tallies[i]
			t.lat = append(t.lat, lat...)
			t.elapsed += elapsed
			t.perSec = append(t.perSec, float64(len(lat))/elapsed.Seconds())
		}
	}
	out := make([]Result, len(runners))
	for i, r := range runners {
		t := tallies[i]
		if t.elapsed == 0 {
			continue
		}
		out[i] = r.row(workload, workers, t.lat, t.elapsed)
		out[i].Rounds = len(t.perSec)
		out[i].Notes = fmt.Sprintf("%d rounds", out[i].Rounds)
		if err == nil {
			out[i].RoundOpsPerSec = t.perSec
		}
	}
	return out, err
}

// createBatch creates samples s-from .. s-(to-1) in the create namespace
// of the given worker count.
func createBatch(workers int) batchFunc {
	ns := fmt.Sprintf("%s-%d", nsCreate, workers)
	return func(ctx context.Context, r *runner, label string, from, to int) (latencies, time.Duration, error) {
		return r.parallel(ctx, label, to-from, workers, func(ctx context.Context, i int) error {
			name := fmt.Sprintf("s-%d", from+i)
			_, err := r.target.Create(ctx, ns, name, r.sample(ns, name))
			return err
		})
	}
}

// getBatch reads to-from random samples written by the last create
// workload (with CreateWorkers' last count of workers).
func getBatch(cfg Config) batchFunc {
	ns := fmt.Sprintf("%s-%d", nsCreate, cfg.CreateWorkers[len(cfg.CreateWorkers)-1])
	return func(ctx context.Context, r *runner, label string, from, to int) (latencies, time.Duration, error) {
		return r.parallel(ctx, label, to-from, cfg.Concurrency, func(ctx context.Context, _ int) error {
			return r.target.Get(ctx, ns, fmt.Sprintf("s-%d", rand.IntN(cfg.Creates)))
		})
	}
}

// updateBatch runs read-modify-write cycles from .. to-1 on the
// UpdateObjects samples that updateSetup created, retrying conflicts and
// counting them in conflicts[r].
func updateBatch(cfg Config, conflicts map[*runner]*atomic.Int64) batchFunc {
	return func(ctx context.Context, r *runner, label string, from, to int) (latencies, time.Duration, error) {
		c := conflicts[r]
		return r.parallel(ctx, label, to-from, cfg.Concurrency, func(ctx context.Context, i int) error {
			name := fmt.Sprintf("u-%d", rand.IntN(cfg.UpdateObjects))
			for {
				_, err := r.target.Update(ctx, nsUpdate, name, int64(from+i))
				if !errors.Is(err, errConflict) {
					return err
				}
				c.Add(1)
			}
		})
	}
}

// updateSetup creates the UpdateObjects samples the update workload
// writes to.
func (r *runner) updateSetup(ctx context.Context) error {
	_, _, err := r.parallel(ctx, "update: setup", r.cfg.UpdateObjects, r.cfg.Concurrency, func(ctx context.Context, i int) error {
		_, err := r.target.Create(ctx, nsUpdate, fmt.Sprintf("u-%d", i), r.sample(nsUpdate, fmt.Sprintf("u-%d", i)))
		return err
	})
	return err
}

// medianSpread returns the median of v (the mean of the middle two for an
// even count) and its smallest and largest values; zeros for an empty v.
func medianSpread(v []float64) (median, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	median = s[m]
	if len(s)%2 == 0 {
		median = (s[m-1] + s[m]) / 2
	}
	return median, s[0], s[len(s)-1]
}
