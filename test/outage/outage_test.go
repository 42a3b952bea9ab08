package outage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/logfilter"
	"github.com/customapi/customapi/pkg/options"
)

// watchErrors counts the "watch chan error" lines that reach the log, after
// the same RepeatLimiter `customapi serve` installs.
var watchErrors = &lineCounter{out: os.Stderr, match: "watch chan error"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "customapi-outage-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if etcdBinary, err = buildEtcd(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The log set-up of `customapi serve` (cmd/customapi/serve.go).
	streams := &logsapi.LoggingOptions{
		ErrorStream: logfilter.NewRepeatLimiter(watchErrors, logfilter.DefaultInterval, logfilter.DefaultBurst),
		InfoStream:  os.Stdout,
	}
	if err := logsapi.ValidateAndApplyWithOptions(logs.NewOptions(), streams, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// lineCounter passes log entries on and records when those containing
// match were written.
type lineCounter struct {
	out   io.Writer
	match string
	mu    sync.Mutex
	times []time.Time
}

func (c *lineCounter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.match)) {
		c.mu.Lock()
		c.times = append(c.times, time.Now())
		c.mu.Unlock()
	}
	return c.out.Write(p)
}

// between counts the matching lines written in [from, to).
func (c *lineCounter) between(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.times {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// attempt is one HTTP request and its outcome.
type attempt struct {
	start, end time.Time
	code       int
	reason     string
	message    string
	name, uid  string
	err        error // transport error
}

func (a attempt) took() time.Duration { return a.end.Sub(a.start) }

// answer is the part of an object or a Status the test reads.
type answer struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"metadata"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func do(ctx context.Context, c *http.Client, method, url string, body []byte) attempt {
	a := attempt{start: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		a.err = err
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		a.end, a.err = time.Now(), err
		return a
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	a.end, a.code, a.err = time.Now(), resp.StatusCode, err
	var ans answer
	if json.Unmarshal(data, &ans) == nil {
		a.reason, a.message = ans.Reason, ans.Message
		if ans.Kind == "Status" {
			ans.Metadata.Name, ans.Metadata.UID = "", ""
		}
		a.uid = ans.Metadata.UID
	}
	return a
}

func create(ctx context.Context, s *customapitest.Server, name string) attempt {
	body := fmt.Sprintf(`{"apiVersion":"test/v1","kind":"Custom","metadata":{"name":%q},"spec":{"message":"outage"}}`, name)
	a := do(ctx, s.HTTPClient, http.MethodPost, s.URL+"/apis/test/v1/namespaces/default/customs", []byte(body))
	a.name = name
	return a
}

// unavailable says whether a is the Status a request gets while etcd is
// unavailable: 503 ServiceUnavailable or 504 Timeout naming etcd.
func unavailable(a attempt) bool {
	return a.err == nil && strings.Contains(a.message, "etcd is unavailable") &&
		(a.code == http.StatusServiceUnavailable && a.reason == "ServiceUnavailable" ||
			a.code == http.StatusGatewayTimeout && a.reason == "Timeout")
}

// Under a create load, two of three etcd members are killed (the leader
// among them) for outageDuration, then restarted. Asserted: every create
// that fails, fails with 503/504 naming etcd within 10 s
// of the request; /readyz fails; consistent reads fail within 10 s while
// the watch cache keeps answering resourceVersion=0 lists; a create
// succeeds within 2 s of quorum returning; the etcd watch errors reach the
// log at most a few times a second; no acknowledged create is lost.
func TestQuorumLoss(t *testing.T) {
	const (
		writers        = 6
		outageDuration = 20 * time.Second // two rounds of 7-8 s failures
		failWithin     = 10 * time.Second
		recoverWithin  = 2 * time.Second
	)
	ctx := t.Context()
	c := startCluster(t)
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Storage.Etcd.Servers = c.endpoints()
		o.Storage.Prefix = "/registry"
	}, install.Customs)

	var (
		mu       sync.Mutex
		attempts []attempt
		acked    atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a := create(ctx, s, fmt.Sprintf("w%d-%d", w, i))
				if a.code == http.StatusCreated {
					acked.Add(1)
				}
				mu.Lock()
				attempts = append(attempts, a)
				mu.Unlock()
			}
		})
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopWriters)
	customapitest.Eventually(t, 30*time.Second, "30 acknowledged creates", func(context.Context) (bool, error) { return acked.Load() >= 30, nil })

	killed, tKill := loseQuorum(t, c)

	// /readyz goes red.
	var readyzRed time.Duration
	customapitest.Eventually(t, 10*time.Second, "/readyz to fail", func(context.Context) (bool, error) {
		a := do(ctx, s.HTTPClient, http.MethodGet, s.URL+"/readyz", nil)
		if a.err == nil && a.code != http.StatusOK {
			readyzRed = time.Since(tKill)
			return true, nil
		}
		return false, nil
	})

	// Reads while quorum is lost: the watch cache answers
	// resourceVersion=0; consistent reads fail fast.
	list := s.URL + "/apis/test/v1/namespaces/default/customs"
	waitReads := startReads(ctx, s, map[string]string{
		"LIST resourceVersion=0 (watch cache)": list + "?resourceVersion=0",
		"LIST resourceVersion= (consistent)":   list,
		"GET (from etcd)":                      list + "/w0-0",
	})
	sleepUntil(t, tKill.Add(outageDuration))
	readResults := waitReads()
	tOutageLogEnd := time.Now()
	tRestart, tQuorum := regainQuorum(t, c, killed)
	// A new create after quorum returns.
	var firstOK attempt
	customapitest.Eventually(t, 30*time.Second, "a create to succeed after recovery", func(context.Context) (bool, error) {
		firstOK = create(ctx, s, fmt.Sprintf("probe-%d", time.Now().UnixNano()))
		return firstOK.code == http.StatusCreated, nil
	})
	recovery := firstOK.end.Sub(tQuorum)
	customapitest.Eventually(t, 30*time.Second, "/readyz to pass again", func(context.Context) (bool, error) {
		a := do(ctx, s.HTTPClient, http.MethodGet, s.URL+"/readyz", nil)
		return a.err == nil && a.code == http.StatusOK, nil
	})
	stopWriters()

	checkOutageReads(t, readResults, failWithin)

	// Writes: every failure is 503/504 within 10 s; none started after the
	// kill and ended before quorum returned succeeded.
	var outageFails, inflightFails []time.Duration
	var ackedNames = map[string]string{firstOK.name: firstOK.uid}
	var during, failed, ambiguous int
	var failedNames []string
	for _, a := range attempts {
		if a.code == http.StatusCreated {
			ackedNames[a.name] = a.uid
			continue
		}
		failed++
		failedNames = append(failedNames, a.name)
		if !unavailable(a) || !strings.Contains(a.message, "may or may not have been applied") || a.took() > failWithin {
			t.Errorf("create %s: %d %s %q (err %v) after %v, want 503/504 naming etcd within %v",
				a.name, a.code, a.reason, a.message, a.err, a.took(), failWithin)
		}
		if a.start.Before(tKill) {
			inflightFails = append(inflightFails, a.took())
		} else {
			outageFails = append(outageFails, a.took())
		}
	}
	for _, a := range attempts {
		if !a.start.Before(tKill) && a.end.Before(tRestart) {
			during++
			if a.code == http.StatusCreated {
				t.Errorf("create %s succeeded while quorum was lost (%v - %v)", a.name, a.start, a.end)
			}
		}
	}
	if during < writers {
		t.Errorf("only %d creates were attempted and answered during the outage", during)
	}
	if recovery > recoverWithin {
		t.Errorf("the first create after quorum returned succeeded %v after it, want within %v", recovery, recoverWithin)
	}

	// No acknowledged create is lost: read etcd itself.
	stored := storedUIDs(t, c, "/registry/test/customs/default/")
	lost := checkAcknowledged(t, ackedNames, stored)
	for _, name := range failedNames {
		if _, ok := stored[name]; ok {
			ambiguous++
		}
	}

	// The etcd watch errors are rate limited in the log.
	outageSeconds := tOutageLogEnd.Sub(tKill).Seconds()
	logLines := watchErrors.between(tKill, tOutageLogEnd)
	if rate := float64(logLines) / outageSeconds; rate > 5 {
		t.Errorf("%d 'watch chan error' log lines in %.1fs (%.1f/s), want at most a few a second", logLines, outageSeconds, rate)
	}

	t.Logf("outage: %d creates started and answered while no member was back; failed creates started after the kill: %s; in flight at the kill: %s",
		during, distribution(outageFails), distribution(inflightFails))
	t.Logf("/readyz red %v after the kill", readyzRed.Round(time.Millisecond))
	t.Logf("recovery: quorum %v after the restart; first create acknowledged %v after quorum (%v after the restart)",
		tQuorum.Sub(tRestart).Round(time.Millisecond), recovery.Round(time.Millisecond), firstOK.end.Sub(tRestart).Round(time.Millisecond))
	t.Logf("writes: %d attempted, %d acknowledged, %d lost; %d failed, of which %d were committed anyway (ambiguous 504s)",
		len(attempts)+1, len(ackedNames), lost, failed, ambiguous)
	t.Logf("log: %d 'watch chan error' lines in %.1fs of outage", logLines, outageSeconds)
}

