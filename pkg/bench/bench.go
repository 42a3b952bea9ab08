package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/storage"
)

// Config says what to measure. DefaultConfig gives the sizes of
// docs/performance.md.
type Config struct {
	// Targets are "etcd", "inprocess", "self" and "kubeconfig=PATH", or
	// "all" (the first three).
	Targets []string
	// Resource is the resource used on kubeconfig targets; it must accept
	// the sample's shape (labels, spec.strings, spec.numbers).
	Resource schema.GroupVersionResource
	// Executable is the customapi binary started for the self target.
	Executable string
	// StorageMediaType is the encoding in etcd of the inprocess and self
	// targets; "" means JSON. The etcd target always writes JSON.
	StorageMediaType string
	// ContentType is the wire encoding of the HTTP targets (self and
	// kubeconfig): json (""), cbor or protobuf, used for request bodies
	// and as the only type accepted in answers, watches included. A
	// server that does not serve it (406/415, or an answer in another
	// type) fails the run with an error saying so.
	ContentType string

	Creates int // objects per create workload
	// Rounds is how many rounds the throughput workloads (create, get,
	// update) are split into: round k runs 1/Rounds of the workload on
	// every target in turn before round k+1 starts. Below 1 means 1.
	Rounds        int
	CreateWorkers []int // worker counts of the create workloads
	Concurrency   int   // workers of get, update and loading
	Gets          int   // reads
	Updates       int   // read-modify-write cycles
	UpdateObjects int   // objects the updates spread over
	ListObjects   int   // objects present for the list workloads
	ListRuns      int   // timed full lists per list workload
	PageSize      int64 // page size of the paged list
	Watchers      int   // concurrent watchers
	WatchUpdates  int   // updates the watchers receive
	WatchRate     int   // updates per second

	// Admission are the admission modes to measure (AdmissionNone,
	// AdmissionWebhook, AdmissionPolicy, AdmissionWebhookUnmatched): with
	// any mode but none, after the throughput workloads every target
	// that serves the admissionregistration.k8s.io kinds (self,
	// kubeconfig, and inprocess, which then runs with a server of its
	// own in this process, see newInprocessServed) gets one create
	// workload per mode, "create admission=MODE" with 16 workers and
	// Creates objects in Rounds rounds, next to raw etcd's creates (the
	// baseline of their ratio): what the mode installs is created, the
	// bench waits with probes until it takes effect, runs the workload,
	// removes it and waits until that took effect. Nil or only none: no
	// admission workload.
	Admission []string

	// CPUProfileDir, if set, receives CPU profiles of the server under the
	// create and list workloads (self and kubeconfig targets: from the
	// server's /debug/pprof, which kube-apiserver serves by default, as
	// --profiling; inprocess: of this process), ProfileSeconds long each.
	CPUProfileDir  string
	ProfileSeconds int

	// Progress receives progress lines; nil for none.
	Progress io.Writer
}

// DefaultConfig returns the sizes used for docs/performance.md.
func DefaultConfig() Config {
	return Config{
		Targets:        []string{"all"},
		Resource:       benchinstall.Samples.GroupVersionResource(),
		Creates:        2000,
		Rounds:         5,
		CreateWorkers:  []int{1, 16},
		Concurrency:    16,
		Gets:           5000,
		Updates:        2000,
		UpdateObjects:  100,
		ListObjects:    10000,
		ListRuns:       10,
		PageSize:       500,
		Watchers:       100,
		WatchUpdates:   500,
		WatchRate:      50,
		ProfileSeconds: 10,
	}
}

