package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/customapi/customapi/pkg/resource"
)

// attrFunc returns the labels and selectable fields of an object:
// metadata.name, metadata.namespace (namespaced resources) and the
// resource's SelectableFields.
func attrFunc(res resource.Resource) storage.AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("registry: %T is not an object: %w", obj, err)
		}
		f := fields.Set{"metadata.name": m.GetName()}
		if !res.ClusterScoped {
			f["metadata.namespace"] = m.GetNamespace()
		}
		for path, get := range res.SelectableFields {
			f[path] = get(obj)
		}
		return labels.Set(m.GetLabels()), f, nil
	}
}
