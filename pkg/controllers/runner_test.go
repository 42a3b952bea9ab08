package controllers_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/controllers"
	"github.com/customapi/customapi/pkg/customapitest"
)

// srv is the server of every test (the batteries: leases and namespaces);
// each test names its controllers after itself, so their Leases are its
// own.
var (
	srv  *customapitest.Server
	kube kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(customapitest.Main(m, customapitest.Options{}, func(s *customapitest.Server) (err error) {
		srv = s
		kube, err = kubernetes.NewForConfig(s.Config)
		return err
	}, batteries.Resources(batteries.Options{})...))
}

// fast are election durations short enough for a test: a Lease that
// holds 4 s, renewed every 500 ms.
func fast(id string) controllers.Config {
	return controllers.Config{
		Config: srv.PipeConfig(), Elect: true, Identity: id,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
	}
}

// probe is a controller that records its runs: who runs it, how many run
// it at once, and a channel that receives the identity at each start.
type probe struct {
	name    string
	started chan string

	mu      sync.Mutex
	running int
	most    int      // the most runs at once
	starts  []string // identities, in start order
}

func newProbe(t *testing.T) *probe {
	return &probe{name: customapitest.Namespace(t), started: make(chan string, 16)}
}

// controller runs until its ctx ends.
func (p *probe) controller() controllers.Controller {
	return controllers.Controller{Name: p.name, Run: func(ctx context.Context, cfg *rest.Config) error {
		if cfg == nil || cfg.Host == "" {
			return errors.New("no rest.Config")
		}
		id := controllers.Identity(ctx)
		p.mu.Lock()
		p.running++
		p.most = max(p.most, p.running)
		p.starts = append(p.starts, id)
		p.mu.Unlock()
		p.started <- id
		<-ctx.Done()
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
		return nil
	}}
}

// stats returns the most runs at once and the starts so far.
func (p *probe) stats() (int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.most, append([]string(nil), p.starts...)
}