// Run measures every target and returns the rows with ratios against raw
// etcd. It starts an embedded etcd (fsync on) in a temporary directory for
// the etcd, inprocess and self targets, each under a key prefix of its own,
// and removes everything it created when it returns, also when ctx is
// cancelled.
//
// Every target is opened first (self: its server started). The throughput
// workloads (create with each of CreateWorkers, get, update) then run in
// cfg.Rounds alternating rounds over all targets (each round a short batch
// per target, see inRounds); the rest (memory, etcd value, lists, watch,
// profiles) runs on one target after the other, each closed when done. The
// rows come grouped by target in the order of cfg.Targets.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if len(cfg.CreateWorkers) == 0 || slices.ContainsFunc(cfg.CreateWorkers, func(w int) bool { return w < 1 }) {
		return nil, fmt.Errorf("bench: create workers %v: want at least one count, each 1 or more (the get workload reads what the last create workload wrote)", cfg.CreateWorkers)
	}
	targets, err := expandTargets(cfg.Targets)
	if err != nil {
		return nil, err
	}
	enc, err := parseWireEncoding(cfg.ContentType)
	if err != nil {
		return nil, err
	}
	admissionModes, err := parseAdmission(cfg.Admission)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if t == "self" || strings.HasPrefix(t, "kubeconfig=") {
			if err := enc.prepare(); err != nil {
				return nil, err
			}
			break
		}
	}
	tmp, err := os.MkdirTemp("", "customapi-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var etcdConfig etcd.ClientConfig
	for _, t := range targets {
		if t == "etcd" || t == "inprocess" || t == "self" {
			e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: filepath.Join(tmp, "etcd")})
			if err != nil {
				return nil, err
			}
			defer e.Close()
			etcdConfig = e.ClientConfig()
			break
		}
	}

	var open []*openTarget
	defer func() {
		for _, o := range open {
			o.close()
		}
	}()
	collect := func() []Result {
		var results []Result
		for _, o := range open {
			results = append(results, o.putRows...)
			results = append(results, o.rows...)
		}
		addRatios(results)
		return results
	}
	fail := func(err error) ([]Result, error) {
		for _, o := range open {
			o.close() // before collect: closing adds the server cpu rows
		}
		return collect(), err
	}
	for _, name := range targets {
		o, err := openTargetFor(ctx, cfg, enc, name, tmp, etcdConfig)
		if o != nil {
			open = append(open, o)
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
	}
	if err := runRounds(ctx, cfg, open); err != nil {
		return fail(err)
	}
	if err := runAdmission(ctx, cfg, admissionModes, open); err != nil {
		return fail(err)
	}
	for _, o := range open {
		err := o.perTarget(ctx, cfg, etcdConfig)
		o.close()
		if err != nil {
			return fail(fmt.Errorf("%s: %w", o.name, err))
		}
	}
	return collect(), nil
}

