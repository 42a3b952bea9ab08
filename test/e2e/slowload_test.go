package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
)

// throttledProxy forwards TCP connections to an etcd, delivering what etcd
// sends at bytesPerSecond per connection while throttled: a store whose
// watch cache takes as long to load as the test wants, without a large
// store.
type throttledProxy struct {
	addr      string
	throttled atomic.Bool
	rate      int // bytes per second per connection, while throttled
	l         net.Listener
	wg        sync.WaitGroup
	mu        sync.Mutex
	conns     []net.Conn
}

// startThrottledProxy listens on a free loopback port and forwards to
// target (host:port), throttled from the start.
func startThrottledProxy(t *testing.T, target string, bytesPerSecond int) *throttledProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &throttledProxy{addr: l.Addr().String(), rate: bytesPerSecond, l: l}
	p.throttled.Store(true)
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			p.wg.Go(func() { p.copyThrottled(c, up); _ = c.Close() })
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// copyThrottled copies src to dst in 1 KiB pieces, each followed by the
// pause that keeps the connection at p.rate while throttled.
func (p *throttledProxy) copyThrottled(dst io.Writer, src io.Reader) {
	buf := make([]byte, 1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if p.throttled.Load() {
				time.Sleep(time.Duration(n) * time.Second / time.Duration(p.rate))
			}
		}
		if err != nil {
			return
		}
	}
}

// loadingLine is the watch-caches check's reason for customs in
// /readyz?verbose.
var loadingLine = regexp.MustCompile(`\[-\]watch-caches failed: .*customs\.test: watch cache loading, (\d+) of (\d+) objects read from etcd`)

// TestStartSlowWatchCache: a restart on a store whose watch cache takes
// longer to load than any deadline picked in advance (etcd's answers
// throttled to a trickle, for as long as the test likes) is not cut short:
// serve listens meanwhile, /readyz is red, /readyz?verbose tells the admin
// how many objects of how many it has read so far, the log reports the
// load every
// ten seconds, a watch is refused with 429 and Retry-After, and once etcd's
// answers flow again the server becomes ready with every object.
func TestStartSlowWatchCache(t *testing.T) {
	t.Parallel()
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: filepath.Join(t.TempDir(), "etcd"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ec := e.ClientConfig()
	tlsArgs := []string{"--etcd-cafile", ec.CAFile, "--etcd-certfile", ec.CertFile, "--etcd-keyfile", ec.KeyFile}

	const objects = 300
	dataDir := t.TempDir()
	fill := startServer(t, dataDir, append([]string{"--etcd-servers", strings.Join(ec.Endpoints, ",")}, tlsArgs...)...)
	createCustoms(t, fill, "default", "slow", 0, objects, map[string]types.UID{})
	fill.Stop(t)

	target := strings.TrimPrefix(ec.Endpoints[0], "https://")
	proxy := startThrottledProxy(t, target, 16<<10)
	if err := os.Remove(kubeconfigOf(dataDir)); err != nil {
		t.Fatal(err)
	}
	p := startRaw(t, dataDir, append([]string{"--secure-port", "0", "--etcd-servers", "https://" + proxy.addr}, tlsArgs...)...)

	var hc, anonymous *http.Client
	var base string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's stdout:\n%s\nstderr:\n%s", binarytest.Tail(p.Stdout(), 40), binarytest.Tail(p.Stderr(), 40))
		}
	})
	customapitest.Eventually(t, time.Minute, "serve writes its kubeconfig", func(context.Context) (bool, error) {
		if _, err := os.Stat(kubeconfigOf(dataDir)); err != nil {
			return false, err
		}
		cfg := restConfigFrom(t, kubeconfigOf(dataDir))
		hc, base = httpClientFor(t, cfg), strings.TrimSuffix(cfg.Host, "/")
		anonymous = httpClientFor(t, rest.AnonymousClientConfig(cfg))
		return true, nil
	})
	// The progress as the admin sees it: two reads, the second further.
	progress := func(ctx context.Context) (int, error) {
		r := do(t, hc, http.MethodGet, base+"/readyz?verbose", "", nil)
		m := loadingLine.FindStringSubmatch(string(r.Body))
		if r.Code == http.StatusOK || m == nil {
			return 0, fmt.Errorf("HTTP %d: %s", r.Code, r.Body)
		}
		if total, _ := strconv.Atoi(m[2]); total != objects {
			t.Errorf("/readyz?verbose counts %d customs in etcd, want %d: %s", total, objects, m[0])
		}
		n, _ := strconv.Atoi(m[1])
		return n, nil
	}
	first := -1
	customapitest.Eventually(t, 2*time.Minute, "/readyz?verbose shows customs loading", func(ctx context.Context) (bool, error) {
		n, err := progress(ctx)
		if err == nil {
			first = n
		}
		return err == nil, err
	})
	customapitest.Eventually(t, 2*time.Minute, "the progress advances", func(ctx context.Context) (bool, error) {
		n, err := progress(ctx)
		return err == nil && n > first && n < objects, err
	})
	// Every client may read each check's own path here (the probes
	// authorizer), so anonymous probes get the reason too.
	if r := do(t, anonymous, http.MethodGet, base+"/readyz?verbose", "", nil); r.Code == http.StatusOK || !loadingLine.Match(r.Body) {
		t.Errorf("anonymous /readyz?verbose: HTTP %d %q, want 500 with the progress", r.Code, r.Body)
	}

	// Meanwhile a watch is refused with 429 and a Retry-After (client-go
	// waits and retries).
	ctx, cancel := context.WithTimeout(t.Context(), httpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/apis/test/v1/namespaces/default/customs?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a watch of customs while their cache loads: HTTP %d, Retry-After %q; want 429 with a Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	customapitest.Eventually(t, 2*time.Minute, "the log reports the load", func(context.Context) (bool, error) {
		return strings.Contains(p.Stdout()+p.Stderr(), `"Watch cache still loading" resource="customs.test"`), nil
	})
	proxy.throttled.Store(false)
	customapitest.Eventually(t, 2*time.Minute, "/readyz green once etcd's answers flow", func(context.Context) (bool, error) {
		r := do(t, hc, http.MethodGet, base+"/readyz?verbose", "", nil)
		return r.Code == http.StatusOK, errors.New(string(r.Body))
	})
	dc, err := dynamic.NewForConfig(restConfigFrom(t, kubeconfigOf(dataDir)))
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.Resource(customsResource).Namespace("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != objects {
		t.Errorf("listed %d customs after the load, want %d", len(list.Items), objects)
	}
}
