package storage_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

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
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" for valid options
		want    storage.Config
	}{
		{"defaults", nil, "", storage.Config{Prefix: storage.DefaultPrefix, MediaType: storage.DefaultMediaType}},
		{"external etcd with TLS",
			[]string{"--etcd-servers=https://a:2379,https://b:2379", "--etcd-cafile=ca", "--etcd-certfile=c", "--etcd-keyfile=k", "--etcd-prefix=/p", "--storage-media-type=application/cbor"}, "",
			storage.Config{Etcd: etcd.ClientConfig{Endpoints: []string{"https://a:2379", "https://b:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}, Prefix: "/p", MediaType: runtime.ContentTypeCBOR}},
		{"overrides, the main etcd embedded, TLS for the overrides",
			[]string{"--etcd-servers-overrides=/events#https://e1:2379;https://e2:2379,coordination.k8s.io/leases#http://l:2379", "--etcd-cafile=ca", "--etcd-certfile=c", "--etcd-keyfile=k"}, "",
			storage.Config{Prefix: storage.DefaultPrefix, MediaType: storage.DefaultMediaType, Overrides: []storage.Override{
				{Resource: schema.GroupResource{Resource: "events"}, Etcd: etcd.ClientConfig{Endpoints: []string{"https://e1:2379", "https://e2:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}},
				{Resource: schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, Etcd: etcd.ClientConfig{Endpoints: []string{"http://l:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}},
			}}},
		{"override without servers", []string{"--etcd-servers-overrides=/events"}, `--etcd-servers-overrides: "/events": must be group/resource#servers`, storage.Config{}},
		{"override with a bad server", []string{"--etcd-servers=https://a:2379", "--etcd-servers-overrides=/events#e:2379"}, `--etcd-servers-overrides: "/events#e:2379": etcd: endpoint "e:2379" is not an http:// or https:// URL`, storage.Config{}},
		{"TLS without servers", []string{"--etcd-cafile=ca"}, "--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers", storage.Config{}},
		{"server not a URL", []string{"--etcd-servers=127.0.0.1:2379"}, "--etcd-servers: ", storage.Config{}},
		{"empty prefix", []string{"--etcd-prefix="}, "--etcd-prefix must not be empty", storage.Config{}},
		{"relative prefix", []string{"--etcd-prefix=registry"}, "--etcd-prefix: ", storage.Config{}},
		{"empty media type", []string{"--storage-media-type="}, "--storage-media-type must not be empty", storage.Config{}},
		{"unknown media type", []string{"--storage-media-type=text/plain"}, "--storage-media-type: ", storage.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := storage.NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
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