func expandTargets(in []string) ([]string, error) {
	var out []string
	for _, t := range in {
		switch {
		case t == "all":
			out = append(out, "etcd", "inprocess", "self")
		case t == "etcd", t == "inprocess", t == "self", strings.HasPrefix(t, "kubeconfig="):
			out = append(out, t)
		default:
			return nil, fmt.Errorf("unknown target %q (etcd, inprocess, self, kubeconfig=PATH, all)", t)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no target")
	}
	return out, nil
}

// openTarget is a target opened for the run, with the rows it has so far.
type openTarget struct {
	name string
	r    *runner
	// put is the etcd target's second runner (plain puts, target
	// etcd-put), which takes part in the create rounds only; nil on other
	// targets.
	put     *runner
	profile func(ctx context.Context, file string, work func(context.Context) error) error
	// putRows and rows are the rows of put and r, in the order of the
	// report (put's come first).
	putRows, rows []Result
	// closers run once, last first, when the target is closed.
	closers []func()
}

// close releases the target once (stopping a server it started) and adds
// the rows measured over its whole life (server cpu).
func (o *openTarget) close() {
	for i := len(o.closers) - 1; i >= 0; i-- {
		o.closers[i]()
	}
	o.closers = nil
}

// openTargetFor builds one target, ready for its workloads: a started self
// server (its startup row), the namespaces an HTTP server needs. On an
// error the target, if built, is returned too, so that the caller closes
// it.
func openTargetFor(ctx context.Context, cfg Config, enc wireEncoding, name, tmp string, etcdConfig etcd.ClientConfig) (*openTarget, error) {
	r := &runner{cfg: cfg, apiVer: cfg.Resource.GroupVersion().String(), kind: "Sample"}
	o := &openTarget{name: name, r: r}
	switch {
	case name == "etcd":
		cli, err := etcdConfig.NewClient(ctx)
		if err != nil {
			return nil, err
		}
		r.target = &etcdTarget{cli: cli, prefix: "/bench-etcd"}
		o.put = &runner{cfg: cfg, apiVer: r.apiVer, kind: r.kind, target: &etcdTarget{cli: cli, prefix: "/bench-etcd-put", put: true}}
		o.closers = append(o.closers, func() { _ = cli.Close() })
	case name == "inprocess":
		var t *inprocessTarget
		var err error
		if modes, _ := parseAdmission(cfg.Admission); modes != nil {
			t, err = newInprocessServed(ctx, etcdConfig, "/bench-inprocess", cfg.StorageMediaType, filepath.Join(tmp, "inprocess"))
		} else {
			t, err = newInprocess(ctx, etcdConfig, cfg.StorageMediaType)
		}
		if err != nil {
			return nil, err
		}
		r.target = t
		o.profile = func(ctx context.Context, file string, work func(context.Context) error) error {
			return profileSelf(ctx, file, cfg.ProfileSeconds, work)
		}
	case name == "self":
		t, ready, err := startSelf(ctx, cfg, enc, filepath.Join(tmp, "self"), etcdConfig)
		if err != nil {
			return nil, err
		}
		r.target = t
		o.rows = append(o.rows, Result{Target: t.Name(), Workload: "startup", Value: ready.Seconds(), Notes: "process start to ready line, empty data dir"})
		o.profile = func(ctx context.Context, file string, work func(context.Context) error) error {
			return profileServer(ctx, t, file, cfg.ProfileSeconds, work)
		}
	default:
		t, err := newKubeconfigTarget(strings.TrimPrefix(name, "kubeconfig="), cfg.Resource, enc)
		if err != nil {
			return nil, err
		}
		r.target = t
		r.apiVer, r.kind = cfg.Resource.GroupVersion().String(), t.kind
		o.profile = func(ctx context.Context, file string, work func(context.Context) error) error {
			return profileServer(ctx, t, file, cfg.ProfileSeconds, work)
		}
	}
	o.closers = append(o.closers, func() { _ = r.target.Close() })

	if t, ok := r.target.(*inprocessTarget); ok && t.served != nil {
		// A served registry has the namespaces battery, whose
		// NamespaceLifecycle admission refuses writes into a missing one.
		if _, err := ensureNamespaces(ctx, t.served.client, t.served.base, namespaces(cfg)); err != nil {
			return o, fmt.Errorf("namespaces: %w", err)
		}
	}
	if t, ok := r.target.(*httpTarget); ok {
		created, err := ensureNamespaces(ctx, t.client, t.base, namespaces(cfg))
		if err != nil {
			return o, fmt.Errorf("namespaces: %w", err)
		}
		if created != 0 && cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%s: created %d namespaces\n", t.Name(), created)
		}
		if cpu0, err := t.CPU(); err == nil {
			o.closers = append(o.closers, func() {
				if cpu1, err := t.CPU(); err == nil {
					o.rows = append(o.rows, Result{Target: t.Name(), Workload: "server cpu", Value: (cpu1 - cpu0).Seconds(),
						Notes: "user+system CPU seconds of the server process from when the bench opened it to its last workload, the other targets' rounds included (/proc)"})
				}
			})
		}
	}
	return o, nil
}

