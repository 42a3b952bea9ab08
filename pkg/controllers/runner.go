package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Defaults of Config: kube-controller-manager's leader election
// (--leader-elect-lease-duration, --leader-elect-renew-deadline,
// --leader-elect-retry-period), and the time a stopping Runner gives each
// controller to return before it releases the controller's Lease anyway.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	DefaultStopTimeout   = 5 * time.Second
)

// Backoff of a controller whose Run failed: it runs again after
// failureBackoffMin, doubling up to failureBackoffMax; a Run that lasted
// longer than failureBackoffMax starts the backoff afresh.
const (
	failureBackoffMin = time.Second
	failureBackoffMax = time.Minute
)

// Hold keeps a Runner's controllers from running while it says so, for
// a condition under which none of them can work, such as an etcd whose
// quota is full (NOSPACE): no write, a Lease's renewal included, would
// succeed. While held, every controller is stopped (ctx ended) and its
// Lease given up; each starts again, from its election, once released.
type Hold interface {
	// Reason returns why the controllers may not run now, for the log,
	// or "" when they may.
	Reason() string
	// Changed returns a channel closed when Reason may have changed (a
	// new channel after each change).
	Changed() <-chan struct{}
}

// Config configures a Runner.
type Config struct {
	// Config reaches the server the controllers work on, with the rights
	// they need (a server's loopback configuration, for example
	// server.Server.PipeConfig: its whole handler chain in process
	// as the server itself). Each controller's Run gets a copy. The Leases
	// are read and written through it too. Required.
	Config *rest.Config
	// Elect runs each controller only while this Runner holds the
	// controller's Lease (coordination.k8s.io/v1, LeaseNamespace/
	// LeaseName(name)), so that of several Runners on one server's data
	// (replicas on one etcd) one runs each controller at a time, as
	// kube-controller-manager's leader election. false runs every
	// controller at once, without a Lease: for a server that serves no
	// Leases, which is then assumed alone on its etcd.
	Elect bool
	// Identity names this Runner: the holder identity of its Leases
	// (spec.holderIdentity) and what Identity returns in its controllers.
	// A Lease held by this identity is taken as this Runner's own (client-
	// go's leader election renews it at once instead of waiting for it to
	// expire), so an identity must be used by one process at a time: a
	// server takes it from its data dir, which one process owns
	// (datadir.EnsureIdentity). Required with Elect.
	Identity string
	// LeaseNamespace holds the Leases; "" means kube-system (which must
	// exist).
	LeaseNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election's (leaderelection.LeaderElectionConfig): how long a Lease
	// holds without renewal, how long its holder keeps trying to renew it
	// before it stops its controller, and how often a candidate tries to
	// take it and a holder renews it. 0 means DefaultLeaseDuration,
	// DefaultRenewDeadline and DefaultRetryPeriod. A request of the
	// election is bounded by RenewDeadline.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// StopTimeout is how long a stopping Runner waits for a controller's
	// Run to return before it releases the controller's Lease anyway (and
	// logs an error); 0 means DefaultStopTimeout.
	StopTimeout time.Duration
	// Hold, if set, stops the controllers while it says so (see Hold).
	Hold Hold
}

// Runner runs controllers the same way, each behind a Lease of its own
// (see the package documentation). Build it with NewRunner, then call Run
// once.
type Runner struct {
	cfg         Config
	controllers []Controller
	leases      coordinationv1client.CoordinationV1Interface // nil without Elect
}

