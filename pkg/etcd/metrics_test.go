package etcd_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/customapi/customapi/pkg/etcd"
)

// A started embedded etcd's own metrics are in k8s.io/component-base's
// registry, with etcd's values: a leader, its quota, its database size.
func TestServerMetrics(t *testing.T) {
	const quota = 64 << 20
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true, LogLevel: "error", QuotaBackendBytes: quota})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	value := func(name string) float64 {
		t.Helper()
		f := byName[name]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Fatalf("%s: want one series in legacyregistry, got %v", name, f)
		}
		m := f.GetMetric()[0]
		switch f.GetType() {
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		}
		t.Fatalf("%s: type %s", name, f.GetType())
		return 0
	}
	if v := value("etcd_server_has_leader"); v != 1 {
		t.Errorf("etcd_server_has_leader = %v, want 1", v)
	}
	if v := value("etcd_server_quota_backend_bytes"); v != quota {
		t.Errorf("etcd_server_quota_backend_bytes = %v, want %d", v, quota)
	}
	if v := value("etcd_mvcc_db_total_size_in_bytes"); v <= 0 || v > quota {
		t.Errorf("etcd_mvcc_db_total_size_in_bytes = %v, want in (0, %d]", v, quota)
	}
	if v := value("etcd_disk_wal_fsync_duration_seconds"); v < 0 {
		t.Errorf("etcd_disk_wal_fsync_duration_seconds count = %v", v)
	}
	// Only the selected prefixes: etcd's gRPC server metrics stay out.
	for name := range byName {
		if len(name) > 12 && name[:12] == "grpc_server_" {
			t.Errorf("%s is served; only %v should be copied", name, etcd.ServerMetricPrefixes)
		}
	}
}