// runRounds runs the throughput workloads (create with each worker count,
// get, update) on every open target in alternating rounds (inRounds), so
// that what disturbs the machine for a while lands on every target alike,
// and appends their rows to each target's.
func runRounds(ctx context.Context, cfg Config, open []*openTarget) error {
	var all, withPut []*runner
	var allRows, withPutRows []*[]Result
	for _, o := range open {
		all, allRows = append(all, o.r), append(allRows, &o.rows)
		withPut, withPutRows = append(withPut, o.r), append(withPutRows, &o.rows)
		if o.put != nil {
			withPut, withPutRows = append(withPut, o.put), append(withPutRows, &o.putRows)
		}
	}
	add := func(rows []*[]Result, res []Result) {
		for i, r := range res {
			if r.Target != "" {
				*rows[i] = append(*rows[i], r)
			}
		}
	}
	for _, w := range cfg.CreateWorkers {
		res, err := inRounds(ctx, withPut, "create", w, cfg.Creates, cfg.Rounds, createBatch(w))
		add(withPutRows, res)
		if err != nil {
			return err
		}
	}
	res, err := inRounds(ctx, all, "get", cfg.Concurrency, cfg.Gets, cfg.Rounds, getBatch(cfg))
	add(allRows, res)
	if err != nil {
		return err
	}
	conflicts := map[*runner]*atomic.Int64{}
	for _, r := range all {
		if err := r.updateSetup(ctx); err != nil {
			return fmt.Errorf("%s: %w", r.target.Name(), err)
		}
		conflicts[r] = new(atomic.Int64)
	}
	res, err = inRounds(ctx, all, "update", cfg.Concurrency, cfg.Updates, cfg.Rounds, updateBatch(cfg, conflicts))
	for i := range res {
		if res[i].Target != "" {
			res[i].Notes = fmt.Sprintf("%d conflicts retried, %s", conflicts[all[i]].Load(), res[i].Notes)
		}
	}
	add(allRows, res)
	return err
}

// perTarget runs the workloads that are not ratios of throughput on the
// target alone: memory under load, etcd value size, lists, watch and
// profiles.
func (o *openTarget) perTarget(ctx context.Context, cfg Config, etcdConfig etcd.ClientConfig) error {
	r := o.r
	add := func(res Result, err error) error {
		if res.Target != "" { // a workload that failed before measuring has no row
			o.rows = append(o.rows, res)
		}
		return err
	}
	mem, err := r.loadList(ctx)
	o.rows = append(o.rows, mem...)
	if err != nil {
		return err
	}
	if prefix := map[string]string{"etcd": "/bench-etcd", "inprocess": "/bench-inprocess", "self": "/bench-self"}[o.name]; prefix != "" {
		mt := cfg.StorageMediaType
		if o.name == "etcd" {
			mt = "" // raw etcd always writes the JSON bytes
		}
		size, err := valueSizeRow(ctx, etcdConfig, o.name, prefix, mt)
		if err != nil {
			return err
		}
		o.rows = append(o.rows, size)
	}
	for _, l := range []struct {
		workload, rv string
		limit        int64
	}{
		{`list rv=""`, "", 0},
		{`list rv="0"`, "0", 0},
		{fmt.Sprintf("list limit=%d", cfg.PageSize), "", cfg.PageSize},
	} {
		if err := add(r.list(ctx, l.workload, l.rv, l.limit)); err != nil {
			return err
		}
	}
	if err := add(r.watch(ctx)); err != nil {
		return err
	}
	if cfg.CPUProfileDir != "" && o.profile != nil {
		if err := r.profiles(ctx, o.profile); err != nil {
			return err
		}
	}
	return nil
}

