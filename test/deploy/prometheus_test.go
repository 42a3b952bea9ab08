package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
)

// prometheusProvider is what provides promtool and prometheus.
const prometheusProvider = "Debian: apt-get install prometheus"

// prometheusDir lays out what the configuration refers to under
// /etc/prometheus/ in a temporary directory: the rules, and the CA, the
// client certificate and key of the shared server's monitoring user in
// customapi/. It returns the directory and the configuration rewritten to
// it, with the targets, intervals and the paths given as extra pairs.
func prometheusDir(t *testing.T, pairs ...string) (dir, config string) {
	t.Helper()
	srv := sharedServer(t)
	_, certFile, keyFile := monitoringCert(t)
	dir = t.TempDir()
	sub := filepath.Join(dir, "customapi")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{
		filepath.Join(srv.DataDir, "ca.crt"): "ca.crt",
		certFile:                             "prometheus.crt",
		keyFile:                              "prometheus.key",
	} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, dst), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rules := rewritten(t, dir, alertsPath)
	if err := os.Rename(rules, filepath.Join(dir, "customapi-alerts.yaml")); err != nil {
		t.Fatal(err)
	}
	config = rewritten(t, dir, prometheusConfigPath, append([]string{"/etc/prometheus/", dir + "/"}, pairs...)...)
	return dir, config
}

// promtool checks the configuration (with its rule file and TLS files)
// and the rules, and runs the rule tests of testdata/alerts_test.yaml.
func TestPromtool(t *testing.T) {
	t.Parallel()
	promtool := tool(t, "promtool", prometheusProvider)
	_, config := prometheusDir(t)
	for _, args := range [][]string{
		{"check", "config", config},
		{"check", "rules", filepath.Join(repoRoot, alertsPath)},
		{"test", "rules", filepath.Join("testdata", "alerts_test.yaml")},
	} {
		res := binarytest.Run(t, binarytest.RunOptions{}, promtool, args...)
		if res.ExitCode != 0 {
			t.Errorf("promtool %s: %s", strings.Join(args, " "), res)
		}
	}
}

// Prometheus run with the configuration scrapes both jobs of the shared
// server with the monitoring user's certificate, and evaluates every rule
// without an error.
func TestPrometheusScrapes(t *testing.T) {
	t.Parallel()
	prometheus := tool(t, "prometheus", prometheusProvider)
	srv := sharedServer(t)
	target := strings.TrimPrefix(srv.URL, "https://")
	dir, config := prometheusDir(t,
		"[10.0.0.1:6443, 10.0.0.2:6443, 10.0.0.3:6443]", "["+target+"]",
		"scrape_interval: 15s", "scrape_interval: 1s",
		"evaluation_interval: 15s", "evaluation_interval: 1s")
	port := customapitest.FreePorts(t, 1)[0]
	startTool(t, prometheus, "--config.file", config, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", "127.0.0.1:"+strconv.Itoa(port), "--log.level", "warn")
	api := fmt.Sprintf("http://127.0.0.1:%d/api/v1/", port)

	var targets struct {
		Data struct {
			ActiveTargets []struct {
				Labels    map[string]string `json:"labels"`
				Health    string            `json:"health"`
				LastError string            `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	customapitest.Eventually(t, 60*time.Second, "prometheus scrapes both jobs", func(ctx context.Context) (bool, error) {
		if err := getJSON(ctx, api+"targets", &targets); err != nil {
			return false, err
		}
		up := map[string]bool{}
		for _, tg := range targets.Data.ActiveTargets {
			if tg.Health != "up" {
				return false, fmt.Errorf("job %s: %s %s", tg.Labels["job"], tg.Health, tg.LastError)
			}
			up[tg.Labels["job"]] = true
		}
		return up["customapi"] && up["customapi-slis"], fmt.Errorf("targets up: %v", up)
	})

	var rules struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name           string    `json:"name"`
					Health         string    `json:"health"`
					LastError      string    `json:"lastError"`
					LastEvaluation time.Time `json:"lastEvaluation"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	customapitest.Eventually(t, 60*time.Second, "prometheus evaluates every rule", func(ctx context.Context) (bool, error) {
		if err := getJSON(ctx, api+"rules", &rules); err != nil {
			return false, err
		}
		n := 0
		for _, g := range rules.Data.Groups {
			for _, r := range g.Rules {
				if r.Health == "err" {
					t.Fatalf("rule %s: %s", r.Name, r.LastError)
				}
				if r.Health != "ok" || r.LastEvaluation.IsZero() {
					return false, fmt.Errorf("rule %s: %q, last evaluated %s", r.Name, r.Health, r.LastEvaluation)
				}
				n++
			}
		}
		return n > 0, fmt.Errorf("%d rules", n)
	})

	// The embedded etcd's metrics arrive with their values. (A target is
	// reported up a moment before its samples can be queried: wait.)
	query := api + "query?query=" + url.QueryEscape(`etcd_server_has_leader{job="customapi"}`)
	customapitest.Eventually(t, 30*time.Second, "prometheus has etcd_server_has_leader 1", func(ctx context.Context) (bool, error) {
		var result struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := getJSON(ctx, query, &result); err != nil {
			return false, err
		}
		return len(result.Data.Result) == 1 && result.Data.Result[0].Value[1] == "1", fmt.Errorf("result %+v", result.Data.Result)
	})
}

// getJSON decodes the JSON answer of a GET of u into v.
func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
