package registry_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// TestOpenRejectsBadConfig: Open returns an error, before connecting, for
// what cannot work.
func TestOpenRejectsBadConfig(t *testing.T) {
	noDefs := install.Customs
	noDefs.OpenAPIDefinitions = nil
	good := etcd.ClientConfig{Endpoints: []string{"http://127.0.0.1:1"}}
	otherDefs := install.Customs
	otherDefs.OpenAPIDefinitions = func(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		return map[string]common.OpenAPIDefinition{}
	}
	unnamedRes := resource.Resource{
		GroupVersionKind:   schema.GroupVersionKind{Group: "unnamed.example.com", Version: "v1", Kind: "Unnamed"},
		Plural:             "unnameds",
		New:                func() runtime.Object { return &unnamed{} },
		NewList:            func() runtime.Object { return &unnamedList{} },
		OpenAPIDefinitions: install.Customs.OpenAPIDefinitions,
	}
	cases := []struct {
		name      string
		cfg       registry.Config
		resources []resource.Resource
		want      string
	}{
		{"no resources", registry.Config{Storage: storage.Config{Etcd: good}}, nil, "no resources"},
		{"no OpenAPI definitions", registry.Config{Storage: storage.Config{Etcd: good}}, []resource.Resource{noDefs}, "no OpenAPIDefinitions"},
		{"type without an OpenAPI model name", registry.Config{Storage: storage.Config{Etcd: good}}, []resource.Resource{unnamedRes}, "+k8s:openapi-model-package"},
		{"definitions without the type's model", registry.Config{Storage: storage.Config{Etcd: good}}, []resource.Resource{otherDefs}, `no model "com.github.customapi.customapi.pkg.apis.test.v1.Custom"`},
		{"both etcds", registry.Config{Storage: storage.Config{Etcd: good}, EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: t.TempDir()}}, []resource.Resource{install.Customs}, "not both"},
		{"no etcd", registry.Config{}, []resource.Resource{install.Customs}, "endpoint"},
		{"bad prefix", registry.Config{Storage: storage.Config{Etcd: good, Prefix: "/"}}, []resource.Resource{install.Customs}, "prefix"},
		{"bad media type", registry.Config{Storage: storage.Config{Etcd: good, MediaType: "text/plain"}}, []resource.Resource{install.Customs}, "not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := registry.Open(t.Context(), tc.cfg, tc.resources...)
			if err == nil {
				_ = reg.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestOpenEmbeddedKeyAndClose: a registry with its own embedded etcd
// stores under Key, answers the etcd check, refuses invalid namespaces
// with 400 (the rule both doors share), and closes idempotently.
func TestOpenEmbeddedKeyAndClose(t *testing.T) {
	reg, err := registry.Open(t.Context(), registry.Config{
		EmbeddedEtcd: &etcd.EmbeddedConfig{DataDir: t.TempDir(), UnsafeNoFsync: true, LogLevel: "error"},
		Storage:      storage.Config{Prefix: "/p"},
	}, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if err := reg.CheckEtcd(); err != nil {
		t.Fatalf("etcd check: %v", err)
	}
	if err := reg.Ready(); err != nil {
		t.Fatalf("ready: %v", err)
	}
	// Open waited for every watch cache: each store reports its load done.
	loads := reg.Loading()
	if len(loads) != 1 || !loads[0].Ready || loads[0].Resource != install.Customs.GroupResource() || loads[0].Elapsed <= 0 {
		t.Fatalf("Loading() = %+v, want customs ready after a positive time", loads)
	}
	if reg.EmbeddedEtcdErr() == nil || reg.EmbeddedEtcdctlFlags() == "" {
		t.Fatal("embedded etcd not exposed")
	}
	st, ok := reg.Store(install.Customs.GroupVersionResource())
	if !ok {
		t.Fatal("no store for customs")
	}
	if _, err := st.Create(t.Context(), registry.Caller{Namespace: "ns1"}, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := reg.Key(install.Customs, "ns1", "c1")
	if key != "/p/test/customs/ns1/c1" {
		t.Fatalf("key %q", key)
	}
	raw, err := reg.EtcdConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v, %d keys", key, err, len(resp.Kvs))
	}
	for _, ns := range []string{"..", ".", "a/b", "UPPER"} {
		_, err := st.Get(t.Context(), registry.Caller{Namespace: ns}, "c1", metav1.GetOptions{})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("namespace %q: got %v, want BadRequest", ns, err)
		}
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestOpenRegistryHarness: customapitest.OpenRegistry gives a registry
// with its etcd and prefix.
func TestOpenRegistryHarness(t *testing.T) {
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{}, install.Customs)
	if len(reg.Etcd.Endpoints) == 0 || !strings.HasPrefix(reg.Prefix, "/registry-") {
		t.Fatalf("etcd %v prefix %q", reg.Etcd, reg.Prefix)
	}
	if !strings.HasPrefix(reg.Key(install.Customs, "ns", "n"), reg.Prefix+"/test/customs/ns/n") {
		t.Fatalf("key %q", reg.Key(install.Customs, "ns", "n"))
	}
}

// unnamed is a kind whose package lacks +k8s:openapi-model-package: no
// OpenAPIModelName method. Its DeepCopyObject is written by hand because
// the generator is not run for test fixtures.
type unnamed struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (u *unnamed) DeepCopyObject() runtime.Object {
	c := &unnamed{TypeMeta: u.TypeMeta}
	u.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return c
}

type unnamedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []unnamed `json:"items"`
}

func (l *unnamedList) DeepCopyObject() runtime.Object {
	c := &unnamedList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i := range l.Items {
		c.Items = append(c.Items, *l.Items[i].DeepCopyObject().(*unnamed))
	}
	return c
}
