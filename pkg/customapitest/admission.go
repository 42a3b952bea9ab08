package customapitest

import (
	"os"
	"path/filepath"
	"testing"
)

// staticManifestsKinds are the configuration kinds of the admission plugins
// that read a staticManifestsDir.
var staticManifestsKinds = map[string]string{
	"ValidatingAdmissionWebhook": "WebhookAdmissionConfiguration",
	"MutatingAdmissionWebhook":   "WebhookAdmissionConfiguration",
	"ValidatingAdmissionPolicy":  "ValidatingAdmissionPolicyConfiguration",
	"MutatingAdmissionPolicy":    "MutatingAdmissionPolicyConfiguration",
}

// StaticManifestsConfig writes, in a temporary directory, the manifests
// (file name: YAML) into a directory and an admission configuration file
// (apiserver.config.k8s.io/v1 AdmissionConfiguration, for
// --admission-control-config-file) whose plugin (ValidatingAdmissionWebhook,
// MutatingAdmissionWebhook, ValidatingAdmissionPolicy or
// MutatingAdmissionPolicy) reads them as its staticManifestsDir, and returns
// the configuration file's path. It fails tb for another plugin.
func StaticManifestsConfig(tb testing.TB, plugin string, manifests map[string]string) string {
	tb.Helper()
	kind, ok := staticManifestsKinds[plugin]
	if !ok {
		tb.Fatalf("StaticManifestsConfig: %s reads no static manifests", plugin)
	}
	dir := tb.TempDir()
	manifestsDir := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifestsDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	for name, text := range manifests {
		if err := os.WriteFile(filepath.Join(manifestsDir, name), []byte(text), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	config := filepath.Join(dir, "admission.yaml")
	content := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ` + plugin + `
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ` + kind + `
    staticManifestsDir: ` + manifestsDir + "\n"
	if err := os.WriteFile(config, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return config
}
