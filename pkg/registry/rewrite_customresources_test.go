package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

var (
	gadgets    = schema.GroupVersionResource{Group: "rewrite.example.com", Version: "v1", Resource: "gadgets"}
	gadgetsGR  = gadgets.GroupResource()
	crdsGR     = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	cborPrefix = "\xd9\xd9\xf7"
)

// gadgetCRD is a namespaced CustomResourceDefinition with one version.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.rewrite.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gadgets.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"message": {Type: "string"}}},
					},
				}},
			}},
		},
	}
}

// crEncryptionConfig encrypts the gadgets and the CustomResourceDefinitions
// with providers (encryption_test.go's aescbc and identityProvider).
func crEncryptionConfig(providers ...string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n" +
		"  - resources: [gadgets.rewrite.example.com, customresourcedefinitions.apiextensions.k8s.io]\n    providers:\n" + strings.Join(providers, "")
}

// TestRewriteStorageCustomResources: a CustomResourceDefinition and one
// of its objects written by a server in one storage encoding (and
// encryption key) are rewritten by RewriteStorage on the registry
// `customapi storage rewrite` opens (options.ServerOptions.OpenRegistry) with the
// other encoding (and a new primary key); a second run finds them
// current; `storage migrate` (VersionsOnly) names the
// CustomResourceDefinitions only; a server started with the new
// configuration reads both.
func TestRewriteStorageCustomResources(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		from, to             string
		keysBefore, keysNow  []string // encryption providers; nil: none
		wantPrefix, wantCRD  string   // of the values after the rewrite
		wantCRMediaType      string
		wantNotPrimaryKey    int
		wantFromCR, wantFrom string
	}{
		{
			name: "json to cbor", from: runtime.ContentTypeJSON, to: runtime.ContentTypeCBOR,
			wantPrefix: cborPrefix, wantCRD: cborPrefix, wantCRMediaType: runtime.ContentTypeCBOR,
			wantFromCR: runtime.ContentTypeJSON, wantFrom: runtime.ContentTypeJSON,
		},
		{
			name: "cbor to json, key rotation", from: runtime.ContentTypeCBOR, to: runtime.ContentTypeJSON,
			keysBefore: []string{aescbc("A", keyA)}, keysNow: []string{aescbc("B", keyB), aescbc("A", keyA)},
			wantPrefix: "k8s:enc:aescbc:v1:B:", wantCRD: "k8s:enc:aescbc:v1:B:", wantCRMediaType: runtime.ContentTypeJSON,
			wantNotPrimaryKey: 1, wantFromCR: runtime.ContentTypeCBOR, wantFrom: runtime.ContentTypeCBOR,
		},
		{
			name: "cbor to protobuf", from: runtime.ContentTypeCBOR, to: runtime.ContentTypeProtobuf,
			wantPrefix: "{", wantCRD: "k8s\x00", wantCRMediaType: runtime.ContentTypeJSON,
			wantFromCR: runtime.ContentTypeCBOR, wantFrom: runtime.ContentTypeCBOR,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := customapitest.EmbeddedEtcd(t)
			const prefix = "/crrewrite"
			// The batteries have protobuf marshallers.
			resources := batteries.Resources(batteries.Options{})
			configure := func(mediaType string, providers []string) func(*options.ServerOptions) {
				path := ""
				if providers != nil {
					path = filepath.Join(t.TempDir(), "encryption.yaml")
					if err := os.WriteFile(path, []byte(crEncryptionConfig(providers...)), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				return func(o *options.ServerOptions) {
					o.CustomResourceDefinitions = true
					o.SetEtcd(cfg)
					o.Storage.Prefix = prefix
					o.Storage.MediaType = mediaType
					o.Storage.Encryption.ProviderConfigFile = path
				}
			}

			s := customapitest.StartWithOptions(t, configure(tc.from, tc.keysBefore), resources...)
			ext, err := apiextensionsclient.NewForConfig(s.Config)
			if err != nil {
				t.Fatal(err)
			}
			kube, err := kubernetes.NewForConfig(s.Config)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rw"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), gadgetCRD(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			gadget := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "rewrite.example.com/v1", "kind": "Gadget",
				"metadata": map[string]any{"name": "g1", "namespace": "rw"},
				"spec":     map[string]any{"message": "gadget-message"},
			}}
			var created *unstructured.Unstructured
			// Served once Established (well under a second).
			if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				created, err = s.Dynamic.Resource(gadgets).Namespace("rw").Create(ctx, gadget, metav1.CreateOptions{})
				return err == nil, nil
			}); err != nil {
				t.Fatalf("create the gadget: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			crKey := prefix + "/rewrite.example.com/gadgets/rw/g1"
			crdKey := prefix + "/apiextensions.k8s.io/customresourcedefinitions/gadgets.rewrite.example.com"
			raw := rawValues(t, cfg, prefix)
			t.Logf("before: gadget %q, CRD %q", raw[crKey][:min(len(raw[crKey]), 24)], raw[crdKey][:min(len(raw[crdKey]), 24)])

			// customapi storage rewrite's registry, with the new encoding.
			rewriteOnce := func(versionsOnly bool) rewrite.Report {
				t.Helper()
				o := options.NewServerOptions()
				o.DataDir = t.TempDir()
				o.Storage.WatchCache = false
				o.Authorization.Mode = options.AuthorizationRBAC
				configure(tc.to, tc.keysNow)(o)
				reg, release, err := o.OpenRegistry(t.Context(), resources...)
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := release(); err != nil {
						t.Error(err)
					}
				}()
				report, err := reg.RewriteStorage(t.Context(), rewrite.Options{VersionsOnly: versionsOnly})
				if err != nil {
					t.Fatal(err)
				}
				return report
			}
			byResource := func(report rewrite.Report) map[schema.GroupResource]rewrite.ResourceReport {
				out := map[schema.GroupResource]rewrite.ResourceReport{}
				for _, r := range report.Resources {
					out[r.Resource] = r
				}
				return out
			}

			got := byResource(rewriteOnce(false))
			cr, crd := got[gadgetsGR], got[crdsGR]
			t.Logf("%s\n%s", crd, cr)
			if cr.Rewritten != 1 || cr.From[tc.wantFromCR] != 1 || cr.NotPrimaryKey != tc.wantNotPrimaryKey || cr.MediaType != tc.wantCRMediaType || !cr.Complete {
				t.Errorf("gadgets: %s (media type %s); want the one gadget rewritten from %s into %s", cr, cr.MediaType, tc.wantFromCR, tc.wantCRMediaType)
			}
			if crd.Rewritten != 1 || crd.From[tc.wantFrom] != 1 || crd.NotPrimaryKey != tc.wantNotPrimaryKey || crd.StorageVersion != "v1" || crd.Versions["v1"] != 1 {
				t.Errorf("CustomResourceDefinitions: %s; want the one rewritten from %s", crd, tc.wantFrom)
			}
			for _, gr := range []schema.GroupResource{gadgetsGR, crdsGR} {
				if r := got[gr]; r.StoredVersions != nil || r.StoredVersionsBefore != nil {
					t.Errorf("%s: stored versions %v (were %v); want no record", gr, r.StoredVersions, r.StoredVersionsBefore)
				}
			}
			raw = rawValues(t, cfg, prefix)
			requirePrefix(t, map[string][]byte{crKey: raw[crKey]}, crKey, tc.wantPrefix, 1)
			requirePrefix(t, map[string][]byte{crdKey: raw[crdKey]}, crdKey, tc.wantCRD, 1)
			for k := range raw {
				if strings.Contains(k, "storedversions") && (strings.Contains(k, "gadgets") || strings.Contains(k, "customresourcedefinitions")) {
					t.Errorf("stored versions record %s written", k)
				}
			}

			again := byResource(rewriteOnce(false))
			if cr, crd := again[gadgetsGR], again[crdsGR]; cr.Rewritten != 0 || cr.AlreadyCurrent != 1 || crd.Rewritten != 0 || crd.AlreadyCurrent != 1 {
				t.Errorf("second run: %s; %s; want both already current", crd, cr)
			}
			migrate := byResource(rewriteOnce(true))
			if _, ok := migrate[gadgetsGR]; ok {
				t.Errorf("storage migrate names the gadgets: %s", migrate[gadgetsGR])
			}
			if crd := migrate[crdsGR]; crd.Rewritten != 0 || crd.AlreadyCurrent != 1 {
				t.Errorf("storage migrate: %s; want the CustomResourceDefinition already v1", crd)
			}

			// A server with the new configuration (and only the new key) reads both.
			keys := tc.keysNow
			if keys != nil {
				keys = keys[:1]
			}
			s = customapitest.StartWithOptions(t, configure(tc.to, keys), resources...)
			ext, err = apiextensionsclient.NewForConfig(s.Config)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), gadgetCRD().Name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			var read *unstructured.Unstructured
			if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				read, err = s.Dynamic.Resource(gadgets).Namespace("rw").Get(ctx, "g1", metav1.GetOptions{})
				return err == nil, nil
			}); err != nil {
				t.Fatalf("read the gadget: %v", err)
			}
			if msg, _, _ := unstructured.NestedString(read.Object, "spec", "message"); msg != "gadget-message" || read.GetUID() != created.GetUID() {
				t.Errorf("gadget after the rewrite: %v, uid %s; want message gadget-message, uid %s", read.Object, read.GetUID(), created.GetUID())
			}
		})
	}
}
