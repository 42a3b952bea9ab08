package storage_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

func TestConfigValidate(t *testing.T) {
	scheme, err := resource.NewScheme(install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	good := etcd.ClientConfig{Endpoints: []string{"http://127.0.0.1:2379"}}
	for _, tc := range []struct {
		name    string
		cfg     storage.Config
		wantErr string
	}{
		{"valid", storage.Config{Scheme: scheme, Etcd: good}, ""},
		{"no scheme", storage.Config{Etcd: good}, "Scheme is required"},
		{"no endpoints", storage.Config{Scheme: scheme}, "at least one endpoint"},
		{"bad endpoint", storage.Config{Scheme: scheme, Etcd: etcd.ClientConfig{Endpoints: []string{"127.0.0.1:2379"}}}, "not an http"},
		{"cert without key", storage.Config{Scheme: scheme, Etcd: etcd.ClientConfig{Endpoints: good.Endpoints, CertFile: "c.pem"}}, "together"},
		{"relative prefix", storage.Config{Scheme: scheme, Etcd: good, Prefix: "registry"}, "must start with /"},
		{"unknown media type", storage.Config{Scheme: scheme, Etcd: good, MediaType: "text/plain"}, "not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.RESTOptionsGetter()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// The value in etcd is a normal Kubernetes JSON object under
// <prefix>/<group>/<resource>/<namespace>/<name>, readable by etcdctl.
func TestKeyLayoutAndEncoding(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mediaType string
		check     func(t *testing.T, value []byte)
	}{
		{"json", "", func(t *testing.T, value []byte) {
			var obj testv1.Custom
			if err := json.Unmarshal(value, &obj); err != nil {
				t.Fatalf("value is not JSON: %v", err)
			}
			if obj.APIVersion != "test/v1" || obj.Kind != "Custom" || obj.Spec.Message != "stored" || obj.UID == "" {
				t.Fatalf("value decodes to %+v", obj)
			}
			if obj.ResourceVersion != "" {
				t.Fatal("resourceVersion is stored; it must come from etcd's mod revision")
			}
		}},
		{"cbor", runtime.ContentTypeCBOR, func(t *testing.T, value []byte) {
			// A CBOR value starts with the self-described CBOR tag 55799.
			if len(value) < 3 || value[0] != 0xd9 || value[1] != 0xd9 || value[2] != 0xf7 {
				t.Fatalf("value is not self-described CBOR: % x", value[:min(8, len(value))])
			}
		}},
		{"yaml", runtime.ContentTypeYAML, func(t *testing.T, value []byte) {
			if !strings.HasPrefix(string(value), "apiVersion: test/v1\n") {
				t.Fatalf("value is not YAML: %q", value)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, prefix := customapitest.Etcd(t)
			reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Etcd: cfg, Prefix: prefix, MediaType: tc.mediaType}, install.Customs)
			c, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
			if err != nil {
				t.Fatal(err)
			}
			obj := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns1"}, Spec: testv1.CustomSpec{Message: "stored"}}
			created, err := c.Namespace("ns1").Create(t.Context(), obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			raw, err := cfg.NewClient(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			key := prefix + "/test/customs/ns1/c1"
			resp, err := raw.Get(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 1 {
				t.Fatalf("no value at %s", key)
			}
			if got := resp.Kvs[0].ModRevision; created.ResourceVersion != itoa(got) {
				t.Fatalf("resourceVersion %s, etcd mod revision %d", created.ResourceVersion, got)
			}
			tc.check(t, resp.Kvs[0].Value)
			got, err := c.Namespace("ns1").Get(t.Context(), "c1", metav1.GetOptions{})
			if err != nil || got.Spec.Message != "stored" || got.UID != created.UID {
				t.Fatalf("read back through the client: %v %+v", err, got)
			}
		})
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// A media type that cannot encode the type fails before any storage (and
// etcd connection) is made.
func TestProtobufWithoutMarshallersFailsEarly(t *testing.T) {
	scheme, err := resource.NewScheme(install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	getter, err := storage.Config{Scheme: scheme, Etcd: etcd.ClientConfig{Endpoints: []string{"http://127.0.0.1:1"}}, MediaType: runtime.ContentTypeProtobuf}.RESTOptionsGetter()
	if err != nil {
		t.Fatal(err)
	}
	_, err = getter.GetRESTOptions(install.Customs.GroupResource(), &testv1.Custom{})
	if err == nil || !strings.Contains(err.Error(), "cannot be stored as application/vnd.kubernetes.protobuf") {
		t.Fatalf("got %v", err)
	}
}
