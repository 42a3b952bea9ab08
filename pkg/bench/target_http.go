package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
)

// httpTarget talks to a Kubernetes-style API server over HTTPS, as any
// client-go program does: a RESTClient with the run's encoding as
// ContentType and AcceptContentTypes (also for watches), typed decoding of
// every answer, one shared HTTP/2 connection (client-go's transport for the
// kubeconfig's credentials), no client-side rate limit.
type httpTarget struct {
	name   string
	base   string // https://host:port
	client *http.Client
	rest   *rest.RESTClient
	gvr    schema.GroupVersionResource
	kind   string
	// config is the kubeconfig's rest.Config (client-side rate limit
	// off), for the admission workloads' clientset.
	config *rest.Config
	// pid of the server process when known (self target, or given with
	// kubeconfig=PATH@pid=N), for Memory and CPU.
	pid int
	// stop ends the server the target started, if any.
	stop func() error
}

func (t *httpTarget) Name() string { return t.name }

// apiPath is the root of a group version's paths: /apis, or /api for the
// core group.
func apiPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api"
	}
	return "/apis"
}

// conflictOr maps a 409 Conflict to errConflict.
func conflictOr(err error) error {
	if apierrors.IsConflict(err) {
		return errConflict
	}
	return err
}

func (t *httpTarget) Create(ctx context.Context, namespace, name string, s *sample) (string, error) {
	s.APIVersion, s.Kind = t.gvr.GroupVersion().String(), t.kind
	var out sample
	if err := t.rest.Post().Namespace(namespace).Resource(t.gvr.Resource).Body(s).Do(ctx).Into(&out); err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

func (t *httpTarget) Get(ctx context.Context, namespace, name string) error {
	var out sample
	return t.rest.Get().Namespace(namespace).Resource(t.gvr.Resource).Name(name).Do(ctx).Into(&out)
}

func (t *httpTarget) Update(ctx context.Context, namespace, name string, value int64) (string, error) {
	var s sample
	if err := t.rest.Get().Namespace(namespace).Resource(t.gvr.Resource).Name(name).Do(ctx).Into(&s); err != nil {
		return "", err
	}
	setFirstNumber(&s.Spec, value)
	var out sample
	if err := t.rest.Put().Namespace(namespace).Resource(t.gvr.Resource).Name(name).Body(&s).Do(ctx).Into(&out); err != nil {
		return "", conflictOr(err)
	}
	return out.ResourceVersion, nil
}

func (t *httpTarget) List(ctx context.Context, namespace, rv string, limit int64) (int, error) {
	n, cont := 0, ""
	for {
		req := t.rest.Get().Namespace(namespace).Resource(t.gvr.Resource)
		if cont != "" {
			req = req.Param("continue", cont)
		} else {
			req = req.Param("resourceVersion", rv)
		}
		if limit > 0 {
			req = req.Param("limit", strconv.FormatInt(limit, 10))
		}
		var page benchv1.SampleList
		if err := req.Do(ctx).Into(&page); err != nil {
			return n, err
		}
		n += len(page.Items)
		if cont = page.Continue; cont == "" {
			return n, nil
		}
	}
}

func (t *httpTarget) Watch(ctx context.Context, namespace, rv string) (<-chan string, error) {
	w, err := t.rest.Get().Namespace(namespace).Resource(t.gvr.Resource).
		Param("watch", "true").Param("resourceVersion", rv).Watch(ctx)
	if err != nil {
		return nil, err
	}
	return resourceVersions(ctx, w), nil
}

// admissionClient is a clientset of the target's server, for the
// admissionregistration.k8s.io objects of the admission workloads.
func (t *httpTarget) admissionClient() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(t.config)
}

// Memory reads the server's resident set size from /proc (Linux), when the
// benchmark started the server.
func (t *httpTarget) Memory() (int64, string, error) {
	if t.pid == 0 {
		return 0, "", errNoMemory
	}
	return processRSS(t.pid)
}

func (t *httpTarget) Close() error {
	if t.stop != nil {
		return t.stop()
	}
	return nil
}

// CPU returns the user plus system CPU time of the server process so far,
// read from /proc/PID/stat (Linux, 100 clock ticks per second), when the
// pid is known.
func (t *httpTarget) CPU() (time.Duration, error) {
	if t.pid == 0 {
		return 0, errNoMemory
	}
	return processCPU(t.pid)
}

// processCPU returns utime+stime of a process.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it start at state (field 3); utime and stime are
	// fields 14 and 15.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// processRSS returns VmRSS of a process in bytes.
func processRSS(pid int) (int64, string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, "", err
			}
			return kb * 1024, "RSS of the server process", nil
		}
	}
	return 0, "", fmt.Errorf("no VmRSS for pid %d", pid)
}

// LiveHeap returns the server's live Go heap in bytes: it asks
// /debug/pprof/heap?gc=1, which runs a garbage collection before writing
// the profile, and then reads go_memstats_heap_alloc_bytes from /metrics,
// so the figure is the heap that survived that collection (plus what the
// two requests allocated since). It needs a server that serves both paths
// to the target's credentials (customapi's admin with --profiling, the
// default; kube-apiserver's system:masters); an error otherwise.
func (t *httpTarget) LiveHeap(ctx context.Context) (int64, error) {
	if _, err := t.getBody(ctx, "/debug/pprof/heap?gc=1"); err != nil {
		return 0, err
	}
	metrics, err := t.getBody(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(line, "go_memstats_heap_alloc_bytes "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return 0, fmt.Errorf("/metrics: go_memstats_heap_alloc_bytes: %w", err)
			}
			return int64(v), nil
		}
	}
	return 0, errors.New("/metrics has no go_memstats_heap_alloc_bytes")
}

// getBody GETs a path of the server and returns the body of a 200 answer.
func (t *httpTarget) getBody(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(body), nil
}