// start runs a Runner of cs with cfg until the test ends or stop is
// called; stop returns once Run has.
func start(t *testing.T, cfg controllers.Config, cs ...controllers.Controller) (stop func()) {
	t.Helper()
	r, err := controllers.NewRunner(cfg, cs...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("the Runner of %s did not return within 30 s of its stop", cfg.Identity)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitStart returns the identity of the next start of p, failing the test
// after timeout.
func waitStart(t *testing.T, p *probe, timeout time.Duration) string {
	t.Helper()
	select {
	case id := <-p.started:
		return id
	case <-time.After(timeout):
		t.Fatalf("%s: no start within %s", p.name, timeout)
		return ""
	}
}

// lease reads the Lease of the controller name; nil when there is none.
func lease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(t.Context(), controllers.LeaseName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// poll calls cond every 20 ms until it is true, failing the test with
// what after timeout.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

// TestOneHolderAtATime: two Runners of one controller on one server run
// it one at a time: the first to take the Lease runs it while the Lease is
// renewed, the other waits; when the holder stops, its controller returns
// before its Lease is released, and the other runs it within about its
// retry period (not after the Lease's duration).
func TestOneHolderAtATime(t *testing.T) {
	p := newProbe(t)
	stopA := start(t, fast("a"), p.controller())
	stopB := start(t, fast("b"), p.controller())
	first := waitStart(t, p, 10*time.Second)
	l := lease(t, p.name)
	if got := ptr.Deref(l.Spec.HolderIdentity, ""); got != first {
		t.Fatalf("the Lease is held by %q, the controller runs in %q", got, first)
	}
	// Two renewals later the other still waits.
	renewed := l.Spec.RenewTime.Time
	for range 2 {
		poll(t, 5*time.Second, "a renewal of the Lease", func() bool {
			l := lease(t, p.name)
			if l.Spec.RenewTime.Time.After(renewed) {
				renewed = l.Spec.RenewTime.Time
				return true
			}
			return false
		})
	}
	if most, starts := p.stats(); most != 1 || len(starts) != 1 {
		t.Fatalf("%d runs at once, starts %v: want 1 and one start", most, starts)
	}
	stopFirst, other := stopA, "b"
	if first == "b" {
		stopFirst, other = stopB, "a"
	}
	stopped := time.Now()
	stopFirst()
	if got := waitStart(t, p, 5*time.Second); got != other {
		t.Fatalf("after %s stopped, %q started; want %q", first, got, other)
	}
	took := time.Since(stopped)
	t.Logf("%s took over %s after %s stopped", other, took.Round(time.Millisecond), first)
	if most, starts := p.stats(); most != 1 || len(starts) != 2 {
		t.Errorf("%d runs at once, starts %v: want 1 and two starts", most, starts)
	}
	if got := ptr.Deref(lease(t, p.name).Spec.HolderIdentity, ""); got != other {
		t.Errorf("the Lease is held by %q, want %q", got, other)
	}
}

// TestOwnLeaseTakenAtOnce: a Lease held and valid for 15 s by an identity
// (as a server killed a moment ago leaves it) is taken at once by a Runner
// of that identity (a restart on the same data dir), as its own: its
// acquireTime and leaseTransitions are kept; a Runner of another identity
// waits, and takes it as soon as the holder stops.
func TestOwnLeaseTakenAtOnce(t *testing.T) {
	p := newProbe(t)
	acquired := metav1.NewMicroTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	_, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: controllers.LeaseName(p.name)},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("x"),
			LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime:          &acquired,
			RenewTime:            ptr.To(metav1.NowMicro()),
			LeaseTransitions:     ptr.To[int32](3),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := controllers.Config{Config: srv.PipeConfig(), Elect: true, Identity: "y"}
	start(t, other, p.controller())
	began := time.Now()
	stopX := start(t, controllers.Config{Config: srv.PipeConfig(), Elect: true, Identity: "x"}, p.controller())
	if got := waitStart(t, p, 5*time.Second); got != "x" {
		t.Fatalf("%q started, want x", got)
	}
	took := time.Since(began)
	t.Logf("x took its own Lease %s after it started", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("x took its own Lease after %s, want at once", took)
	}
	l := lease(t, p.name)
	if !l.Spec.AcquireTime.Equal(&acquired) || ptr.Deref(l.Spec.LeaseTransitions, 0) != 3 || ptr.Deref(l.Spec.HolderIdentity, "") != "x" {
		t.Errorf("Lease spec %+v: want holder x, acquireTime %v and 3 transitions kept", l.Spec, acquired)
	}
	stopX()
	if got := waitStart(t, p, 10*time.Second); got != "y" {
		t.Fatalf("%q started, want y", got)
	}
	if most, _ := p.stats(); most != 1 {
		t.Errorf("%d runs at once, want 1", most)
	}
}

// TestWithoutElection: without Elect a controller runs at once, with the
// Runner's identity, and no Lease is written; it stops with the Runner.
func TestWithoutElection(t *testing.T) {
	p := newProbe(t)
	stop := start(t, controllers.Config{Config: srv.PipeConfig(), Identity: "alone"}, p.controller())
	if got := waitStart(t, p, 5*time.Second); got != "alone" {
		t.Fatalf("identity %q, want alone", got)
	}
	stop()
	if most, starts := p.stats(); most != 1 || len(starts) != 1 {
		t.Errorf("%d runs at once, starts %v", most, starts)
	}
	p.mu.Lock()
	running := p.running
	p.mu.Unlock()
	if running != 0 {
		t.Errorf("the controller still runs after the Runner returned")
	}
	if l := lease(t, p.name); l != nil {
		t.Errorf("a Lease was written: %+v", l.Spec)
	}
}

// TestFailedAndFinishedControllers: a controller whose Run fails runs again
// after a backoff of a second; one whose Run returns nil is not run again.
func TestFailedAndFinishedControllers(t *testing.T) {
	name := customapitest.Namespace(t)
	var mu sync.Mutex
	var calls []time.Time
	runs := make(chan int, 8)
	failing := controllers.Controller{Name: name + "-failing", Run: func(ctx context.Context, _ *rest.Config) error {
		mu.Lock()
		calls = append(calls, time.Now())
		n := len(calls)
		mu.Unlock()
		runs <- n
		if n == 1 {
			return errors.New("first run fails")
		}
		<-ctx.Done()
		return nil
	}}
	var once int
	finishing := controllers.Controller{Name: name + "-finishing", Run: func(context.Context, *rest.Config) error {
		mu.Lock()
		once++
		mu.Unlock()
		return nil
	}}
	stop := start(t, fast("f"), failing, finishing)
	for want := 1; want <= 2; want++ {
		select {
		case n := <-runs:
			if n != want {
				t.Fatalf("run %d, want %d", n, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no run %d within 10 s", want)
		}
	}
	mu.Lock()
	gap := calls[1].Sub(calls[0])
	mu.Unlock()
	if gap < time.Second {
		t.Errorf("the failed controller ran again after %s, want a backoff of 1 s", gap)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if once != 1 {
		t.Errorf("the finished controller ran %d times, want once", once)
	}
}

// hold is a controllers.Hold switched by the test.
type hold struct {
	mu      sync.Mutex
	reason  string
	changed chan struct{}
}

func (h *hold) Reason() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

func (h *hold) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

func (h *hold) set(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reason = reason
	close(h.changed)
	h.changed = make(chan struct{})
}

// TestHold: a Hold that gives a reason stops the running controller (and
// gives up its Lease); once released the controller runs again.
func TestHold(t *testing.T) {
	p := newProbe(t)
	h := &hold{changed: make(chan struct{})}
	cfg := fast("h")
	cfg.Hold = h
	start(t, cfg, p.controller())
	waitStart(t, p, 10*time.Second)
	h.set("the test says so")
	poll(t, 10*time.Second, "the held controller stopped and its Lease given up", func() bool {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		return running == 0 && ptr.Deref(lease(t, p.name).Spec.HolderIdentity, "") == ""
	})
	h.set("")
	if got := waitStart(t, p, 10*time.Second); got != "h" {
		t.Fatalf("%q started, want h", got)
	}
}

// TestNewRunnerRefuses: NewRunner refuses an invalid Config or set of
// controllers.
func TestNewRunnerRefuses(t *testing.T) {
	run := func(context.Context, *rest.Config) error { return nil }
	good := controllers.Config{Config: srv.PipeConfig(), Elect: true, Identity: "i"}
	for _, tc := range []struct {
		name string
		cfg  controllers.Config
		cs   []controllers.Controller
	}{
		{"no rest.Config", controllers.Config{Identity: "i"}, nil},
		{"Elect without identity", controllers.Config{Config: srv.PipeConfig(), Elect: true}, nil},
		{"name not a DNS label", good, []controllers.Controller{{Name: "Not_A_Label", Run: run}}},
		{"empty name", good, []controllers.Controller{{Run: run}}},
		{"no Run", good, []controllers.Controller{{Name: "x"}}},
		{"two of one name", good, []controllers.Controller{{Name: "x", Run: run}, {Name: "x", Run: run}}},
		{"renew deadline not below the lease duration", controllers.Config{Config: srv.PipeConfig(), Elect: true, Identity: "i", LeaseDuration: 5 * time.Second, RenewDeadline: 5 * time.Second}, nil},
	} {
		if _, err := controllers.NewRunner(tc.cfg, tc.cs...); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
