package resource_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
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

// sameModel is another version's Go type whose package kept the model
// package of testv1 (a copied doc.go): its model name is Custom's.
type sameModel struct{ other }

func (*sameModel) OpenAPIModelName() string { return (&testv1.Custom{}).OpenAPIModelName() }

func (s *sameModel) DeepCopyObject() runtime.Object {
	return &sameModel{*s.other.DeepCopyObject().(*other)}
}

// TestNewTypeConverterOneModelTwoTypes: two versions whose Go types have
// one OpenAPI model name are refused, naming both types and the tag.
func TestNewTypeConverterOneModelTwoTypes(t *testing.T) {
	copied := install.Customs
	copied.GroupVersionKind.Version = "v1alpha1"
	copied.New = func() runtime.Object { return &sameModel{} }
	scheme, err := resource.NewScheme(install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = resource.NewTypeConverter(scheme, install.Customs, copied)
	if err == nil || !strings.Contains(err.Error(), "have the same OpenAPI model name") || !strings.Contains(err.Error(), "+k8s:openapi-model-package") {
		t.Fatalf("err = %v, want one naming the shared model name and the tag", err)
	}
}
