package resource_test

import (
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/resource"
)

func TestNewTypeConverter(t *testing.T) {
	noDefs := install.Customs
	noDefs.OpenAPIDefinitions = nil
	cases := []struct {
		name    string
		res     resource.Resource
		wantErr string // "" for success
	}{
		{"generated definitions", install.Customs, ""},
		{"no OpenAPIDefinitions", noDefs, "has no OpenAPIDefinitions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scheme, err := resource.NewScheme(install.Customs)
			if err != nil {
				t.Fatal(err)
			}
			conv, err := resource.NewTypeConverter(scheme, tc.res)
			switch {
			case tc.wantErr == "" && (err != nil || conv == nil):
				t.Fatalf("NewTypeConverter: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("NewTypeConverter: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
