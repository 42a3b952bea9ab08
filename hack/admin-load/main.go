// Command admin-load is the load generator of hack/admin-load.sh: it seeds
// a namespace with Custom objects, then for a bounded time runs concurrent
// LIST workers of them, optional watches and one writer, all as the user of
// --kubeconfig, and prints what the server answered (status codes, 429s
// with Retry-After) and the writer's latencies. It talks only to the server
// of the kubeconfig (loopback in the script) and stops by itself.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "admin-load:", err)
		os.Exit(1)
	}
}

type options struct {
	kubeconfig, profileKubeconfig, heapProfile string
	namespace                                  string
	objects, seedWorkers, lists, watches       int
	messageBytes                               int
	duration                                   time.Duration
	writer, waitForCount                       bool
}

func run() error {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the user that loads the server (required)")
	flag.StringVar(&o.profileKubeconfig, "profile-kubeconfig", "", "kubeconfig allowed /debug/pprof (and exempt from the limits), for --heap-profile")
	flag.StringVar(&o.heapProfile, "heap-profile", "", "write a heap profile of the server, taken halfway through the load, to this file")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace of the objects")
	flag.IntVar(&o.objects, "objects", 10000, "objects to seed (existing ones are kept)")
	flag.IntVar(&o.seedWorkers, "seed-workers", 16, "concurrent creates while seeding")
	flag.IntVar(&o.messageBytes, "message-bytes", 256, "size of each object's spec.message")
	flag.IntVar(&o.lists, "lists", 600, "concurrent LIST workers, each listing every object in a loop")
	flag.IntVar(&o.watches, "watches", 0, "concurrent watches of the namespace, from the current resourceVersion")
	flag.BoolVar(&o.writer, "writer", true, "run one writer that patches an object in a loop and measures its latency")
	flag.BoolVar(&o.waitForCount, "wait-for-count", true, "after seeding, wait (at most 2m) until the server's apiserver_storage_objects counts the objects: the count prices each LIST's in-flight seats, and the server refreshes it every --etcd-count-metric-poll-period")
	flag.DurationVar(&o.duration, "duration", time.Minute, "how long the load runs (at most 10m)")
	flag.Parse()
	if o.kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	if o.duration <= 0 || o.duration > 10*time.Minute || o.lists < 0 || o.lists > 2000 || o.watches < 0 || o.watches > 2000 || o.objects < 0 || o.objects > 100000 {
		return fmt.Errorf("bounds: 0 < --duration <= 10m, --lists and --watches <= 2000, --objects <= 100000")
	}
	ctx := context.Background()
	c, err := newClient(o.kubeconfig)
	if err != nil {
		return err
	}
	if err := seed(ctx, c, o); err != nil {
		return err
	}
	if o.waitForCount {
		if err := waitForCount(ctx, c, o); err != nil {
			return err
		}
	}
	return load(ctx, c, o)
}

// clientPool hands out clients, one per perClient callers, as separate
// programs (or informers) would have.
type clientPool struct {
	kubeconfig string
	perClient  int
	n          int
	cur        *client
}

func (p *clientPool) next() (*client, error) {
	if p.cur == nil || p.n == p.perClient {
		c, err := newClient(p.kubeconfig)
		if err != nil {
			return nil, err
		}
		p.cur, p.n = c, 0
	}
	p.n++
	return p.cur, nil
}

// client sends raw requests (no client-side retries) as one user.
type client struct {
	base string
	http *http.Client
}

// newClient returns a client of its own connections: client-go shares one
// transport (and so one HTTP/2 connection) between configs that are alike,
// unless they set Dial.
func newClient(kubeconfig string) (*client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	hc.Timeout = 0
	return &client{base: strings.TrimSuffix(cfg.Host, "/"), http: hc}, nil
}

func (c *client) do(ctx context.Context, method, path, contentType string, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return c.http.Do(req)
}

// drain reads and closes a response body, returning its size.
func drain(resp *http.Response) int64 {
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return n
}

func (o options) customs() string { return "/apis/test/v1/namespaces/" + o.namespace + "/customs" }

func customJSON(name string, messageBytes int) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": name, "labels": map[string]string{"load": "admin-load"}},
		"spec":     map[string]any{"message": strings.Repeat("x", messageBytes), "replicas": 1},
	})
	return b
}

