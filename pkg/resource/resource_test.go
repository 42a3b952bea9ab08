package resource_test

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/resource"
)

func TestCheckDeclaration(t *testing.T) {
	with := func(mutate func(r *resource.Resource)) resource.Resource {
		r := install.Customs
		mutate(&r)
		return r
	}
	for _, tc := range []struct {
		name    string
		res     resource.Resource
		wantErr string
	}{
		{"valid", install.Customs, ""},
		{"no group", with(func(r *resource.Resource) { r.GroupVersionKind.Group = "" }), "Group must not be empty"},
		{"core group with a k8s.io/api/core/v1 type", with(func(r *resource.Resource) {
			r.GroupVersionKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
			r.Plural, r.StatusSubresource = "configmaps", false
			r.New = func() runtime.Object { return &corev1.ConfigMap{} }
			r.NewList = func() runtime.Object { return &corev1.ConfigMapList{} }
		}), ""},
		{"core group with a Lease", with(func(r *resource.Resource) {
			r.GroupVersionKind = schema.GroupVersionKind{Version: "v1", Kind: "Lease"}
			r.Plural, r.StatusSubresource = "leases", false
			r.New = func() runtime.Object { return &coordinationv1.Lease{} }
			r.NewList = func() runtime.Object { return &coordinationv1.LeaseList{} }
		}), "core group holds only"},
		{"negative TTL", with(func(r *resource.Resource) { r.TTL = -time.Second }), "TTL"},
		{"internal version", with(func(r *resource.Resource) { r.GroupVersionKind.Version = runtime.APIVersionInternal }), "served version"},
		{"no kind", with(func(r *resource.Resource) { r.GroupVersionKind.Kind = "" }), "Kind must not be empty"},
		{"bad plural", with(func(r *resource.Resource) { r.Plural = "Customs" }), "Plural"},
		{"no constructors", with(func(r *resource.Resource) { r.New = nil }), "New and NewList are required"},
		{"list is not a list", with(func(r *resource.Resource) { r.NewList = func() runtime.Object { return &testv1.Custom{} } }), "no Items field"},
		{"subresource", with(func(r *resource.Resource) { r.Subresources = map[string]resource.Subresource{"finalize": {}} }), ""},
		{"subresource named status", with(func(r *resource.Resource) { r.Subresources = map[string]resource.Subresource{"status": {}} }), "subresource \"status\""},
		{"subresource with a slash", with(func(r *resource.Resource) { r.Subresources = map[string]resource.Subresource{"a/b": {}} }), "DNS-1035"},
		{"status without Status field", with(func(r *resource.Resource) {
			r.New = func() runtime.Object { return &testv1.CustomList{} }
		}), "ObjectMeta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.res.CheckDeclaration()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewScheme(t *testing.T) {
	scheme, err := resource.NewScheme(install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	gv := install.Customs.GroupVersionKind.GroupVersion()
	for _, gvk := range []string{"Custom", "CustomList", "ListOptions", "DeleteOptions"} {
		if !scheme.Recognizes(gv.WithKind(gvk)) {
			t.Errorf("scheme does not know %s/%s", gv, gvk)
		}
	}
	internal := gv
	internal.Version = runtime.APIVersionInternal
	if !scheme.Recognizes(internal.WithKind("Custom")) {
		t.Error("scheme lacks the internal version needed by server-side apply")
	}
	if _, err := resource.NewScheme(install.Customs, install.Customs); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Fatalf("duplicate declaration: %v", err)
	}
}
