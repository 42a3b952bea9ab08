package storage_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// TestOptionsFlags: the flags parse into the options, Validate names the
// flag of each problem, and ApplyTo sets exactly the Config fields the
// flags describe (the embedded etcd when --etcd-servers is empty).
func TestOptionsFlags(t *testing.T) {
	defaults := storage.Config{Prefix: storage.DefaultPrefix, MediaType: storage.DefaultMediaType, CompactionInterval: storage.DefaultCompactionInterval}
	for _, tc := range []struct {
		name         string
		args         []string
		wantErr      string // "" for valid options
		want         storage.Config
		wantEmbedded etcd.EmbeddedConfig // the embedded etcd's options
	}{
		{"defaults", nil, "", defaults, etcd.EmbeddedConfig{}},
		{"external etcd with TLS",
			[]string{"--etcd-servers=https://a:2379,https://b:2379", "--etcd-cafile=ca", "--etcd-certfile=c", "--etcd-keyfile=k", "--etcd-prefix=/p", "--storage-media-type=application/cbor", "--etcd-compaction-interval=1m"}, "",
			storage.Config{Etcd: etcd.ClientConfig{Endpoints: []string{"https://a:2379", "https://b:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}, Prefix: "/p", MediaType: runtime.ContentTypeCBOR, CompactionInterval: time.Minute}, etcd.EmbeddedConfig{}},
		{"overrides, the main etcd embedded, TLS for the overrides",
			[]string{"--etcd-servers-overrides=/events#https://e1:2379;https://e2:2379,coordination.k8s.io/leases#http://l:2379", "--etcd-cafile=ca", "--etcd-certfile=c", "--etcd-keyfile=k"}, "",
			storage.Config{Prefix: storage.DefaultPrefix, MediaType: storage.DefaultMediaType, CompactionInterval: storage.DefaultCompactionInterval, Overrides: []storage.Override{
				{Resource: schema.GroupResource{Resource: "events"}, Etcd: etcd.ClientConfig{Endpoints: []string{"https://e1:2379", "https://e2:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}},
				{Resource: schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, Etcd: etcd.ClientConfig{Endpoints: []string{"http://l:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}},
			}}, etcd.EmbeddedConfig{}},
		{"override without servers", []string{"--etcd-servers-overrides=/events"}, `--etcd-servers-overrides: "/events": must be group/resource#servers`, storage.Config{}, etcd.EmbeddedConfig{}},
		{"override with a bad server", []string{"--etcd-servers=https://a:2379", "--etcd-servers-overrides=/events#e:2379"}, `--etcd-servers-overrides: "/events#e:2379": etcd: endpoint "e:2379" is not an http:// or https:// URL`, storage.Config{}, etcd.EmbeddedConfig{}},
		{"TLS without servers", []string{"--etcd-cafile=ca"}, "--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers", storage.Config{}, etcd.EmbeddedConfig{}},
		{"server not a URL", []string{"--etcd-servers=127.0.0.1:2379"}, "--etcd-servers: ", storage.Config{}, etcd.EmbeddedConfig{}},
		{"empty prefix", []string{"--etcd-prefix="}, "--etcd-prefix must not be empty", storage.Config{}, etcd.EmbeddedConfig{}},
		{"relative prefix", []string{"--etcd-prefix=registry"}, "--etcd-prefix: ", storage.Config{}, etcd.EmbeddedConfig{}},
		{"empty media type", []string{"--storage-media-type="}, "--storage-media-type must not be empty", storage.Config{}, etcd.EmbeddedConfig{}},
		{"unknown media type", []string{"--storage-media-type=text/plain"}, "--storage-media-type: ", storage.Config{}, etcd.EmbeddedConfig{}},
		// kube's meaning: 0 disables compaction (the Config's negative).
		{"compaction off", []string{"--etcd-compaction-interval=0"}, "", storage.Config{Prefix: storage.DefaultPrefix, MediaType: storage.DefaultMediaType, CompactionInterval: -1}, etcd.EmbeddedConfig{}},
		{"negative compaction interval", []string{"--etcd-compaction-interval=-1s"}, "--etcd-compaction-interval -1s must not be negative", storage.Config{}, etcd.EmbeddedConfig{}},
		{"quota as a quantity", []string{"--quota-backend-bytes=64Mi", "--bootstrap-defrag-threshold-megabytes=8"}, "", defaults, etcd.EmbeddedConfig{QuotaBackendBytes: 64 << 20, BootstrapDefragThresholdBytes: 8 << 20}},
		{"quota in bytes, no defragmentation at start", []string{"--quota-backend-bytes=1073741824", "--bootstrap-defrag-threshold-megabytes=0"}, "", defaults, etcd.EmbeddedConfig{QuotaBackendBytes: 1 << 30, BootstrapDefragThresholdBytes: -1}},
		{"quota with external etcd", []string{"--etcd-servers=https://a:2379", "--quota-backend-bytes=8Gi"}, "--quota-backend-bytes is the embedded etcd's", storage.Config{}, etcd.EmbeddedConfig{}},
		{"defragmentation with external etcd", []string{"--etcd-servers=https://a:2379", "--bootstrap-defrag-threshold-megabytes=512"}, "--bootstrap-defrag-threshold-megabytes is the embedded etcd's", storage.Config{}, etcd.EmbeddedConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := storage.NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var embedded etcd.EmbeddedConfig
			o.Embedded.ApplyTo(&embedded)
			if tc.wantErr == "" && embedded != tc.wantEmbedded {
				t.Fatalf("Embedded.ApplyTo: %+v, want %+v", embedded, tc.wantEmbedded)
			}
			err := errors.Join(o.Validate()...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Validate: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			// ApplyTo leaves the fields no flag describes alone.
			got := storage.Config{DisableWatchCache: true}
			o.ApplyTo(&got)
			tc.want.DisableWatchCache = true
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ApplyTo: %+v, want %+v", got, tc.want)
			}
			if o.Etcd.External() != (len(tc.want.Etcd.Endpoints) != 0) {
				t.Fatalf("External() = %v for %v", o.Etcd.External(), o.Etcd.Servers)
			}
		})
	}
}

// TestEtcdOptionsSetClientConfig: SetClientConfig and ClientConfig are
// inverse, and the zero ClientConfig names the embedded etcd.
func TestEtcdOptionsSetClientConfig(t *testing.T) {
	c := etcd.ClientConfig{Endpoints: []string{"https://a:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}
	var o storage.EtcdOptions
	o.SetClientConfig(c)
	if got := o.ClientConfig(); !reflect.DeepEqual(got, c) || !o.External() {
		t.Fatalf("ClientConfig() = %+v, External %v; want %+v", got, o.External(), c)
	}
	o.SetClientConfig(etcd.ClientConfig{})
	if o.External() || !reflect.DeepEqual(o.ClientConfig(), etcd.ClientConfig{}) || len(o.Validate()) != 0 {
		t.Fatalf("after SetClientConfig(zero): %+v", o)
	}
}

// TestEmbeddedEtcdFlagValues: --quota-backend-bytes takes bytes or a
// quantity and shows its default as 8Gi; the defragmentation threshold's
// default is a sixteenth of the quota, 512 MiB for the default one; bad
// values are refused naming them.
func TestEmbeddedEtcdFlagValues(t *testing.T) {
	var o storage.EmbeddedEtcdOptions
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if q, d := fs.Lookup("quota-backend-bytes").DefValue, fs.Lookup("bootstrap-defrag-threshold-megabytes").DefValue; q != "8Gi" || d != "512" {
		t.Fatalf("defaults shown: %q, %q; want 8Gi, 512", q, d)
	}
	for _, args := range [][]string{{"--quota-backend-bytes=lots"}, {"--quota-backend-bytes=-1"}, {"--quota-backend-bytes=0"}, {"--bootstrap-defrag-threshold-megabytes=-1"}} {
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	for _, tc := range []struct {
		cfg  etcd.EmbeddedConfig
		want int64
	}{
		{etcd.EmbeddedConfig{}, etcd.DefaultBootstrapDefragThresholdBytes},
		{etcd.EmbeddedConfig{QuotaBackendBytes: 64 << 20}, 4 << 20},
		{etcd.EmbeddedConfig{QuotaBackendBytes: 8 << 20}, 1 << 20},
		{etcd.EmbeddedConfig{QuotaBackendBytes: 64 << 20, BootstrapDefragThresholdBytes: 100}, 100},
		{etcd.EmbeddedConfig{BootstrapDefragThresholdBytes: -1}, 0},
	} {
		if got := tc.cfg.EffectiveBootstrapDefragThresholdBytes(); got != tc.want {
			t.Errorf("%+v: threshold %d, want %d", tc.cfg, got, tc.want)
		}
	}
	if etcd.DefaultBootstrapDefragThresholdBytes != 512<<20 {
		t.Errorf("default threshold %d, want 512 MiB", etcd.DefaultBootstrapDefragThresholdBytes)
	}
}