// seed creates custom-00000 ... up to o.objects, skipping existing ones.
func seed(ctx context.Context, c *client, o options) error {
	start := time.Now()
	var next, created, exists atomic.Int64
	errs := make(chan error, o.seedWorkers)
	var wg sync.WaitGroup
	for range o.seedWorkers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(o.objects) {
					return
				}
				body := customJSON(fmt.Sprintf("custom-%05d", i), o.messageBytes)
				for attempt := 0; ; attempt++ {
					resp, err := c.do(ctx, http.MethodPost, o.customs(), "application/json", body)
					if err != nil {
						errs <- err
						return
					}
					drain(resp)
					switch {
					case resp.StatusCode == http.StatusCreated:
						created.Add(1)
					case resp.StatusCode == http.StatusConflict:
						exists.Add(1)
					case resp.StatusCode == http.StatusTooManyRequests && attempt < 20:
						time.Sleep(time.Second)
						continue
					default:
						errs <- fmt.Errorf("seed: create: %s", resp.Status)
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("seed: %d objects (%d created, %d existed) in %.1fs\n", o.objects, created.Load(), exists.Load(), time.Since(start).Seconds())
	return nil
}

// waitForCount polls the server's /metrics until its object count of the
// customs (apiserver_storage_objects{resource="customs.test"}) is at least
// o.objects, for at most two minutes. A server that has not reported the
// metric at all within 30 s (one that does not count) is not waited for.
func waitForCount(ctx context.Context, c *client, o options) error {
	start := time.Now()
	want := fmt.Sprintf("apiserver_storage_objects{resource=%q} ", "customs.test")
	for {
		resp, err := c.do(ctx, http.MethodGet, "/metrics", "", nil)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		counted := false
		for _, line := range strings.Split(string(body), "\n") {
			if n, ok := strings.CutPrefix(line, want); ok {
				counted = true
				if count, err := strconv.ParseFloat(strings.TrimSpace(n), 64); err == nil && count >= float64(o.objects) {
					fmt.Printf("count: the server counted %.0f objects %.1fs after the seed\n", count, time.Since(start).Seconds())
					return nil
				}
			}
		}
		if !counted && resp.StatusCode == http.StatusOK && time.Since(start) > 30*time.Second {
			fmt.Println("count: the server does not report apiserver_storage_objects for the customs; not waiting")
			return nil
		}
		if time.Since(start) > 2*time.Minute {
			return fmt.Errorf("the server's apiserver_storage_objects did not reach %d within 2m (HTTP %s)", o.objects, resp.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stats counts answers by status code.
type stats struct {
	mu         sync.Mutex
	codes      map[int]int
	retryAfter int // 429s that carried Retry-After
	errors     int
	latencies  []time.Duration // of successful requests
	bytes      int64
	samples    map[int]string // the first body of each error code
}

func newStats() *stats { return &stats{codes: map[int]int{}, samples: map[int]string{}} }

func (s *stats) add(code int, retryAfter bool, d time.Duration, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code]++
	if code == http.StatusTooManyRequests && retryAfter {
		s.retryAfter++
	}
	if code < 300 {
		s.latencies = append(s.latencies, d)
		s.bytes += n
	}
}

// sample keeps the first body answered with code.
func (s *stats) sample(code int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.samples[code]; !ok {
		s.samples[code] = body
	}
}

func (s *stats) fail() {
	s.mu.Lock()
	s.errors++
	s.mu.Unlock()
}

func (s *stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var codes []string
	keys := make([]int, 0, len(s.codes))
	for k := range s.codes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	total := 0
	for _, k := range keys {
		codes = append(codes, fmt.Sprintf("%d:%d", k, s.codes[k]))
		total += s.codes[k]
	}
	out := fmt.Sprintf("requests %d [%s] 429-with-Retry-After %d transport-errors %d latency %s", total, strings.Join(codes, " "), s.retryAfter, s.errors, percentiles(s.latencies))
	for _, k := range keys {
		if body, ok := s.samples[k]; ok {
			out += fmt.Sprintf("\n  first %d: %s", k, strings.TrimSpace(body))
		}
	}
	return out
}

func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	at := func(p float64) time.Duration {
		return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(time.Millisecond)
	}
	return fmt.Sprintf("p50 %s p99 %s max %s", at(0.50), at(0.99), ds[len(ds)-1].Round(time.Millisecond))
}

func load(ctx context.Context, c *client, o options) error {
	// The resourceVersion the watches start from.
	resp, err := c.do(ctx, http.MethodGet, o.customs()+"?limit=1", "", nil)
	if err != nil {
		return err
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	drain(resp)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list: %s %v", resp.Status, err)
	}
	// The writer's object.
	resp, err = c.do(ctx, http.MethodPost, o.customs(), "application/json", customJSON("writer-probe", 16))
	if err != nil {
		return err
	}
	drain(resp)

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var wg sync.WaitGroup
	var watchesOpen, watchesFailed, watchEvents atomic.Int64
	pool := &clientPool{kubeconfig: o.kubeconfig, perClient: 50}
	for range o.watches {
		c, err := pool.next()
		if err != nil {
			return err
		}
		wg.Go(func() {
			resp, err := c.do(ctx, http.MethodGet, o.customs()+"?watch=true&allowWatchBookmarks=true&resourceVersion="+list.Metadata.ResourceVersion, "", nil)
			if err != nil {
				if ctx.Err() == nil {
					watchesFailed.Add(1)
				}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				watchesFailed.Add(1)
				return
			}
			watchesOpen.Add(1)
			d := json.NewDecoder(resp.Body)
			for {
				var ev json.RawMessage
				if d.Decode(&ev) != nil {
					return
				}
				watchEvents.Add(1)
			}
		})
	}
	lists := newStats()
	for range o.lists {
		c, err := pool.next()
		if err != nil {
			return err
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				resp, err := c.do(ctx, http.MethodGet, o.customs(), "", nil)
				if err != nil {
					if ctx.Err() == nil {
						lists.fail()
					}
					continue
				}
				if resp.StatusCode >= 300 {
					msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
					lists.sample(resp.StatusCode, string(msg))
				}
				n := drain(resp)
				if ctx.Err() != nil {
					return // cut by the end of the load: not counted
				}
				lists.add(resp.StatusCode, resp.Header.Get("Retry-After") != "", time.Since(t0), n)
				if resp.StatusCode == http.StatusTooManyRequests {
					// As client-go does: wait Retry-After seconds.
					s, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
					select {
					case <-time.After(time.Duration(max(s, 1)) * time.Second):
					case <-ctx.Done():
					}
				}
			}
		})
	}
	writes := newStats()
	var longestGap time.Duration
	if o.writer {
		c, err := newClient(o.kubeconfig)
		if err != nil {
			return err
		}
		wg.Go(func() {
			last := time.Now()
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				body := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, i%1000)
				resp, err := c.do(ctx, http.MethodPatch, o.customs()+"/writer-probe", "application/merge-patch+json", body)
				if err != nil {
					if ctx.Err() == nil {
						writes.fail()
					}
					continue
				}
				if resp.StatusCode >= 300 {
					msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
					writes.sample(resp.StatusCode, string(msg))
				}
				drain(resp)
				writes.add(resp.StatusCode, resp.Header.Get("Retry-After") != "", time.Since(t0), 0)
				if resp.StatusCode == http.StatusOK {
					longestGap = max(longestGap, time.Since(last))
					last = time.Now()
				}
			}
			// A write still unanswered at the end counts too.
			longestGap = max(longestGap, time.Since(last))
		})
	}
	if o.heapProfile != "" && o.profileKubeconfig != "" {
		wg.Go(func() {
			select {
			case <-time.After(o.duration / 2):
			case <-ctx.Done():
				return
			}
			if err := heapProfile(o); err != nil {
				fmt.Fprintln(os.Stderr, "heap profile:", err)
			}
		})
	}
	wg.Wait()
	fmt.Printf("load: %d LIST workers, %d watches (%d open, %d failed, %d events), writer %v, %s\n", o.lists, o.watches, watchesOpen.Load(), watchesFailed.Load(), watchEvents.Load(), o.writer, o.duration)
	fmt.Printf("lists: %s\n", lists)
	if o.writer {
		fmt.Printf("writes: %s longest-gap-between-successful-writes %s\n", writes, longestGap.Round(time.Millisecond))
	}
	return nil
}

func heapProfile(o options) error {
	pc, err := newClient(o.profileKubeconfig)
	if err != nil {
		return err
	}
	resp, err := pc.do(context.Background(), http.MethodGet, "/debug/pprof/heap", "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	f, err := os.Create(o.heapProfile)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
