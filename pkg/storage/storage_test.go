package storage_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/examples/fleet/fleetapi"
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
		name     string
		cfg      storage.Config
		noScheme bool
		wantErr  string
	}{
		{"valid", storage.Config{Etcd: good}, false, ""},
		{"no scheme", storage.Config{Etcd: good}, true, "a scheme is required"},
		{"no endpoints", storage.Config{}, false, "at least one endpoint"},
		{"bad endpoint", storage.Config{Etcd: etcd.ClientConfig{Endpoints: []string{"127.0.0.1:2379"}}}, false, "not an http"},
		{"cert without key", storage.Config{Etcd: etcd.ClientConfig{Endpoints: good.Endpoints, CertFile: "c.pem"}}, false, "together"},
		{"relative prefix", storage.Config{Etcd: good, Prefix: "registry"}, false, "must start with /"},
		{"unknown media type", storage.Config{Etcd: good, MediaType: "text/plain"}, false, "not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sch := scheme
			if tc.noScheme {
				sch = nil
			}
			_, err := tc.cfg.RESTOptionsGetter(sch)
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
		{"protobuf", runtime.ContentTypeProtobuf, func(t *testing.T, value []byte) {
			// A Kubernetes protobuf value starts with "k8s\x00".
			if !strings.HasPrefix(string(value), "k8s\x00") {
				t.Fatalf("value is not Kubernetes protobuf: % x", value[:min(8, len(value))])
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
			reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix, MediaType: tc.mediaType}}, install.Customs)
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

// A resource whose Go type has no protobuf marshallers (the fleet
// example's Device) cannot be stored as protobuf: the store is refused
// before any etcd connection is made, with an error that names the
// resource, the Go type and what to generate.
func TestProtobufWithoutMarshallersFailsEarly(t *testing.T) {
	scheme, err := resource.NewScheme(fleetapi.Devices)
	if err != nil {
		t.Fatal(err)
	}
	getter, err := storage.Config{Etcd: etcd.ClientConfig{Endpoints: []string{"http://127.0.0.1:1"}}, MediaType: runtime.ContentTypeProtobuf}.RESTOptionsGetter(scheme)
	if err != nil {
		t.Fatal(err)
	}
	_, err = getter.GetRESTOptions(fleetapi.Devices.GroupResource(), fleetapi.Devices.New())
	if err == nil {
		t.Fatal("a type without protobuf marshallers was accepted for protobuf storage")
	}
	for _, want := range []string{
		"resource devices.fleet.example.com cannot be stored as application/vnd.kubernetes.protobuf",
		"*v1alpha1.Device has no generated protobuf marshallers",
		"+k8s:protobuf-gen=package",
		"customapi-gen",
		"application/json or application/cbor",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestMediaTypeOfValue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"json", []byte(`{"apiVersion":"test/v1","kind":"Custom"}` + "\n"), runtime.ContentTypeJSON},
		{"json with leading space", []byte(" \n{}"), runtime.ContentTypeJSON},
		{"yaml", []byte("apiVersion: test/v1\nkind: Custom\n"), runtime.ContentTypeYAML},
		{"cbor", []byte{0xd9, 0xd9, 0xf7, 0xa1}, runtime.ContentTypeCBOR},
		{"protobuf", []byte("k8s\x00\n\x0e"), runtime.ContentTypeProtobuf},
		{"empty", nil, ""},
		{"binary", []byte{0xff, 0xfe, 0x00}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := storage.MediaTypeOfValue(tc.value); got != tc.want {
				t.Fatalf("MediaTypeOfValue(%q) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

// Keys follow kube-apiserver's layout, core-group resources without a
// group segment.
func TestKey(t *testing.T) {
	for _, tc := range []struct {
		prefix    string
		gr        schema.GroupResource
		namespace string
		want      string
	}{
		{"", schema.GroupResource{Group: "test", Resource: "customs"}, "ns1", "/registry/test/customs/ns1/n"},
		{"/x/", schema.GroupResource{Group: "test", Resource: "customs"}, "", "/x/test/customs/n"},
		{"", schema.GroupResource{Resource: "namespaces"}, "", "/registry/namespaces/n"},
		{"", schema.GroupResource{Resource: "configmaps"}, "ns1", "/registry/configmaps/ns1/n"},
	} {
		if got := storage.Key(tc.prefix, tc.gr, tc.namespace, "n"); got != tc.want {
			t.Errorf("Key(%q, %s, %q, n) = %q, want %q", tc.prefix, tc.gr, tc.namespace, got, tc.want)
		}
	}
}