// valueSizeRow reports the size of one loaded sample's value in etcd,
// stored by the target under prefix in mediaType.
func valueSizeRow(ctx context.Context, etcdConfig etcd.ClientConfig, target, prefix, mediaType string) (Result, error) {
	cli, err := etcdConfig.NewClient(ctx)
	if err != nil {
		return Result{}, err
	}
	defer cli.Close()
	v, err := storedValue(ctx, cli, prefix, nsList, "l-00000")
	if err != nil {
		return Result{}, fmt.Errorf("etcd value size: %w", err)
	}
	if mediaType == "" {
		mediaType = "application/json"
	}
	return Result{Target: target, Workload: "etcd value", Value: float64(len(v)), Notes: "bytes of one sample in etcd, " + mediaType}, nil
}

// profiles records CPU profiles of the server under a create workload and
// a list workload, each running for ProfileSeconds.
func (r *runner) profiles(ctx context.Context, profile func(context.Context, string, func(context.Context) error) error) error {
	if err := os.MkdirAll(r.cfg.CPUProfileDir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(r.cfg.CPUProfileDir, r.target.Name())
	ns := nsProfile
	var ops atomic.Int64
	create := func(ctx context.Context) error {
		// i is unique across the workers (parallel hands it out
		// atomically); a shared counter here would be a data race.
		_, _, err := r.parallel(ctx, "profile: create", 1<<30, r.cfg.Concurrency, func(ctx context.Context, i int) error {
			name := fmt.Sprintf("p-%d-%d", time.Now().UnixNano(), i)
			_, err := r.target.Create(ctx, ns, name, r.sample(ns, name))
			if err == nil {
				ops.Add(1)
			}
			return tolerateOverload(err)
		})
		return err
	}
	if err := profileCounting(ctx, profile, base+"-create.pprof", create, &ops); err != nil {
		return err
	}
	list := func(ctx context.Context) error {
		_, _, err := r.parallel(ctx, "profile: list", 1<<30, 1, func(ctx context.Context, _ int) error {
			_, err := r.target.List(ctx, nsList, "", 0)
			if err == nil {
				ops.Add(1)
			}
			return tolerateOverload(err)
		})
		return err
	}
	return profileCounting(ctx, profile, base+"-list.pprof", list, &ops)
}

// tolerateOverload returns nil for the errors a server answers when it is
// overloaded or its etcd is slow (504 Timeout, 429 TooManyRequests, 503
// ServiceUnavailable, and "the server was unable to return a response in
// time"): a profile records
// CPU under load and counts completed operations only, and a run sharing a
// busy machine with other work must not fail on a write that etcd did not
// commit within its request timeout. Every other error is returned.
func tolerateOverload(err error) error {
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) {
		return nil
	}
	return err
}

// profileCounting runs profile of work into file and then writes, beside
// it, file with ".ops" appended: the number of operations work completed
// while profiled (ops, reset first), one decimal integer and a newline, so
// that the profile's CPU seconds divide into CPU per operation.
func profileCounting(ctx context.Context, profile func(context.Context, string, func(context.Context) error) error, file string, work func(context.Context) error, ops *atomic.Int64) error {
	ops.Store(0)
	if err := profile(ctx, file, work); err != nil {
		return err
	}
	return os.WriteFile(file+".ops", fmt.Appendf(nil, "%d\n", ops.Load()), 0o644)
}

// profileSelf profiles this process while work runs for ProfileSeconds.
func profileSelf(ctx context.Context, file string, seconds int, work func(context.Context) error) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
	defer cancel()
	err = work(ctx)
	pprof.StopCPUProfile()
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return err
}

// profileServer fetches /debug/pprof/profile from the server while work
// runs. Errors: the request's, an answer other than 200 (a server without
// profiling, or a user not allowed /debug/pprof), writing file, or work's.
func profileServer(ctx context.Context, t *httpTarget, file string, seconds int, work func(context.Context) error) error {
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- work(wctx) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", t.base, seconds), nil)
	if err != nil {
		cancel()
		return err
	}
	resp, err := t.client.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("%s: /debug/pprof/profile answered %s", t.Name(), resp.Status)
	} else if err == nil {
		defer resp.Body.Close()
		var f *os.File
		if f, err = os.Create(file); err == nil {
			_, err = io.Copy(f, resp.Body)
			f.Close()
		}
	}
	cancel()
	if werr := <-errc; werr != nil && !errors.Is(werr, context.Canceled) && err == nil {
		err = werr
	}
	return err
}

