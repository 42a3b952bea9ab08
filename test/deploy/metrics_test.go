package deploy

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/pkg/customapitest"
)

// Paths of the Prometheus files, relative to the repository's root.
const (
	prometheusConfigPath = "deploy/prometheus/prometheus.yml"
	alertsPath           = "deploy/prometheus/alerts.yaml"
)

// syntheticMetrics are series Prometheus makes itself for each target,
// which no server serves.
var syntheticMetrics = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// selector is a metric a PromQL expression selects, with the job its
// label matchers name ("" for none).
type selector struct{ metric, job string }

// promqlNotMetrics are the identifiers of PromQL that select nothing:
// binary and set operators, modifiers and aggregation operators (which
// may be followed by by/without before their parenthesis).
var promqlNotMetrics = []string{
	"and", "or", "unless", "bool", "offset", "inf", "nan", "atan2",
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio",
}

// promqlGroupings are the keywords followed by a parenthesised label list.
var promqlGroupings = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// jobMatcher finds job="NAME" among a selector's label matchers.
var jobMatcher = regexp.MustCompile(`(?:^|[{,\s])job\s*=\s*"([^"]*)"`)

// metricSelectors returns the metrics selected in a PromQL expression: the
// identifiers that are not functions (followed by a parenthesis), keywords,
// label names, strings, numbers or durations. It knows PromQL well enough
// for the rules of this repository; a construct it does not know fails
// rather than passing unnoticed.
func metricSelectors(expr string) ([]selector, error) {
	var out []selector
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	nextNonSpace := func(i int) int {
		for i < len(expr) && strings.ContainsRune(" \t\n\r", rune(expr[i])) {
			i++
		}
		return i
	}
	// closing returns the index after the closer matching expr[i].
	closing := func(i int, closer byte) (int, error) {
		for j := i + 1; j < len(expr); j++ {
			switch expr[j] {
			case '"', '\'', '`':
				k := strings.IndexByte(expr[j+1:], expr[j])
				if k < 0 {
					return 0, fmt.Errorf("unterminated string at %d", j)
				}
				j += k + 1
			case closer:
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("no %q after %d", closer, i)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			k := strings.IndexByte(expr[i+1:], c)
			if k < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			i += k + 2
		case c == '[':
			end, err := closing(i, ']')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{':
			return nil, fmt.Errorf("a selector without a metric name at %d", i)
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := nextNonSpace(i)
			switch {
			case slices.Contains(promqlGroupings, word):
				if next >= len(expr) || expr[next] != '(' {
					return nil, fmt.Errorf("%s without a label list at %d", word, start)
				}
				end, err := closing(next, ')')
				if err != nil {
					return nil, err
				}
				i = end
			case slices.Contains(promqlNotMetrics, word):
			case next < len(expr) && expr[next] == '(':
				// a function call
			case next < len(expr) && expr[next] == '{':
				end, err := closing(next, '}')
				if err != nil {
					return nil, err
				}
				job := ""
				if m := jobMatcher.FindStringSubmatch(expr[next:end]); m != nil {
					job = m[1]
				}
				out = append(out, selector{word, job})
				i = end
			default:
				out = append(out, selector{word, ""})
			}
		default:
			i++
		}
	}
	return out, nil
}

func TestMetricSelectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []selector
	}{
		{`up{job="customapi"} == 0`, []selector{{"up", "customapi"}}},
		{`kubernetes_healthcheck{job="customapi-slis", type="readyz"} == 0`, []selector{{"kubernetes_healthcheck", "customapi-slis"}}},
		{`histogram_quantile(0.99, sum by (instance, le) (rate(x_bucket{job="j", verb!~"WATCH|LIST"}[5m]))) > 0.5`, []selector{{"x_bucket", "j"}}},
		{"a / b{job=\"j\"} > 0.8 and on (instance) c < 7 * 24 * 3600", []selector{{"a", ""}, {"b", "j"}, {"c", ""}}},
		{`increase(m{job="j", label="by (x)"}[15m]) > 3 unless ignoring(le) n offset 5m`, []selector{{"m", "j"}, {"n", ""}}},
		{`count without (code) (rate(requests_total[1h:5m]))`, []selector{{"requests_total", ""}}},
	} {
		got, err := metricSelectors(tc.expr)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("metricSelectors(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{__name__="up"}`, `sum by instance (x)`, `x{job="j"`} {
		if got, err := metricSelectors(bad); err == nil {
			t.Errorf("metricSelectors(%q) = %v, want an error", bad, got)
		}
	}
}

// scrapeConfig is what the tests read of deploy/prometheus/prometheus.yml.
type scrapeConfig struct {
	ScrapeConfigs []struct {
		JobName     string `json:"job_name"`
		Scheme      string `json:"scheme"`
		MetricsPath string `json:"metrics_path"`
	} `json:"scrape_configs"`
}

// ruleFile is what the tests read of deploy/prometheus/alerts.yaml.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert string `json:"alert"`
			Expr  string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// readYAML decodes the repository's YAML file at path into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Every metric an alert uses is served by a running server, on the path
// that the alert's job scrapes (prometheus.yml), to the monitoring user the
// page has Prometheus use; that user may read the metrics and nothing else.
// The server first serves what makes the metrics appear: writes, lists
// from the watch cache, a request with a client certificate, a /readyz
// probe.
func TestAlertMetricsAreServed(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	kubeconfig, _, _ := monitoringCert(t)

	var cfg scrapeConfig
	readYAML(t, prometheusConfigPath, &cfg)
	paths := map[string]string{} // job -> metrics path
	for _, sc := range cfg.ScrapeConfigs {
		if sc.Scheme != "https" {
			t.Errorf("%s: job %s scrapes %q, want https", prometheusConfigPath, sc.JobName, sc.Scheme)
		}
		paths[sc.JobName] = sc.MetricsPath
	}
	var rules ruleFile
	readYAML(t, alertsPath, &rules)
	want := map[string][]string{} // metrics path -> metric names
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			sels, err := metricSelectors(r.Expr)
			if err != nil || len(sels) == 0 {
				t.Fatalf("%s: alert %s: selectors %v, %v", alertsPath, r.Alert, sels, err)
			}
			for _, s := range sels {
				path, ok := paths[s.job]
				if !ok {
					t.Errorf("%s: alert %s selects %s of job %q, which %s does not scrape (every selector names its job)", alertsPath, r.Alert, s.metric, s.job, prometheusConfigPath)
					continue
				}
				if !slices.Contains(syntheticMetrics, s.metric) && !slices.Contains(want[path], s.metric) {
					want[path] = append(want[path], s.metric)
				}
			}
		}
	}
	t.Logf("%d alerts use %d metrics", alerts, len(want["/metrics"])+len(want["/metrics/slis"]))

	// What makes the metrics appear.
	createObjects(t, "metrics")
	admin, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := admin.CoreV1().ConfigMaps("metrics").List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	monCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	mon, err := rest.HTTPClientFor(monCfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		return customapitest.Get(t, mon, srv.URL+path)
	}
	// A /readyz request records each check's result for /metrics/slis.
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz as the monitoring user: %d %s", code, body)
	}
	if code, _ := get("/api/v1/namespaces/metrics/configmaps"); code != http.StatusForbidden {
		t.Errorf("config maps as the monitoring user: %d, want 403", code)
	}

	for path, names := range want {
		code, body := get(path)
		if code != http.StatusOK {
			t.Fatalf("%s as the monitoring user: %d\n%s", path, code, body)
		}
		served := sampleNames(body)
		for _, name := range names {
			if !served[name] {
				t.Errorf("%s uses %s, which %s of a running server does not serve", alertsPath, name, path)
			}
		}
	}
}

// sampleNames returns the metric names of the samples of a Prometheus text
// exposition.
func sampleNames(exposition string) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(exposition))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}
