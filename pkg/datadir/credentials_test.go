package datadir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/customapi/customapi/pkg/datadir"
)

// TestEnsureAdminTokens: a new tokens.csv gets the admin and the
// super-admin; an existing one keeps its lines byte for byte (an old admin
// in system:masters is reported as LegacyAdmin) and gains only the users
// it lacks.
func TestEnsureAdminTokens(t *testing.T) {
	for _, tc := range []struct {
		name       string
		existing   string // "" for no file
		wantLegacy bool
		keepAdmin  string // the admin token that must be kept
	}{
		{"new", "", false, ""},
		{"ordinary admin", `tok1,admin,admin,"` + datadir.AdminGroup + `"` + "\n", false, "tok1"},
		{"legacy admin, no newline", `tok2,admin,admin,"system:masters"`, true, "tok2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, datadir.TokensFile)
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := datadir.EnsureAdminTokens(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Admin == "" || got.SuperAdmin == "" || got.Admin == got.SuperAdmin || got.LegacyAdmin != tc.wantLegacy {
				t.Fatalf("tokens %+v, want two distinct tokens, LegacyAdmin %v", got, tc.wantLegacy)
			}
			if tc.keepAdmin != "" && got.Admin != tc.keepAdmin {
				t.Errorf("admin token %q, want the existing %q", got.Admin, tc.keepAdmin)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), tc.existing) {
				t.Errorf("tokens.csv %q does not keep the existing lines %q", data, tc.existing)
			}
			again, err := datadir.EnsureAdminTokens(dir)
			if err != nil || again != got {
				t.Errorf("second call: %+v, %v; want %+v", again, err, got)
			}
		})
	}
}

// TestCredentials: the certificates are generated once and reused; a
// token kubeconfig and a user's certificate kubeconfig trust the data
// dir's CA and name the server.
func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	caPEM, err := datadir.EnsureCertificates(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := os.ReadFile(filepath.Join(dir, datadir.ServingCertFile))
	if err != nil {
		t.Fatal(err)
	}
	again, err := datadir.EnsureCertificates(dir, nil)
	if err != nil || string(again) != string(caPEM) {
		t.Fatalf("second EnsureCertificates: %v; CA changed: %v", err, string(again) != string(caPEM))
	}
	if s, _ := os.ReadFile(filepath.Join(dir, datadir.ServingCertFile)); string(s) != string(serving) {
		t.Error("the serving certificate was generated anew though still valid")
	}

	const url = "https://127.0.0.1:6443"
	path := filepath.Join(dir, datadir.AdminKubeconfigFile)
	if err := datadir.WriteKubeconfig(path, url, caPEM, datadir.AdminUser, "tok"); err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if admin.Host != url || admin.BearerToken != "tok" || string(admin.CAData) != string(caPEM) {
		t.Errorf("admin kubeconfig: host %q token %q, CA the data dir's: %v", admin.Host, admin.BearerToken, string(admin.CAData) == string(caPEM))
	}

	data, err := datadir.UserKubeconfig(datadir.UserKubeconfigOptions{DataDir: dir, User: "jane", Groups: []string{"dev"}})
	if err != nil {
		t.Fatal(err)
	}
	user, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if user.Host != url || len(user.CertData) == 0 || len(user.KeyData) == 0 {
		t.Errorf("user kubeconfig: host %q (want admin.kubeconfig's %q), certificate %d bytes, key %d bytes", user.Host, url, len(user.CertData), len(user.KeyData))
	}
	if _, err := datadir.UserKubeconfig(datadir.UserKubeconfigOptions{DataDir: t.TempDir(), User: "jane"}); err == nil {
		t.Error("UserKubeconfig on a data dir without CA: no error")
	}
}

// TestEnsureEncryptionConfig: the key file is generated once (mode 0600)
// and then kept as it is.
func TestEnsureEncryptionConfig(t *testing.T) {
	dir := t.TempDir()
	path, err := datadir.EnsureEncryptionConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, datadir.EncryptionConfigFile) {
		t.Errorf("path %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, %v; want mode 0600", path, fi, err)
	}
	first, _ := os.ReadFile(path)
	if !strings.Contains(string(first), "name: "+datadir.DefaultEncryptionKeyName) {
		t.Errorf("generated file names no key %s:\n%s", datadir.DefaultEncryptionKeyName, first)
	}
	if _, err := datadir.EnsureEncryptionConfig(dir); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(path); string(second) != string(first) {
		t.Error("an existing encryption config was replaced")
	}
}
