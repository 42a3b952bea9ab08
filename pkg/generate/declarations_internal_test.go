package generate

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestDeclarationsOf checks what is read from resource.Resource literals:
// the literal fields, under an import alias, and nothing from fields set by
// other expressions or from columns computed by a Value func.
func TestDeclarationsOf(t *testing.T) {
	const src = `package install

import (
	res "github.com/customapi/customapi/pkg/resource"
	widgetsv1 "example.com/widgets/apis/widgets/v1"
	"example.com/widgets/apis/widgets/v2"
)

var plural = "gadgets"

var Widgets = res.Resource{
	GroupVersionKind:  widgetsv1.SchemeGroupVersion.WithKind("Widget"),
	Plural:            "widgets",
	ShortNames:        []string{"wd", "w"},
	Categories:        []string{"all"},
	ClusterScoped:     true,
	StatusSubresource: false,
	PrinterColumns: []res.PrinterColumn{
		{Name: "Color", Type: "string", JSONPath: ".spec.color", Priority: 1, Description: "The color."},
		{Name: "Count", Type: "integer", Value: count},
	},
	SelectableFields: map[string]func(runtime.Object) string{"spec.color": color, "status.ready": ready},
	Versions: []res.Version{{Name: "v1beta1", Deprecated: true, DeprecationWarning: "use v1"}, {Name: "v1alpha1", Removed: true}},
}

var Gadgets = res.Resource{
	GroupVersionKind:  v2.GroupVersion.WithKind("Gadget"),
	Plural:            plural,
	ClusterScoped:     clusterScoped(),
}

var Ignored = res.Resource{GroupVersionKind: gvk}
`
	decls := map[string]*declaration{}
	if err := declarationsOf("install.go", []byte(src), decls); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	for _, tc := range []struct {
		key  string
		want declaration
	}{{
		key: "example.com/widgets/apis/widgets/v1.Widget",
		want: declaration{
			pos: "install.go:11:15", pkgPath: "example.com/widgets/apis/widgets/v1", kind: "Widget",
			plural: "widgets", shortNames: []string{"wd", "w"}, categories: []string{"all"},
			clusterScoped: &yes, status: &no,
			columns: []apiextensionsv1.CustomResourceColumnDefinition{
				{Name: "Color", Type: "string", JSONPath: ".spec.color", Priority: 1, Description: "The color."},
			},
			selectable: []string{".spec.color", ".status.ready"},
			versions: map[string]declaredVersion{
				"v1beta1":  {deprecated: true, warning: "use v1"},
				"v1alpha1": {removed: true},
			},
		},
	}, {
		key:  "example.com/widgets/apis/widgets/v2.Gadget",
		want: declaration{pos: "install.go:26:15", pkgPath: "example.com/widgets/apis/widgets/v2", kind: "Gadget"},
	}} {
		got := decls[tc.key]
		if got == nil {
			t.Errorf("no declaration %s among %v", tc.key, decls)
			continue
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.key, *got, tc.want)
		}
	}
	if len(decls) != 2 {
		t.Errorf("%d declarations, want 2 (a GroupVersionKind that is not <pkg>.SchemeGroupVersion.WithKind(\"Kind\") is skipped)", len(decls))
	}
}
