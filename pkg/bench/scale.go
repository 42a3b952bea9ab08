package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// ScaleConfig says what the scale benchmark measures: `customapi serve`
// restarted on a store of N samples, for each N of Objects.
type ScaleConfig struct {
	// Objects are the store sizes, ascending: the samples a size adds to
	// the previous one are written straight into etcd (copies, with new
	// names and uids, of the bytes the server itself wrote for one sample
	// created through the API), then the server is restarted and
	// measured.
	Objects []int
	// Executable is the customapi binary to run; "" means this one.
	Executable string
	// Dir holds the data dir (and the external etcd's); "" means a
	// temporary directory, removed at the end. A Dir that already holds
	// samples from an earlier run is reused (only the missing ones are
	// written).
	Dir string
	// ExternalEtcd runs serve on an etcd that the benchmark process
	// starts (--etcd-servers), so that etcd's CPU and memory are not in
	// the server's figures; false: serve's embedded etcd, the default
	// setup.
	ExternalEtcd bool
	// StorageMediaType is serve's --storage-media-type; "" means JSON.
	StorageMediaType string
	// ServeFlags are more flags for serve.
	ServeFlags []string
	// Restarts is how many times the server is started on each size; the
	// ready time reported is their median. Below 1 means 1.
	Restarts int
	// PageSize is the limit of the paged LIST.
	PageSize int64
	// Gets and Creates are how many GETs of random samples and creates of
	// new samples the latency rows measure (one at a time).
	Gets, Creates int
	// SkipUnpaged leaves out the LIST without a limit.
	SkipUnpaged bool
	// ServerCommand, when set, is the server measured instead of customapi
	// serve: its argv, run as it is (the process must be the server: its
	// pid is measured), storing in EtcdServers, reached with
	// ServerKubeconfig (an existing file; the user must be allowed
	// everything, /debug/pprof and /metrics included), with the samples
	// resource already served (hack/scale-peer.sh runs kube-apiserver with
	// docs/bench/samples-crd.yaml this way).
	ServerCommand    []string
	ServerKubeconfig string
	// EtcdServers is an etcd the server stores in (client URLs, plain
	// HTTP), written into directly; empty: the embedded etcd, or the
	// bench's own with ExternalEtcd. Required with ServerCommand.
	EtcdServers []string
	// Churn, when above 0, rewrites every sample that many times once
	// the rest is measured, straight into etcd while the server runs (its
	// watch cache follows; its compactor compacts), at most ChurnRate
	// writes a second (0: as fast as etcd takes them), recording etcd's
	// database size after each pass; then the server is restarted (the
	// embedded etcd defragments at start when that frees enough) and the
	// size and ready time recorded again.
	Churn     int
	ChurnRate int
	// CPUProfileDir, when set, receives a CPU profile of the first start
	// of each size, from process start until the server is stopped right
	// after it was ready (start-N.pprof; the binary must honour
	// CUSTOMAPI_CPUPROFILE, as customapi does). With Restarts 1 the
	// profile covers the whole measurement instead.
	CPUProfileDir string
	// Progress receives progress lines; nil for none.
	Progress io.Writer
}

// DefaultScaleConfig returns the settings of docs/performance.md's scale
// table (without Objects).
func DefaultScaleConfig() ScaleConfig {
	return ScaleConfig{Restarts: 3, PageSize: 500, Gets: 2000, Creates: 200}
}