// NewRunner returns a Runner of controllers with cfg, its defaults
// applied. Errors: no Config.Config, Elect without an Identity, a
// controller name that is not a DNS-1123 label or is repeated, a
// controller without Run, durations client-go's leader election refuses
// (LeaseDuration must exceed RenewDeadline, which must exceed 1.2
// RetryPeriod), or a Config client-go cannot use.
func NewRunner(cfg Config, controllers ...Controller) (*Runner, error) {
	if cfg.Config == nil {
		return nil, errors.New("controllers: Config.Config is required")
	}
	if cfg.Elect && cfg.Identity == "" {
		return nil, errors.New("controllers: Config.Identity is required with Elect")
	}
	if err := Validate(controllers); err != nil {
		return nil, err
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = metav1.NamespaceSystem
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.LeaseDuration <= cfg.RenewDeadline || cfg.RenewDeadline <= time.Duration(1.2*float64(cfg.RetryPeriod)) {
		return nil, fmt.Errorf("controllers: LeaseDuration %s must exceed RenewDeadline %s, which must exceed 1.2 RetryPeriod %s", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	}
	r := &Runner{cfg: cfg, controllers: append([]Controller(nil), controllers...)}
	if cfg.Elect {
		// Each Lease request gets RenewDeadline (the HTTP client's
		// timeout) and is not cancelled with the election's context
		// (uncancelledLock): at stop, a renewal already sent finishes,
		// then the elector releases the Lease, instead of aborting the
		// renewal half-way (an error logged by client-go and by the
		// server's handler).
		lc := rest.CopyConfig(cfg.Config)
		lc.Timeout = cfg.RenewDeadline
		leases, err := coordinationv1client.NewForConfig(lc)
		if err != nil {
			return nil, fmt.Errorf("controllers: %w", err)
		}
		r.leases = leases
	}
	return r, nil
}

// Validate checks controllers as NewRunner does: each has a name that is
// a DNS-1123 label, unique among them, and a Run.
func Validate(controllers []Controller) error {
	seen := map[string]bool{}
	for _, c := range controllers {
		if err := c.validate(); err != nil {
			return fmt.Errorf("controllers: %w", err)
		}
		if seen[c.Name] {
			return fmt.Errorf("controllers: two controllers are named %q", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// Run runs every controller until ctx ends, each in a goroutine of its
// own: with Elect, while the Runner holds its Lease (it waits for the
// Lease, runs the controller once it holds it, stops it when it loses
// it, and waits for it again); without, at once. When ctx ends, Run
// stops each controller (its ctx ends), waits for its Run to return (at
// most StopTimeout), then releases its Lease, so that another replica
// takes it over within its RetryPeriod instead of after LeaseDuration,
// never while this one's controller still runs; Run returns once that is
// done for every controller. Run may be called once.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range r.controllers {
		wg.Go(func() { r.runController(ctx, c) })
	}
	wg.Wait()
}

// outcome is how a controller's Run ended on its own (its ctx alive): err
// is its error, done that it returned nil. The zero outcome is a Run
// that ended because its ctx did (or one that did not run).
type outcome struct {
	err  error
	done bool
}

// runController runs c until ctx ends or c is done: one round at a time
// (an election, or a plain run without Elect), holding off while the
// Hold says so, and backing off after a failed Run.
func (r *Runner) runController(ctx context.Context, c Controller) {
	logger := klog.FromContext(ctx).WithValues("controller", c.Name)
	ctx = klog.NewContext(ctx, logger)
	backoff := wait.Backoff{Duration: failureBackoffMin, Factor: 2, Cap: failureBackoffMax, Steps: 1 << 30}
	for ctx.Err() == nil {
		if reason := r.holdReason(); reason != "" {
			logger.Info("The controller waits", "reason", reason)
			r.waitReleased(ctx)
			continue
		}
		round, endRound := r.untilHeld(ctx)
		started := time.Now()
		var o outcome
		if r.cfg.Elect {
			o = r.elect(ctx, round, c)
		} else {
			o = r.runUnelected(ctx, round, c)
		}
		endRound()
		switch {
		case o.done:
			logger.Info("The controller returned; it is not run again")
			return
		case o.err != nil:
			if time.Since(started) > failureBackoffMax {
				backoff.Duration = failureBackoffMin
			}
			d := backoff.Step()
			logger.Error(o.err, "The controller failed; it runs again after a backoff", "backoff", d)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
	}
}

// holdReason is the Hold's reason, "" without a Hold.
func (r *Runner) holdReason() string {
	if r.cfg.Hold == nil {
		return ""
	}
	return r.cfg.Hold.Reason()
}

// waitReleased returns once the Hold gives no reason or ctx ends.
func (r *Runner) waitReleased(ctx context.Context) {
	for {
		changed := r.cfg.Hold.Changed()
		if r.cfg.Hold.Reason() == "" {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// untilHeld returns a context that ends with ctx or when the Hold gives
// a reason.
func (r *Runner) untilHeld(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if r.cfg.Hold == nil {
		return ctx, cancel
	}
	go func() {
		for {
			changed := r.cfg.Hold.Changed()
			if r.cfg.Hold.Reason() != "" {
				cancel()
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, cancel
}

// call runs c.Run with ctx (plus the Runner's identity) and a copy of the
// Runner's Config, returning how it ended on its own.
func (r *Runner) call(ctx context.Context, c Controller) outcome {
	err := c.Run(withIdentity(ctx, r.cfg.Identity), rest.CopyConfig(r.cfg.Config))
	if ctx.Err() != nil {
		return outcome{}
	}
	return outcome{err: err, done: err == nil}
}

// runUnelected runs c once without a Lease, until it returns or round
// ends. When stop (the Runner's context) has ended, it waits for c to
// return at most StopTimeout.
func (r *Runner) runUnelected(stop, round context.Context, c Controller) outcome {
	var o outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		o = r.call(round, c)
	}()
	r.await(stop, round, done)
	select {
	case <-done:
		return o
	default:
		return outcome{}
	}
}

// await waits for done (closed when a controller's Run has returned)
// once round has ended: for as long as it takes, unless stop has ended
// too (the Runner stops), then at most StopTimeout, logging an error if
// the controller did not return by then.
func (r *Runner) await(stop, round context.Context, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-round.Done():
	}
	if stop.Err() == nil {
		<-done
		return
	}
	t := time.NewTimer(r.cfg.StopTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		klog.FromContext(round).Error(nil, "The controller did not stop in time; its Lease is released anyway", "timeout", r.cfg.StopTimeout)
	}
}