// newInprocess builds the in-process target on etcd under /bench-inprocess.
func newInprocess(ctx context.Context, etcdConfig etcd.ClientConfig, mediaType string) (*inprocessTarget, error) {
	return newInprocessAt(ctx, etcdConfig, "/bench-inprocess", mediaType)
}

// newInprocessAt builds the in-process target on etcd under prefix.
func newInprocessAt(ctx context.Context, etcdConfig etcd.ClientConfig, prefix, mediaType string) (*inprocessTarget, error) {
	reg, err := registry.Open(ctx, registry.Config{Storage: storage.Config{Etcd: etcdConfig, Prefix: prefix, MediaType: mediaType}}, benchinstall.Samples)
	if err != nil {
		return nil, err
	}
	samples, err := client.For[*benchv1.Sample, *benchv1.SampleList](reg, benchinstall.Samples)
	if err != nil {
		_ = reg.Close()
		return nil, err
	}
	return &inprocessTarget{reg: reg, samples: samples}, nil
}

// selfReadyTimeout bounds how long startSelf waits for /readyz.
const selfReadyTimeout = 60 * time.Second

// startSelf starts `customapi serve --resources customs,samples` on etcd
// under /bench-self and returns the target and the time from process start
// until its /readyz answers 200 (asked with the admin kubeconfig, which
// serve writes, naming the bound port, once it listens).
func startSelf(ctx context.Context, cfg Config, enc wireEncoding, dataDir string, etcdConfig etcd.ClientConfig) (*httpTarget, time.Duration, error) {
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, 0, err
		}
	}
	args := []string{"serve", "--data-dir", dataDir, "--secure-port", "0",
		"--etcd-servers", strings.Join(etcdConfig.Endpoints, ","), "--etcd-prefix", "/bench-self", "--resources", "customs,samples"}
	for flag, file := range map[string]string{"--etcd-cafile": etcdConfig.CAFile, "--etcd-certfile": etcdConfig.CertFile, "--etcd-keyfile": etcdConfig.KeyFile} {
		if file != "" {
			args = append(args, flag, file)
		}
	}
	if cfg.StorageMediaType != "" {
		args = append(args, "--storage-media-type", cfg.StorageMediaType)
	}
	cmd := exec.Command(exe, args...)
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	start := time.Now()
	exited, stop, err := startProcess(cmd, 30*time.Second)
	if err != nil {
		return nil, 0, err
	}
	restConfig, err := waitReadyz(ctx, filepath.Join(dataDir, "admin.kubeconfig"), exited, selfReadyTimeout)
	ready := time.Since(start)
	if err != nil {
		_ = stop()
		return nil, 0, fmt.Errorf("%w\n%s", err, stderr.String())
	}
	t, err := newHTTPTarget("self", restConfig, cfg.Resource, "Sample", enc)
	if err != nil {
		_ = stop()
		return nil, 0, err
	}
	t.pid, t.stop = cmd.Process.Pid, stop
	return t, ready, nil
}

// startProcess starts cmd and returns a channel that delivers its exit
// (cmd.Wait's error, once) and a stop that sends SIGTERM, waits up to
// grace for the exit, then kills it, and returns the exit's error.
func startProcess(cmd *exec.Cmd, grace time.Duration) (exited chan error, stop func() error, err error) {
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited, func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			return <-exited
		}
	}, nil
}