// ScaleResult is what the scale benchmark measured on one store size.
// Sizes are bytes, memory of the serve process from /proc (Linux).
type ScaleResult struct {
	Server    string `json:"server"` // customapi, or ServerCommand's program
	Objects   int    `json:"objects"`
	MediaType string `json:"storageMediaType"`
	Etcd      string `json:"etcd"` // embedded or external
	// Load is how long writing the added samples into etcd took.
	Load time.Duration `json:"load"`
	// DBSize is the size of etcd's database file after the load;
	// DBInUse the part of it etcd's status reports in use.
	DBSize  int64 `json:"dbSize"`
	DBInUse int64 `json:"dbInUse"`
	// Ready are the times from process start until /readyz answers 200
	// and the samples are served from the watch cache (a watch opens),
	// one per restart; ReadyCPU the server's user+system CPU then.
	Ready    []time.Duration `json:"ready"`
	ReadyCPU []time.Duration `json:"readyCPU"`
	// RSS at ready (the last restart): total, anonymous (the Go heap and
	// stacks) and file-backed (with the embedded etcd: its mmap'd
	// database).
	RSSReady  memory        `json:"rssReady"`
	LiveHeap  int64         `json:"liveHeap"` // live Go heap after a forced GC, once settled
	Settled   time.Duration `json:"settled"`  // ready until the server's CPU went idle (the garbage collector's informers synced)
	SettleCPU time.Duration `json:"settleCPU"`
	RSSSettle memory        `json:"rssSettled"`
	// GET of a random sample, one at a time.
	GetP50, GetP99 time.Duration
	// A LIST whose label selector matches nothing, with and without a
	// limit (median of 5).
	SelectorNone time.Duration `json:"selectorNone"`
	// The paged LIST of every sample (PageSize per page, from the cache's
	// consistent read).
	PagedTotal       time.Duration `json:"pagedTotal"`
	PagedItems       int           `json:"pagedItems"`
	PageP50, PageP99 time.Duration
	PageMax          time.Duration `json:"pageMax"`
	PagedError       string        `json:"pagedError,omitempty"` // why the paged LIST stopped early
	RSSAfterPaged    memory        `json:"rssAfterPaged"`
	// The LIST without a limit: its HTTP status (200, or 429 when
	// refused), duration and the largest RSS seen while it ran.
	UnpagedCode   int           `json:"unpagedCode"`
	Unpaged       time.Duration `json:"unpaged"`
	UnpagedPeak   int64         `json:"unpagedPeakRSS"`
	UnpagedReason string        `json:"unpagedReason,omitempty"`
	// The watch-list read of every sample (sendInitialEvents) and the
	// objects it delivered.
	WatchList      time.Duration `json:"watchList"`
	WatchListItems int           `json:"watchListItems"`
	// Creates of new samples, one at a time, while a watch is open; the
	// watch's open time and the delay from each create's answer to its
	// event.
	CreateP50, CreateP99 time.Duration
	WatchOpen            time.Duration `json:"watchOpen"`
	WatchEventP50        time.Duration `json:"watchEventP50"`
	WatchEventP99        time.Duration `json:"watchEventP99"`
	RSSEnd               memory        `json:"rssEnd"`
	// Churn: etcd's database size (file, in use) after each pass, how
	// long the passes took, and after the restart that follows them.
	ChurnDB        []dbSize      `json:"churnDB,omitempty"`
	ChurnTime      time.Duration `json:"churnTime,omitempty"`
	ChurnRestart   time.Duration `json:"churnRestart,omitempty"`
	ChurnRestartDB dbSize        `json:"churnRestartDB,omitzero"`
	ChurnRSSPeak   int64         `json:"churnRSSPeak,omitempty"`
}

// dbSize is etcd's database size: the file, and the part in use.
type dbSize struct {
	File, InUse int64
}

// memory is a process's resident set: total, anonymous and file-backed,
// and the peak total since it started (VmHWM).
type memory struct {
	RSS, Anon, File, Peak int64
}

// scaleNamespace holds the samples of the scale benchmark, and
// writesNamespace those its create workload writes.
const (
	scaleNamespace  = "scale"
	writesNamespace = "scale-writes"
)

// scaleName is the name of sample i: fixed-width, so every copy of the
// template's bytes keeps its length (protobuf and CBOR values stay valid).
func scaleName(i int) string { return fmt.Sprintf("scale-%08d", i) }

// scaleUID is the uid of sample i: a UUID's shape and length.
func scaleUID(i int) string { return fmt.Sprintf("5ca1e000-0000-4000-8000-%012d", i) }