// startReads sends a GET of each url (by name) at once, in the background;
// the function returned waits for their answers.
func startReads(ctx context.Context, s *customapitest.Server, urls map[string]string) (wait func() map[string]attempt) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		results = map[string]attempt{}
	)
	for name, url := range urls {
		wg.Go(func() {
			a := do(ctx, s.HTTPClient, http.MethodGet, url, nil)
			mu.Lock()
			results[name] = a
			mu.Unlock()
		})
	}
	return func() map[string]attempt {
		wg.Wait()
		return results
	}
}

// sleepUntil returns at deadline, or fails the test if it ends first.
func sleepUntil(t *testing.T, deadline time.Time) {
	t.Helper()
	select {
	case <-time.After(time.Until(deadline)):
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
}

// loseQuorum kills the leader and one follower with SIGKILL and returns
// them and when.
func loseQuorum(t *testing.T, c *cluster) ([]*member, time.Time) {
	t.Helper()
	leader, err := c.leader(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	killed := []*member{c.members[leader], c.members[(leader+1)%3]}
	for _, m := range killed {
		m.kill()
	}
	t.Logf("killed %s (leader) and %s with SIGKILL", killed[0].name, killed[1].name)
	return killed, time.Now()
}

// regainQuorum restarts the killed members and returns when, and when the
// cluster served a linearizable read again.
func regainQuorum(t *testing.T, c *cluster, killed []*member) (tRestart, tQuorum time.Time) {
	t.Helper()
	for _, m := range killed {
		m.start(t)
	}
	tRestart = time.Now()
	tQuorum, ok := c.waitQuorum(t.Context(), 30*time.Second)
	if !ok {
		t.Fatal("etcd did not regain quorum within 30s of the restart")
	}
	return tRestart, tQuorum
}

// checkOutageReads checks reads made while quorum was lost, by name: a
// name saying "watch cache" wants 200, any other 503/504 naming etcd
// within failWithin.
func checkOutageReads(t *testing.T, reads map[string]attempt, failWithin time.Duration) {
	t.Helper()
	for name, a := range reads {
		t.Logf("%s during the outage: %d %s after %v", name, a.code, a.reason, a.took().Round(time.Millisecond))
		if strings.Contains(name, "watch cache") {
			if a.code != http.StatusOK {
				t.Errorf("%s: %d %s %q, want 200 from the watch cache", name, a.code, a.reason, a.message)
			}
			continue
		}
		if !unavailable(a) || a.took() > failWithin {
			t.Errorf("%s: %d %s %q after %v, want 503/504 naming etcd within %v", name, a.code, a.reason, a.message, a.took(), failWithin)
		}
	}
}

// storedUIDs reads the objects under an etcd key prefix (JSON) and returns
// their uids by name.
func storedUIDs(t *testing.T, c *cluster, prefix string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for _, kv := range resp.Kvs {
		var ans answer
		if err := json.Unmarshal(kv.Value, &ans); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		stored[ans.Metadata.Name] = ans.Metadata.UID
	}
	return stored
}

// checkAcknowledged fails the test for each acknowledged create (uid by
// name) that is not stored, and returns how many are not.
func checkAcknowledged(t *testing.T, acked, stored map[string]string) (lost int) {
	t.Helper()
	for name, uid := range acked {
		if stored[name] != uid {
			lost++
			t.Errorf("acknowledged create %s (uid %s) is not in etcd (found uid %q)", name, uid, stored[name])
		}
	}
	return lost
}

// distribution summarizes durations as count, p50 and max.
func distribution(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	slices.Sort(d)
	return fmt.Sprintf("%d, time to fail p50 %v, max %v", len(d), d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
}
