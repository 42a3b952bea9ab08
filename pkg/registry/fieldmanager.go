package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// newFieldManager returns the field manager of one resource or subresource
// (sub "" or "status"), built with the arguments the API server's installer
// passes (installer.go, managedfields.NewDefaultFieldManager): the scheme as
// unsafe convertor, defaulter and creater, the external kind, the internal
// hub version of its group and the fields the strategy resets.
func newFieldManager(tc managedfields.TypeConverter, scheme *runtime.Scheme, gvk schema.GroupVersionKind, sub string, reset rest.ResetFieldsStrategy) (*managedfields.FieldManager, error) {
	fm, err := managedfields.NewDefaultFieldManager(tc, runtime.UnsafeObjectConvertor(scheme), scheme, scheme, gvk,
		schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal}, sub,
		fieldpath.NewExcludeFilterSetMap(reset.GetResetFields()))
	if err != nil {
		return nil, fmt.Errorf("registry: field manager of %s %s: %w", gvk, sub, err)
	}
	return fm, nil
}