// RunScale runs the scale benchmark: for each size of cfg.Objects it fills
// the store to that size, restarts serve cfg.Restarts times, and on the
// last start measures memory, GETs, lists, creates and a watch. It returns
// one result per size measured, also when a later size fails.
func RunScale(ctx context.Context, cfg ScaleConfig) ([]ScaleResult, error) {
	if len(cfg.Objects) == 0 || !slices.IsSorted(cfg.Objects) || cfg.Objects[0] < 1 {
		return nil, fmt.Errorf("bench: scale sizes %v: want one or more, ascending, each 1 or more", cfg.Objects)
	}
	cfg.Restarts = max(cfg.Restarts, 1)
	if cfg.PageSize <= 0 {
		cfg.PageSize = 500
	}
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "customapi-scale-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if len(cfg.ServerCommand) != 0 && (len(cfg.EtcdServers) == 0 || cfg.ServerKubeconfig == "") {
		return nil, errors.New("bench: a scale server command needs its etcd servers and kubeconfig")
	}
	s := &scaleRun{cfg: cfg, exe: exe, dataDir: filepath.Join(dir, "data")}
	switch {
	case len(cfg.EtcdServers) != 0:
		s.external = &etcd.ClientConfig{Endpoints: cfg.EtcdServers}
	case cfg.ExternalEtcd:
		// Few entries in the raft log: a server's etcd keeps what the log
		// holds in memory, and the load's entries are transactions of 100
		// puts.
		e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: filepath.Join(dir, "etcd"), SnapshotCount: 10})
		if err != nil {
			return nil, err
		}
		defer e.Close()
		c := e.ClientConfig()
		s.external = &c
	}
	var results []ScaleResult
	for _, n := range cfg.Objects {
		r, err := s.size(ctx, n)
		if err != nil {
			return results, fmt.Errorf("%d objects: %w", n, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// scaleRun is the state of one RunScale.
type scaleRun struct {
	cfg      ScaleConfig
	exe      string
	dataDir  string
	external *etcd.ClientConfig // nil: serve's embedded etcd
	template *scaleTemplate
}

// scaleTemplate is one sample as the server stored it: its etcd key and
// value, name and uid, copied for every other sample.
type scaleTemplate struct {
	prefix    string // <prefix>/bench.customapi.io/samples/scale/
	value     []byte
	name, uid string
}

// valueOf is the stored value of sample i: the template's bytes with i's
// name and uid (of the same lengths).
func (t *scaleTemplate) valueOf(i int) []byte {
	v := bytes.Replace(t.value, []byte(t.name), []byte(scaleName(i)), 1)
	return bytes.Replace(v, []byte(t.uid), []byte(scaleUID(i)), 1)
}

func (s *scaleRun) progressf(format string, args ...any) {
	if s.cfg.Progress != nil {
		fmt.Fprintf(s.cfg.Progress, format+"\n", args...)
	}
}

// etcdDir is the data dir of serve's embedded etcd.
func (s *scaleRun) etcdDir() string { return filepath.Join(s.dataDir, "etcd") }

// size fills the store to n samples and measures the server on it.
func (s *scaleRun) size(ctx context.Context, n int) (ScaleResult, error) {
	r := ScaleResult{Server: "customapi", Objects: n, MediaType: s.cfg.StorageMediaType, Etcd: "embedded"}
	if len(s.cfg.ServerCommand) != 0 {
		r.Server = filepath.Base(s.cfg.ServerCommand[0])
	}
	if r.MediaType == "" {
		r.MediaType = storage.DefaultMediaType
	}
	if s.external != nil {
		r.Etcd = "external"
	}
	if s.template == nil {
		if err := s.makeTemplate(ctx); err != nil {
			return r, fmt.Errorf("template sample: %w", err)
		}
	}
	start := time.Now()
	if err := s.load(ctx, n, &r); err != nil {
		return r, fmt.Errorf("load: %w", err)
	}
	r.Load = time.Since(start)
	var srv *scaleServer
	defer func() {
		if srv != nil {
			_ = srv.stop()
		}
	}()
	for i := range s.cfg.Restarts {
		var err error
		profile := ""
		if i == 0 && s.cfg.CPUProfileDir != "" {
			profile = filepath.Join(s.cfg.CPUProfileDir, fmt.Sprintf("start-%d.pprof", n))
		}
		if srv, err = s.startServe(ctx, profile); err != nil {
			return r, err
		}
		r.Ready = append(r.Ready, srv.ready)
		r.ReadyCPU = append(r.ReadyCPU, srv.readyCPU)
		s.progressf("%d objects: start %d ready in %s (%s CPU)", n, i+1, srv.ready.Round(time.Millisecond), srv.readyCPU)
		if i < s.cfg.Restarts-1 {
			if err := srv.stop(); err != nil {
				return r, fmt.Errorf("stop serve: %w", err)
			}
			srv = nil
		}
	}
	r.RSSReady = srv.memory()
	if err := s.measure(ctx, srv, &r); err != nil {
		return r, err
	}
	db := s.dbSize(ctx)
	r.DBSize, r.DBInUse = db.File, db.InUse
	if s.cfg.Churn > 0 {
		if err := s.churn(ctx, n, srv, &r); err != nil {
			return r, fmt.Errorf("churn: %w", err)
		}
		err := srv.stop()
		srv = nil
		if err != nil {
			return r, fmt.Errorf("stop serve: %w", err)
		}
		if srv, err = s.startServe(ctx, ""); err != nil {
			return r, err
		}
		r.ChurnRestart = srv.ready
		r.ChurnRestartDB = s.dbSize(ctx)
		s.progressf("%d objects: after the churn, ready in %s, etcd db %d MB (%d MB in use)", n, srv.ready.Round(time.Millisecond), r.ChurnRestartDB.File>>20, r.ChurnRestartDB.InUse>>20)
	}
	return r, nil
}

// dbSize asks etcd for its database size; zero when it cannot.
func (s *scaleRun) dbSize(ctx context.Context) dbSize {
	cli, err := s.etcdClient(ctx)
	if err != nil {
		return dbSize{}
	}
	defer cli.Close()
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		return dbSize{}
	}
	return dbSize{File: st.DbSize, InUse: st.DbSizeInUse}
}

// churn rewrites samples 0..n-1 cfg.Churn times into etcd (the stored
// bytes, again) while srv runs, recording the database size after each
// pass and the server's largest RSS.
func (s *scaleRun) churn(ctx context.Context, n int, srv *scaleServer, r *ScaleResult) error {
	cli, err := s.etcdClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	t := s.template
	start := time.Now()
	const batch = 100
	for pass := 1; pass <= s.cfg.Churn; pass++ {
		passStart := time.Now()
		for from := 0; from < n; from += batch {
			to := min(from+batch, n)
			ops := make([]clientv3.Op, 0, to-from)
			for i := from; i < to; i++ {
				ops = append(ops, clientv3.OpPut(t.prefix+scaleName(i), string(t.valueOf(i))))
			}
			if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				return err
			}
			if s.cfg.ChurnRate > 0 {
				if ahead := time.Duration(to)*time.Second/time.Duration(s.cfg.ChurnRate) - time.Since(passStart); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			if m := srv.memory(); m.RSS > r.ChurnRSSPeak {
				r.ChurnRSSPeak = m.RSS
			}
		}
		db := s.dbSize(ctx)
		r.ChurnDB = append(r.ChurnDB, db)
		s.progressf("%d objects: churn pass %d in %s, etcd db %d MB (%d MB in use), RSS %d MB", n, pass, time.Since(passStart).Round(time.Second), db.File>>20, db.InUse>>20, srv.memory().RSS>>20)
	}
	r.ChurnTime = time.Since(start)
	return nil
}

// serveArgs are serve's flags for the run.
func (s *scaleRun) serveArgs() []string {
	args := []string{"serve", "--data-dir", s.dataDir, "--secure-port", "0", "--resources", "customs,samples"}
	if c := s.external; c != nil {
		args = append(args, "--etcd-servers", strings.Join(c.Endpoints, ","))
		for flag, file := range map[string]string{"--etcd-cafile": c.CAFile, "--etcd-certfile": c.CertFile, "--etcd-keyfile": c.KeyFile} {
			if file != "" {
				args = append(args, flag, file)
			}
		}
	}
	if s.cfg.StorageMediaType != "" {
		args = append(args, "--storage-media-type", s.cfg.StorageMediaType)
	}
	return append(args, s.cfg.ServeFlags...)
}

// etcdClient reaches the etcd the samples live in: the external one, or
// the embedded one of a running server (through its data dir's endpoints
// file and client certificate).
func (s *scaleRun) etcdClient(ctx context.Context) (*clientv3.Client, error) {
	if s.external != nil {
		return s.external.NewClient(ctx)
	}
	c, err := etcd.RunningEmbedded(s.etcdDir())
	if err != nil {
		return nil, err
	}
	return c.NewClient(ctx)
}

// makeTemplate starts the server on the empty store, creates the
// namespace and one sample through the API, and keeps the bytes the
// server stored for it. A Dir of an earlier run already has them.
func (s *scaleRun) makeTemplate(ctx context.Context) error {
	srv, err := s.startServe(ctx, "")
	if err != nil {
		return err
	}
	defer func() { _ = srv.stop() }()
	cs, err := kubernetes.NewForConfig(srv.target.config)
	if err != nil {
		return err
	}
	for _, ns := range []string{scaleNamespace, writesNamespace} {
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	name := scaleName(0)
	var stored benchv1.Sample
	err = srv.target.rest.Get().Namespace(scaleNamespace).Resource("samples").Name(name).Do(ctx).Into(&stored)
	if apierrors.IsNotFound(err) {
		s1 := newSample(benchinstall.Samples.GroupVersionKind.GroupVersion().String(), "Sample", scaleNamespace, name)
		err = srv.target.rest.Post().Namespace(scaleNamespace).Resource("samples").Body(s1).Do(ctx).Into(&stored)
	}
	if err != nil {
		return err
	}
	cli, err := s.etcdClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	prefix := storage.Key(storage.DefaultPrefix, benchinstall.Samples.GroupResource(), scaleNamespace, "")
	resp, err := cli.Get(ctx, prefix+name)
	if err != nil {
		return err
	}
	if len(resp.Kvs) != 1 {
		return fmt.Errorf("no key %s in etcd", prefix+name)
	}
	value := resp.Kvs[0].Value
	if bytes.HasPrefix(value, []byte("k8s:enc:")) {
		return errors.New("samples are encrypted at rest: the benchmark copies plain values")
	}
	for _, part := range []string{name, string(stored.UID)} {
		if c := bytes.Count(value, []byte(part)); c != 1 {
			return fmt.Errorf("the stored sample holds %q %d times, want once", part, c)
		}
	}
	s.template = &scaleTemplate{prefix: prefix, value: value, name: name, uid: string(stored.UID)}
	return nil
}

// load writes samples until the store holds n: with the server stopped,
// into the external etcd or an embedded etcd started on the data dir for
// the purpose (fsync off: it is closed cleanly before the server starts).
func (s *scaleRun) load(ctx context.Context, n int, r *ScaleResult) error {
	var cli *clientv3.Client
	if s.external != nil {
		var err error
		if cli, err = s.external.NewClient(ctx); err != nil {
			return err
		}
	} else {
		// Few entries in the raft log: the server's etcd would read every
		// 100-put transaction of the load back into memory at its start.
		e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: s.etcdDir(), UnsafeNoFsync: true, SnapshotCount: 10})
		if err != nil {
			return err
		}
		defer e.Close()
		if cli, err = e.ClientConfig().NewClient(ctx); err != nil {
			return err
		}
	}
	defer cli.Close()
	t := s.template
	resp, err := cli.Get(ctx, t.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	have := int(resp.Count)
	if have >= n {
		return nil
	}
	s.progressf("%d objects: writing %d samples into etcd", n, n-have)
	// Transactions of 100 puts (etcd's --max-txn-ops is 128), 4 at once.
	const batch, workers = 100, 4
	var next atomic.Int64
	next.Store(int64(have))
	var written atomic.Int64
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				from := int(next.Add(batch)) - batch
				if from >= n || ctx.Err() != nil {
					return
				}
				to := min(from+batch, n)
				ops := make([]clientv3.Op, 0, to-from)
				for i := from; i < to; i++ {
					ops = append(ops, clientv3.OpPut(t.prefix+scaleName(i), string(t.valueOf(i))))
				}
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
				if w := written.Add(int64(to - from)); w%100000 < batch {
					s.progressf("  %d written", w)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// scaleServer is one started serve process.
type scaleServer struct {
	target   *httpTarget
	pid      int
	ready    time.Duration
	readyCPU time.Duration
	stop     func() error
}

func (v *scaleServer) memory() memory {
	m, _ := processMemory(v.pid)
	return m
}

// startServe starts serve and waits, without a deadline of its own (ctx
// bounds it), until /readyz answers 200. A profile path makes the process
// write a CPU profile there (CUSTOMAPI_CPUPROFILE).
func (s *scaleRun) startServe(ctx context.Context, profile string) (*scaleServer, error) {
	cmd := exec.Command(s.exe, s.serveArgs()...)
	if c := s.cfg.ServerCommand; len(c) != 0 {
		cmd = exec.Command(c[0], c[1:]...)
	}
	if profile != "" {
		cmd.Env = append(os.Environ(), "CUSTOMAPI_CPUPROFILE="+profile)
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	// The kubeconfig of an earlier start names that start's port: wait
	// for this start's.
	kubeconfig := s.cfg.ServerKubeconfig
	if kubeconfig == "" {
		kubeconfig = filepath.Join(s.dataDir, "admin.kubeconfig")
		_ = os.Remove(kubeconfig)
	}
	start := time.Now()
	exited, stop, err := startProcess(cmd, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	restConfig, err := waitReadyz(ctx, kubeconfig, exited, 0)
	if err != nil {
		_ = stop()
		return nil, fmt.Errorf("%w\n%s", err, stderr.String())
	}
	enc, _ := parseWireEncoding("")
	t, err := newHTTPTarget("self", restConfig, benchinstall.Samples.GroupVersionResource(), "Sample", enc)
	if err != nil {
		_ = stop()
		return nil, err
	}
	t.pid = cmd.Process.Pid
	// kube-apiserver is ready before a custom resource's watch cache has
	// loaded (it builds it on the resource's first request): ready means
	// the samples are served from memory.
	if err := waitServed(ctx, t); err != nil {
		_ = stop()
		return nil, fmt.Errorf("%w\n%s", err, stderr.String())
	}
	ready := time.Since(start)
	cpu, _ := processCPU(cmd.Process.Pid)
	return &scaleServer{target: t, pid: cmd.Process.Pid, ready: ready, readyCPU: cpu, stop: stop}, nil
}

// waitServed waits until the server serves the samples from its watch
// cache: until a watch from the current resourceVersion opens (while the
// cache loads, a server answers 429).
func waitServed(ctx context.Context, t *httpTarget) error {
	for {
		var list benchv1.SampleList
		err := t.rest.Get().Namespace(scaleNamespace).Resource("samples").Param("limit", "1").Do(ctx).Into(&list)
		if err == nil {
			url := t.base + "/apis/bench.customapi.io/v1/namespaces/" + scaleNamespace + "/samples?watch=true&timeoutSeconds=1&resourceVersion=" + list.ResourceVersion
			req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if rerr != nil {
				return rerr
			}
			if resp, err := t.client.Do(req); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// measure runs the workloads of one size on a ready server.
func (s *scaleRun) measure(ctx context.Context, srv *scaleServer, r *ScaleResult) error {
	t := srv.target
	n := r.Objects
	// The server keeps working after ready (the garbage collector's
	// informers list every resource): wait until it is idle.
	cpu0 := srv.readyCPU
	start := time.Now()
	idle, err := waitIdle(ctx, srv.pid)
	if err != nil {
		return err
	}
	r.Settled = idle.Sub(start)
	if cpu, err := processCPU(srv.pid); err == nil {
		r.SettleCPU = cpu - cpu0
	}
	r.RSSSettle = srv.memory()
	s.progressf("%d objects: settled %s after ready (%s CPU), RSS %d MB", n, r.Settled.Round(time.Millisecond), r.SettleCPU, r.RSSSettle.RSS>>20)
	if heap, err := t.LiveHeap(ctx); err == nil {
		r.LiveHeap = heap
	}

	var gets latencies
	for range s.cfg.Gets {
		name := scaleName(rand.IntN(n))
		t0 := time.Now()
		if err := t.Get(ctx, scaleNamespace, name); err != nil {
			return fmt.Errorf("get %s: %w", name, err)
		}
		gets = append(gets, time.Since(t0))
	}
	r.GetP50, r.GetP99 = gets.percentile(50), gets.percentile(99)

	var none latencies
	for range 5 {
		t0 := time.Now()
		var list benchv1.SampleList
		if err := t.rest.Get().Namespace(scaleNamespace).Resource("samples").Param("labelSelector", "bench.customapi.io/label-0=none").Do(ctx).Into(&list); err != nil {
			return fmt.Errorf("list with a selector: %w", err)
		}
		none = append(none, time.Since(t0))
		if len(list.Items) != 0 {
			return fmt.Errorf("list with a selector that matches nothing returned %d items", len(list.Items))
		}
	}
	r.SelectorNone = none.percentile(50)

	s.progressf("%d objects: paged LIST (limit %d)", n, s.cfg.PageSize)
	var pages latencies
	cont := ""
	start = time.Now()
	for {
		req := t.rest.Get().Namespace(scaleNamespace).Resource("samples").Param("limit", strconv.FormatInt(s.cfg.PageSize, 10))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		var page benchv1.SampleList
		t0 := time.Now()
		if err := req.Do(ctx).Into(&page); err != nil {
			// A paged LIST outlives its continue token when it takes
			// longer than etcd's compaction interval (410 Gone): the
			// row says so, and the run goes on.
			r.PagedError = err.Error()
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				r.PagedError = fmt.Sprintf("%d %s", st.Status().Code, st.Status().Reason)
			}
			break
		}
		pages = append(pages, time.Since(t0))
		r.PagedItems += len(page.Items)
		if cont = page.Continue; cont == "" {
			break
		}
	}
	r.PagedTotal = time.Since(start)
	r.PageP50, r.PageP99, r.PageMax = pages.percentile(50), pages.percentile(99), pages.percentile(100)
	r.RSSAfterPaged = srv.memory()
	s.progressf("%d objects: paged LIST of %d in %s (page p99 %s), RSS %d MB", n, r.PagedItems, r.PagedTotal.Round(time.Millisecond), r.PageP99, r.RSSAfterPaged.RSS>>20)

	if !s.cfg.SkipUnpaged {
		s.unpaged(ctx, srv, r)
		s.progressf("%d objects: unpaged LIST: %d in %s, peak RSS %d MB %s", n, r.UnpagedCode, r.Unpaged.Round(time.Millisecond), r.UnpagedPeak>>20, r.UnpagedReason)
	}
	if err := s.watchList(ctx, srv, r); err != nil {
		return fmt.Errorf("watch-list: %w", err)
	}
	s.progressf("%d objects: watch-list of %d in %s", n, r.WatchListItems, r.WatchList.Round(time.Millisecond))

	return s.createsAndWatch(ctx, srv, r)
}

// watchList reads every sample as client-go's informers do (a watch with
// sendInitialEvents: the objects as ADDED events, then a bookmark marking
// their end).
func (s *scaleRun) watchList(ctx context.Context, srv *scaleServer, r *ScaleResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	w, err := srv.target.rest.Get().Namespace(scaleNamespace).Resource("samples").
		Param("watch", "true").Param("sendInitialEvents", "true").Param("resourceVersionMatch", "NotOlderThan").
		Param("allowWatchBookmarks", "true").Watch(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added:
			r.WatchListItems++
		case watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				r.WatchList = time.Since(start)
				return nil
			}
		case watch.Error:
			return apierrors.FromObject(ev.Object)
		}
	}
	return errors.New("the watch ended before the initial events did")
}

// unpaged LISTs every sample in one request, sampling the server's RSS
// meanwhile.
func (s *scaleRun) unpaged(ctx context.Context, srv *scaleServer, r *ScaleResult) {
	done := make(chan struct{})
	var peak atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := processMemory(srv.pid); err == nil && m.RSS > peak.Load() {
				peak.Store(m.RSS)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	t0 := time.Now()
	resp, err := srv.target.rest.Get().Namespace(scaleNamespace).Resource("samples").DoRaw(ctx)
	r.Unpaged = time.Since(t0)
	close(done)
	wg.Wait()
	r.UnpagedPeak = peak.Load()
	r.UnpagedCode = http.StatusOK
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			r.UnpagedCode = int(status.Status().Code)
			r.UnpagedReason = status.Status().Message
		} else {
			r.UnpagedCode = -1
			r.UnpagedReason = err.Error()
		}
	}
	_ = resp
}

// createsAndWatch opens a watch from now, then creates samples one at a
// time, each waiting for its event.
func (s *scaleRun) createsAndWatch(ctx context.Context, srv *scaleServer, r *ScaleResult) error {
	t := srv.target
	first, err := t.Create(ctx, writesNamespace, "", newSample("", "", writesNamespace, "scale-new-"+strconv.FormatInt(time.Now().UnixNano(), 36)))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t0 := time.Now()
	events, err := t.Watch(wctx, writesNamespace, first)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	r.WatchOpen = time.Since(t0)
	var creates, delays latencies
	base := "scale-new-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	for i := range s.cfg.Creates {
		t0 := time.Now()
		rv, err := t.Create(ctx, writesNamespace, "", newSample("", "", writesNamespace, base+strconv.Itoa(i)))
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		acked := time.Now()
		creates = append(creates, acked.Sub(t0))
		for got := ""; got != rv; {
			select {
			case v, ok := <-events:
				if !ok {
					return errors.New("the watch ended")
				}
				got = v
			case <-time.After(30 * time.Second):
				return fmt.Errorf("no watch event for resourceVersion %s within 30 s", rv)
			}
		}
		delays = append(delays, time.Since(acked))
	}
	r.CreateP50, r.CreateP99 = creates.percentile(50), creates.percentile(99)
	r.WatchEventP50, r.WatchEventP99 = delays.percentile(50), delays.percentile(99)
	r.RSSEnd = srv.memory()
	return nil
}

// waitIdle waits until process pid used less than a tenth of a CPU second
// per second, three seconds in a row, and returns when that quiet time
// began.
func waitIdle(ctx context.Context, pid int) (time.Time, error) {
	prev, err := processCPU(pid)
	if err != nil {
		return time.Time{}, err
	}
	quiet, since := 0, time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for quiet < 3 {
		last := time.Now()
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-tick.C:
		}
		cpu, err := processCPU(pid)
		if err != nil {
			return time.Time{}, err
		}
		if cpu-prev < 100*time.Millisecond {
			if quiet == 0 {
				since = last
			}
			quiet++
		} else {
			quiet = 0
		}
		prev = cpu
	}
	return since, nil
}

// processMemory reads VmRSS, RssAnon, RssFile and VmHWM of a process from
// /proc/PID/status (Linux).
func processMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	fields := map[string]*int64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File, "VmHWM:": &m.Peak}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if p, ok := fields[f[0]]; ok {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, f[0], err)
			}
			*p = kb * 1024
		}
	}
	return m, nil
}

