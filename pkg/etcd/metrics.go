package etcd

import (
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// ServerMetricPrefixes are the name prefixes of the embedded etcd server's
// own metrics that a program serving k8s.io/component-base's registry
// (legacyregistry, what /metrics of k8s.io/apiserver serves) shows once
// RegisterServerMetrics was called: etcd_server_* (etcd_server_has_leader,
// etcd_server_leader_changes_seen_total, etcd_server_quota_backend_bytes,
// etcd_server_proposals_failed_total, ...), etcd_mvcc_db_*
// (etcd_mvcc_db_total_size_in_bytes, etcd_mvcc_db_total_size_in_use_in_bytes),
// etcd_disk_* (WAL fsync and backend commit durations) and etcd_network_*
// (peer round trips and failures, in a cluster of servers). They are etcd's
// names and meanings, so etcd's own alerts and dashboards apply. etcd
// registers them in client_golang's default registry, which a
// k8s.io/apiserver server does not serve.
var ServerMetricPrefixes = []string{"etcd_server_", "etcd_mvcc_db_", "etcd_disk_", "etcd_network_"}

var registerServerMetrics sync.Once

// RegisterServerMetrics makes legacyregistry serve the metrics of the
// embedded etcd server whose names start with one of ServerMetricPrefixes,
// read from client_golang's default registry at each scrape. Only the
// first call registers; StartEmbedded calls it. The values are those of
// the etcd server of this process (etcd keeps them per process); in a
// process without one they are etcd's initial values.
func RegisterServerMetrics() {
	registerServerMetrics.Do(func() {
		legacyregistry.Registerer().MustRegister(serverMetrics{from: prometheus.DefaultGatherer, prefixes: ServerMetricPrefixes})
	})
}

// serverMetrics is an unchecked prometheus.Collector (it describes no
// metric in advance) that copies the families of from whose names start
// with one of prefixes.
type serverMetrics struct {
	from     prometheus.Gatherer
	prefixes []string
}

// Describe sends nothing: the families are known only when gathered.
func (serverMetrics) Describe(chan<- *prometheus.Desc) {}

// Collect gathers from and sends a copy of each metric of the selected
// families: counters, gauges, untyped values and histograms (etcd has no
// others among them).
func (c serverMetrics) Collect(ch chan<- prometheus.Metric) {
	families, err := c.from.Gather()
	if err != nil {
		// Gather returns what it could along with the error.
		klog.V(2).InfoS("Gathering the embedded etcd's metrics", "err", err)
	}
	for _, f := range families {
		if !c.selected(f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			if metric, err := copyMetric(f, m); err == nil {
				ch <- metric
			} else {
				klog.V(2).InfoS("Copying an embedded etcd metric", "name", f.GetName(), "err", err)
			}
		}
	}
}

// selected says whether a family named name is copied.
func (c serverMetrics) selected(name string) bool {
	for _, p := range c.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// copyMetric returns m of the family f as a constant metric; an error for
// a type it does not copy (summaries).
func copyMetric(f *dto.MetricFamily, m *dto.Metric) (prometheus.Metric, error) {
	names := make([]string, len(m.GetLabel()))
	values := make([]string, len(m.GetLabel()))
	for i, l := range m.GetLabel() {
		names[i], values[i] = l.GetName(), l.GetValue()
	}
	desc := prometheus.NewDesc(f.GetName(), f.GetHelp(), names, nil)
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return prometheus.NewConstMetric(desc, prometheus.CounterValue, m.GetCounter().GetValue(), values...)
	case dto.MetricType_GAUGE:
		return prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.GetGauge().GetValue(), values...)
	case dto.MetricType_UNTYPED:
		return prometheus.NewConstMetric(desc, prometheus.UntypedValue, m.GetUntyped().GetValue(), values...)
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		buckets := make(map[float64]uint64, len(h.GetBucket()))
		for _, b := range h.GetBucket() {
			buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		return prometheus.NewConstHistogram(desc, h.GetSampleCount(), h.GetSampleSum(), buckets, values...)
	default:
		return nil, fmt.Errorf("metric type %s is not copied", f.GetType())
	}
}
