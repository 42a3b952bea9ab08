package options_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	k8sadmission "k8s.io/apiserver/pkg/admission"

	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
)

// TestServerOptionsValidate: every concern's flags are validated by
// ServerOptions.Validate, each refusal naming its flag; valid values pass.
func TestServerOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	webhook := write("webhook.kubeconfig", "apiVersion: v1\nkind: Config\n")
	policy := write("policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
	badPolicy := write("bad.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
	tracing := write("tracing.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:4317\nsamplingRatePerMillion: 100\n")
	badTracing := write("bad-tracing.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n")
	mine := resource.AdmissionPlugin{Name: "OwnerLabel", Plugin: k8sadmission.NewHandler(k8sadmission.Create)}
	type opts = options.ServerOptions
	for _, tc := range []struct {
		name string
		set  func(*opts)
		want string // "": valid
	}{
		{"defaults", func(*opts) {}, ""},

		{"admission: kube names", func(o *opts) {
			o.Admission.DisablePlugins = []string{"NamespaceLifecycle", "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"}
		}, ""},
		{"admission: enable default-on", func(o *opts) { o.Admission.EnablePlugins = []string{"ValidatingAdmissionWebhook", "ResourceAdmit"} }, ""},
		{"admission: go plugin", func(o *opts) {
			o.Admission.Plugins = []resource.AdmissionPlugin{mine}
			o.Admission.DisablePlugins = []string{"OwnerLabel"}
		}, ""},
		{"admission: service resolution", func(o *opts) {
			o.Admission.ServiceResolution = map[string]string{"webhooks/deny": "127.0.0.1:9443", "webhooks/other": "hooks.example.com"}
		}, ""},
		{"admission: unknown disable", func(o *opts) { o.Admission.DisablePlugins = []string{"PodSecurity"} },
			`--disable-admission-plugins: unknown admission plugin "PodSecurity" (known: NamespaceLifecycle, OwnerReferencesPermissionEnforcement, MutatingAdmissionPolicy, MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook)`},
		{"admission: unknown enable", func(o *opts) { o.Admission.EnablePlugins = []string{"AlwaysDeny"} }, `--enable-admission-plugins: unknown admission plugin "AlwaysDeny"`},
		{"admission: case matters", func(o *opts) { o.Admission.DisablePlugins = []string{"namespacelifecycle"} }, `unknown admission plugin "namespacelifecycle"`},
		{"admission: go plugin not given", func(o *opts) { o.Admission.DisablePlugins = []string{"OwnerLabel"} }, `unknown admission plugin "OwnerLabel"`},
		{"admission: resource admit", func(o *opts) { o.Admission.DisablePlugins = []string{"ResourceAdmit"} }, "--disable-admission-plugins: ResourceAdmit cannot be disabled"},
		{"admission: both", func(o *opts) {
			o.Admission.EnablePlugins = []string{"ValidatingAdmissionWebhook"}
			o.Admission.DisablePlugins = []string{"ValidatingAdmissionWebhook"}
		}, "--enable-admission-plugins and --disable-admission-plugins both name ValidatingAdmissionWebhook"},
		{"admission: config file", func(o *opts) { o.Admission.ConfigFile = filepath.Join(dir, "missing.yaml") }, "--admission-control-config-file: stat "},
		{"admission: bad service", func(o *opts) { o.Admission.ServiceResolution = map[string]string{"deny": "127.0.0.1:9443"} },
			`--webhook-service-resolution: deny=127.0.0.1:9443: the service must be "namespace/name"`},
		{"admission: bad address", func(o *opts) { o.Admission.ServiceResolution = map[string]string{"webhooks/deny": "127.0.0.1:99999"} },
			`--webhook-service-resolution: webhooks/deny=127.0.0.1:99999: port "99999" must be a number in 1..65535`},

		{"tracing", func(o *opts) { o.Tracing.ConfigFile = tracing }, ""},
		{"tracing: missing file", func(o *opts) { o.Tracing.ConfigFile = filepath.Join(dir, "missing.yaml") }, "tracing-config-file " + filepath.Join(dir, "missing.yaml") + " does not exist"},
		{"tracing: sampling rate", func(o *opts) { o.Tracing.ConfigFile = badTracing }, "--tracing-config-file " + badTracing + ": samplingRatePerMillion"},
		{"tracing: another kind", func(o *opts) { o.Tracing.ConfigFile = policy }, "--tracing-config-file: "},

		{"watch cache sizes", func(o *opts) {
			o.Storage.WatchCacheSizes = []string{"customs.test#0", "events#0", "samples.bench.customapi.io#100"}
		}, ""},
		{"watch cache sizes: no size", func(o *opts) { o.Storage.WatchCacheSizes = []string{"customs.test"} }, `--watch-cache-sizes: "customs.test" is not resource[.group]#size`},
		{"watch cache sizes: negative", func(o *opts) { o.Storage.WatchCacheSizes = []string{"customs.test#-1"} }, `--watch-cache-sizes: "customs.test#-1"`},
		{"watch cache sizes: no resource", func(o *opts) { o.Storage.WatchCacheSizes = []string{"#0"} }, `--watch-cache-sizes: "#0"`},
		{"watch cache sizes: a path", func(o *opts) { o.Storage.WatchCacheSizes = []string{"test/customs#0"} }, `--watch-cache-sizes: "test/customs#0"`},
		{"watch cache sizes: not a number", func(o *opts) { o.Storage.WatchCacheSizes = []string{"customs.test#many"} }, `--watch-cache-sizes: "customs.test#many"`},

		{"authorization: RBAC", func(o *opts) { o.Authorization.Mode = "RBAC" }, ""},
		{"authorization: RBAC,Webhook", func(o *opts) { o.Authorization.Mode, o.Authorization.WebhookConfigFile = "RBAC,Webhook", webhook }, ""},
		{"authorization: spaces", func(o *opts) {
			o.Authorization.Mode, o.Authorization.WebhookConfigFile = "Webhook, RBAC, AlwaysDeny", webhook
		}, ""},
		{"authorization: webhook without file", func(o *opts) { o.Authorization.Mode = "RBAC,Webhook" }, "needs --authorization-webhook-config-file"},
		{"authorization: twice", func(o *opts) { o.Authorization.Mode = "RBAC,RBAC" }, "given twice"},
		{"authorization: unknown", func(o *opts) { o.Authorization.Mode = "ABAC" }, `"ABAC" is not one of`},
		{"authorization: empty", func(o *opts) { o.Authorization.Mode = "" }, `"" is not one of`},
		{"authorization: trailing comma", func(o *opts) { o.Authorization.Mode = "RBAC," }, `"" is not one of`},

		{"TLS 1.3", func(o *opts) { o.Serving.TLS.MinVersion, o.Serving.TLS.CipherSuites = "VersionTLS13", nil }, ""},
		{"TLS: Go's suites", func(o *opts) { o.Serving.TLS.CipherSuites = nil }, ""},
		{"TLS: unknown version", func(o *opts) { o.Serving.TLS.MinVersion = "TLS1.2" }, "--tls-min-version"},
		{"TLS: unknown suite", func(o *opts) { o.Serving.TLS.CipherSuites = []string{"TLS_NOPE"} }, "--tls-cipher-suites"},
		{"TLS: no HTTP/2 suite", func(o *opts) { o.Serving.TLS.CipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"} }, "HTTP/2"},
		{"TLS: no HTTP/2 suite but TLS 1.3 only", func(o *opts) {
			o.Serving.TLS.MinVersion, o.Serving.TLS.CipherSuites = "VersionTLS13", []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
		}, ""},

		{"audit: policy and log", func(o *opts) { o.Audit.PolicyFile, o.Audit.LogOptions.Path = policy, filepath.Join(dir, "a.log") }, ""},
		{"audit: log without policy", func(o *opts) { o.Audit.LogOptions.Path = filepath.Join(dir, "a.log") }, "need --audit-policy-file"},
		{"audit: missing policy", func(o *opts) { o.Audit.PolicyFile = filepath.Join(dir, "nope.yaml") }, "nope.yaml"},
		{"audit: invalid policy", func(o *opts) { o.Audit.PolicyFile = badPolicy }, "bad.yaml"},
		{"audit: bad format", func(o *opts) {
			o.Audit.PolicyFile, o.Audit.LogOptions.Path, o.Audit.LogOptions.Format = policy, filepath.Join(dir, "a.log"), "xml"
		}, "invalid audit log format"},
		{"audit: missing webhook config", func(o *opts) {
			o.Audit.PolicyFile, o.Audit.WebhookOptions.ConfigFile = policy, filepath.Join(dir, "none.kubeconfig")
		}, "--audit-webhook-config-file"},

		{"limits: negative", func(o *opts) { o.Limits.MaxRequestsInFlight = -1 }, "--max-requests-inflight must not be negative"},
		{"limits: negative request timeout", func(o *opts) { o.Limits.RequestTimeout = -1 }, "--request-timeout"},
		{"data dir", func(o *opts) { o.DataDir = "" }, "--data-dir must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options.NewServerOptions()
			o.DataDir = dir
			tc.set(o)
			err := errors.Join(o.Validate()...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestTracingConfig: without --tracing-config-file no span is recorded
// (the HTTP chain's provider is the no-op one, the registry has none);
// with one, both doors share the provider it makes, which records.
func TestTracingConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:4317\nsamplingRatePerMillion: 1000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		file   string
		traced bool
	}{{"no file", "", false}, {"file", file, true}} {
		t.Run(tc.name, func(t *testing.T) {
			o := options.NewServerOptions()
			o.DataDir = t.TempDir()
			o.Serving.SecurePort = 0
			o.Tracing.ConfigFile = tc.file
			cfg, err := o.Config()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cfg.Close() }()
			_, span := cfg.Generic.TracerProvider.Tracer("test").Start(context.Background(), "request")
			defer span.End()
			if span.IsRecording() != tc.traced {
				t.Errorf("the HTTP chain's span records: %v, want %v", span.IsRecording(), tc.traced)
			}
			if got := cfg.Registry.TracerProvider != nil; got != tc.traced {
				t.Errorf("the registry has a tracer provider: %v, want %v", got, tc.traced)
			}
			if tc.traced && cfg.Registry.TracerProvider != cfg.Generic.TracerProvider {
				t.Error("the registry's tracer provider is not the HTTP chain's")
			}
		})
	}
}
