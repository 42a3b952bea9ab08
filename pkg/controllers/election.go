package controllers

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// elect is one election round of c (with Elect): it campaigns for c's
// Lease until it holds it or round ends, runs c while it holds it, and
// returns once c has returned and the Lease is given up. The order at the
// end of a round is: c's ctx ends, c's Run returns (at most StopTimeout
// when stop has ended), then the Lease is released (ReleaseOnCancel):
// another replica never starts c while this one's still runs. A lost
// Lease (not renewed within RenewDeadline) stops c too; the round returns
// once c has returned. c ending on its own (its outcome) ends the round
// and gives up the Lease.
func (r *Runner) elect(stop, round context.Context, c Controller) outcome {
	logger := klog.FromContext(round)
	name := LeaseName(c.Name)
	lease := r.cfg.LeaseNamespace + "/" + name
	// The election's context is not round's: it ends once c has stopped,
	// so that the Lease is released only then.
	electCtx, endElection := context.WithCancel(klog.NewContext(context.WithoutCancel(round), electionLogger(logger)))
	defer endElection()
	var (
		mu    sync.Mutex
		ended bool          // no more starts of c in this round
		done  chan struct{} // closed once c's Run has returned; nil before it started
		o     outcome
	)
	stopAfterRound := context.AfterFunc(round, func() {
		mu.Lock()
		ended = true
		d := done
		mu.Unlock()
		if d != nil {
			r.await(stop, round, d)
		}
		endElection()
	})
	defer stopAfterRound()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: uncancelledLock{&resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: r.cfg.LeaseNamespace, Name: name},
			Client:     r.leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: r.cfg.Identity},
		}},
		LeaseDuration:   r.cfg.LeaseDuration,
		RenewDeadline:   r.cfg.RenewDeadline,
		RetryPeriod:     r.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				mu.Lock()
				if ended {
					mu.Unlock()
					return
				}
				d := make(chan struct{})
				done = d
				mu.Unlock()
				ctx, cancel := context.WithCancel(klog.NewContext(leading, logger))
				stopCancel := context.AfterFunc(round, cancel)
				res := r.call(ctx, c)
				stopCancel()
				cancel()
				mu.Lock()
				o = res
				mu.Unlock()
				close(d)
				if res.err != nil || res.done {
					endElection() // c ended on its own: give up the Lease
				}
			},
			OnStoppedLeading: func() {
				if electCtx.Err() == nil { // neither a stop nor c's own end
					logger.Info("The controller lost its Lease: it stops, and starts again from scratch once it holds the Lease again", "lease", lease)
				}
			},
		},
	})
	if err != nil {
		return outcome{err: err}
	}
	le.Run(electCtx) // returns when the Lease is lost or released, or the election ends before it is held
	mu.Lock()
	ended = true
	d := done
	mu.Unlock()
	if d != nil {
		r.await(stop, round, d)
	}
	mu.Lock()
	defer mu.Unlock()
	return o
}

// uncancelledLock is a resource lock whose reads and writes are not
// cancelled with the elector's context (their client's timeout bounds
// them instead).
type uncancelledLock struct{ resourcelock.Interface }

// Get implements resourcelock.Interface.
func (l uncancelledLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return l.Interface.Get(context.WithoutCancel(ctx))
}

// Create implements resourcelock.Interface.
func (l uncancelledLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Interface.Create(context.WithoutCancel(ctx), ler)
}

// Update implements resourcelock.Interface.
func (l uncancelledLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Interface.Update(context.WithoutCancel(ctx), ler)
}

// electionLogger returns logger for client-go's leader elector, which
// logs through its context's logger, with the lines an election between
// replicas produces as a matter of course demoted to V(2) info: a create
// of the Lease that another replica created first (AlreadyExists: "Error
// initially creating lease lock") and an update of a Lease that another
// replica updated first (Conflict: "Failed to update lease"), which
// client-go logs as errors although the loser simply tries again at its
// next RetryPeriod; and "Attempting to acquire leader lease...", logged at
// every round. Every other error stays an error.
func electionLogger(logger logr.Logger) logr.Logger {
	sink := logger.GetSink()
	if sink == nil {
		return logger
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // electionSink's own frame
	}
	return logr.New(electionSink{sink})
}

// electionSink is the LogSink of electionLogger.
type electionSink struct{ next logr.LogSink }

// demotedLevel is the verbosity of the lines electionSink demotes.
const demotedLevel = 2

// acquiringMessage is client-go's line at the start of each campaign.
const acquiringMessage = "Attempting to acquire leader lease..."

// Init implements logr.LogSink; the wrapped sink was initialised by its
// own logger.
func (electionSink) Init(logr.RuntimeInfo) {}

// Enabled implements logr.LogSink.
func (s electionSink) Enabled(level int) bool { return s.next.Enabled(level) }

// Info implements logr.LogSink.
func (s electionSink) Info(level int, msg string, kv ...any) {
	if level < demotedLevel && msg == acquiringMessage {
		if !s.next.Enabled(demotedLevel) {
			return
		}
		level = demotedLevel
	}
	s.next.Info(level, msg, kv...)
}

// Error implements logr.LogSink.
func (s electionSink) Error(err error, msg string, kv ...any) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		if s.next.Enabled(demotedLevel) {
			s.next.Info(demotedLevel, msg, append(kv, "err", err)...)
		}
		return
	}
	s.next.Error(err, msg, kv...)
}

// WithValues implements logr.LogSink.
func (s electionSink) WithValues(kv ...any) logr.LogSink {
	return electionSink{s.next.WithValues(kv...)}
}

// WithName implements logr.LogSink.
func (s electionSink) WithName(name string) logr.LogSink {
	return electionSink{s.next.WithName(name)}
}