// waitReadyz polls until the kubeconfig at path exists and the server it
// names answers 200 on /readyz, returning the kubeconfig's rest.Config. It
// fails when the process exits first (exited delivers; the error is put
// back for the caller), ctx ends, or timeout passes (0: no timeout of its
// own).
func waitReadyz(ctx context.Context, path string, exited chan error, timeout time.Duration) (*rest.Config, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var restConfig *rest.Config
	var hc *http.Client
	for {
		if restConfig == nil {
			if _, err := os.Stat(path); err == nil {
				rc, err := clientcmd.BuildConfigFromFlags("", path)
				if err != nil {
					return nil, err
				}
				if hc, err = rest.HTTPClientFor(rc); err != nil {
					return nil, err
				}
				restConfig = rc
			}
		}
		if hc != nil {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(restConfig.Host, "/")+"/readyz", nil)
			if err != nil {
				return nil, err
			}
			if resp, err := hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					hc.CloseIdleConnections()
					return restConfig, nil
				}
			}
		}
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("customapi serve exited before it was ready: %v", err)
		case <-ctx.Done():
			return nil, fmt.Errorf("customapi serve not ready (GET /readyz): %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// newKubeconfigTarget reaches the server of a kubeconfig, named in the
// report by the kubeconfig's current context (else its server URL); the
// resource's kind is looked up through discovery. spec is PATH or PATH@pid=N, N being
// the server's process id on this machine (for its memory and CPU rows).
func newKubeconfigTarget(spec string, gvr schema.GroupVersionResource, enc wireEncoding) (*httpTarget, error) {
	path, pid := spec, 0
	if i := strings.LastIndex(spec, "@pid="); i >= 0 {
		n, err := strconv.Atoi(spec[i+len("@pid="):])
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("kubeconfig=%s: the pid after @pid= is not a process id", spec)
		}
		path, pid = spec[:i], n
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
	restConfig, err := loader.ClientConfig()
	if err != nil {
		return nil, err
	}
	name := restConfig.Host
	if raw, err := loader.RawConfig(); err == nil && raw.CurrentContext != "" {
		name = raw.CurrentContext
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	list, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", gvr.GroupVersion(), err)
	}
	kind := ""
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			kind = r.Kind
		}
	}
	if kind == "" {
		return nil, fmt.Errorf("%s does not serve %s", restConfig.Host, gvr)
	}
	t, err := newHTTPTarget(name, restConfig, gvr, kind, enc)
	if err != nil {
		return nil, err
	}
	t.pid = pid
	return t, nil
}

// newHTTPTarget builds the RESTClient of an HTTP target: the run's
// encoding as ContentType and AcceptContentTypes, the resource's kind
// decoded into the benchmark's Go types, no client-side rate limit, and
// wireCheck on the resource's paths.
func newHTTPTarget(name string, restConfig *rest.Config, gvr schema.GroupVersionResource, kind string, enc wireEncoding) (*httpTarget, error) {
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS, restConfig.Burst = -1, 0
	plain := rest.CopyConfig(restConfig)
	gv := gvr.GroupVersion()
	prefix := apiPath(gv) + "/" + strings.TrimPrefix(gv.String(), "/") + "/"
	restConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &wireCheck{next: rt, prefix: prefix, enc: enc} })
	hc, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		return nil, err
	}
	restConfig.APIPath = apiPath(gv)
	restConfig.GroupVersion = &gv
	restConfig.ContentType = enc.mediaType
	restConfig.AcceptContentTypes = enc.mediaType
	restConfig.NegotiatedSerializer = codecsFor(gv, kind).WithoutConversion()
	rc, err := rest.RESTClientForConfigAndClient(restConfig, hc)
	if err != nil {
		return nil, err
	}
	return &httpTarget{name: name, base: strings.TrimSuffix(restConfig.Host, "/"), client: hc, rest: rc, gvr: gvr, kind: kind, config: plain}, nil
}

// limitedWriter keeps at most n bytes.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	k := min(len(p), l.n)
	l.n -= k
	_, err := l.w.Write(p[:k])
	return len(p), err
}
