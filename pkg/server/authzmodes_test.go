package server_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/options"
)

// TestAuthorizationModeValidation: --authorization-mode is kube-apiserver's comma-separated list.
func TestAuthorizationModeValidation(t *testing.T) {
	webhook := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := os.WriteFile(webhook, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, webhookFile, wantErr string
	}{
		{mode: "RBAC"},
		{mode: "AlwaysAllow"},
		{mode: "RBAC,Webhook", webhookFile: webhook},
		{mode: "Webhook, RBAC, AlwaysDeny", webhookFile: webhook},
		{mode: "RBAC,Webhook", wantErr: "needs --authorization-webhook-config-file"},
		{mode: "RBAC,RBAC", wantErr: "given twice"},
		{mode: "ABAC", wantErr: `"ABAC" is not one of`},
		{mode: "", wantErr: `"" is not one of`},
		{mode: "RBAC,", wantErr: `"" is not one of`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			o := options.NewServerOptions()
			o.DataDir = t.TempDir()
			o.Authorization.Mode, o.Authorization.WebhookConfigFile = tc.mode, tc.webhookFile
			err := errors.Join(o.Validate()...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