// WriteScaleTable prints the results as a table with a column per store
// size and a row per figure.
func WriteScaleTable(w io.Writer, results []ScaleResult) error {
	if len(results) == 0 {
		return nil
	}
	mb := func(b int64) string { return fmt.Sprintf("%d MB", b>>20) }
	ms := func(d time.Duration) string {
		if d >= 10*time.Second {
			return fmt.Sprintf("%.1fs", d.Seconds())
		}
		return dur(d)
	}
	rows := []struct {
		name string
		f    func(r ScaleResult) string
	}{
		{"server", func(r ScaleResult) string { return r.Server }},
		{"objects", func(r ScaleResult) string { return strconv.Itoa(r.Objects) }},
		{"storage encoding / etcd", func(r ScaleResult) string { return mediaName(r.MediaType) + " / " + r.Etcd }},
		{"etcd db file (in use)", func(r ScaleResult) string { return mb(r.DBSize) + " (" + mb(r.DBInUse) + ")" }},
		{"load into etcd", func(r ScaleResult) string { return ms(r.Load) }},
		{"restart to ready, median", func(r ScaleResult) string { return ms(median(r.Ready)) + " " + durations(r.Ready, ms) }},
		{"CPU to ready, median", func(r ScaleResult) string { return ms(median(r.ReadyCPU)) }},
		{"RSS at ready (anon + file)", func(r ScaleResult) string { return rss(r.RSSReady) }},
		{"ready to idle (CPU)", func(r ScaleResult) string { return ms(r.Settled) + " (" + ms(r.SettleCPU) + ")" }},
		{"RSS when idle (anon + file)", func(r ScaleResult) string { return rss(r.RSSSettle) }},
		{"live heap when idle", func(r ScaleResult) string { return mb(r.LiveHeap) }},
		{"GET p50 / p99", func(r ScaleResult) string { return ms(r.GetP50) + " / " + ms(r.GetP99) }},
		{"LIST, selector matching none", func(r ScaleResult) string { return ms(r.SelectorNone) }},
		{"paged LIST of all", func(r ScaleResult) string {
			if r.PagedError != "" {
				return fmt.Sprintf("stopped after %d in %s: %s", r.PagedItems, ms(r.PagedTotal), r.PagedError)
			}
			return ms(r.PagedTotal)
		}},
		{"page p50 / p99 / max", func(r ScaleResult) string {
			return ms(r.PageP50) + " / " + ms(r.PageP99) + " / " + ms(r.PageMax)
		}},
		{"RSS after paged LIST", func(r ScaleResult) string { return rss(r.RSSAfterPaged) }},
		{"unpaged LIST", func(r ScaleResult) string {
			if r.UnpagedCode == 0 {
				return "-"
			}
			return fmt.Sprintf("%d in %s", r.UnpagedCode, ms(r.Unpaged))
		}},
		{"RSS peak during unpaged LIST", func(r ScaleResult) string { return mb(r.UnpagedPeak) }},
		{"watch-list of all (informers' read)", func(r ScaleResult) string { return ms(r.WatchList) }},
		{"create p50 / p99", func(r ScaleResult) string { return ms(r.CreateP50) + " / " + ms(r.CreateP99) }},
		{"watch open; event p50 / p99", func(r ScaleResult) string {
			return ms(r.WatchOpen) + "; " + ms(r.WatchEventP50) + " / " + ms(r.WatchEventP99)
		}},
		{"RSS at the end (peak)", func(r ScaleResult) string { return rss(r.RSSEnd) + " (" + mb(r.RSSEnd.Peak) + ")" }},
	}
	if results[0].ChurnTime > 0 {
		rows = append(rows, []struct {
			name string
			f    func(r ScaleResult) string
		}{
			{"churn: etcd db after each pass (in use)", func(r ScaleResult) string {
				var parts []string
				for _, d := range r.ChurnDB {
					parts = append(parts, fmt.Sprintf("%d (%d)", d.File>>20, d.InUse>>20))
				}
				return strings.Join(parts, ", ") + " MB"
			}},
			{"churn: passes took; server RSS peak", func(r ScaleResult) string { return ms(r.ChurnTime) + "; " + mb(r.ChurnRSSPeak) }},
			{"restart after churn: ready; etcd db (in use)", func(r ScaleResult) string {
				return ms(r.ChurnRestart) + "; " + mb(r.ChurnRestartDB.File) + " (" + mb(r.ChurnRestartDB.InUse) + ")"
			}},
		}...)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		cells := []string{row.name}
		for _, r := range results {
			cells = append(cells, row.f(r))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// WriteScaleJSON prints the results as JSON, durations in nanoseconds.
func WriteScaleJSON(w io.Writer, results []ScaleResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

func rss(m memory) string {
	return fmt.Sprintf("%d MB (%d + %d)", m.RSS>>20, m.Anon>>20, m.File>>20)
}

func median(ds []time.Duration) time.Duration { return latencies(ds).percentile(50) }

func durations(ds []time.Duration, format func(time.Duration) string) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = format(d)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

func mediaName(mediaType string) string {
	for _, e := range wireEncodings {
		if e.mediaType == mediaType {
			return e.name
		}
	}
	return mediaType
}
