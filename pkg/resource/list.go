package resource

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// listItems returns pointers to the items of a typed list.
func listItems(list runtime.Object) ([]runtime.Object, error) {
	var out []runtime.Object
	err := meta.EachListItem(list, func(obj runtime.Object) error {
		out = append(out, obj)
		return nil
	})
	return out, err
}
