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

// TestApplyDeclaration checks that a declaration fills in what the markers
// leave unset and leaves alone what they decide.
func TestApplyDeclaration(t *testing.T) {
	yes := true
	decl := &declaration{
		plural: "widgetses", shortNames: []string{"wd"}, clusterScoped: &yes,
		columns:    []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Color", Type: "string", JSONPath: ".spec.color"}},
		selectable: []string{".spec.color"},
		versions:   map[string]declaredVersion{"v1beta1": {deprecated: true, warning: "use v1"}},
	}
	markerColumn := apiextensionsv1.CustomResourceColumnDefinition{Name: "Size", Type: "integer", JSONPath: ".spec.size"}
	base := func() *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "widgets.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets", Singular: "widget", ShortNames: []string{"w"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{markerColumn}},
				{Name: "v1beta1", Served: true, AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{markerColumn}},
			},
		}}
	}
	for _, tc := range []struct {
		name              string
		markers           kindMarkers
		plural, crdName   string
		shortNames        []string
		scope             apiextensionsv1.ResourceScope
		column            string // v1's first column
		selectable        int    // v1's selectable fields
		deprecatedV1beta1 bool
		warningV1beta1    string
	}{{
		name:   "no markers: the declaration decides",
		plural: "widgetses", crdName: "widgetses.widgets.example.com", shortNames: []string{"wd"},
		scope: apiextensionsv1.ClusterScoped, column: "Color", selectable: 1,
		deprecatedV1beta1: true, warningV1beta1: "use v1",
	}, {
		name:    "markers decide",
		markers: kindMarkers{resource: true, path: true, scope: true, columns: true, selectable: true},
		plural:  "widgets", crdName: "widgets.widgets.example.com", shortNames: []string{"w"},
		scope: apiextensionsv1.NamespaceScoped, column: "Size", selectable: 0,
		deprecatedV1beta1: true, warningV1beta1: "use v1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			applyDeclaration(c, decl, tc.markers)
			n := c.Spec.Names
			if n.Plural != tc.plural || c.Name != tc.crdName || !reflect.DeepEqual(n.ShortNames, tc.shortNames) || c.Spec.Scope != tc.scope {
				t.Errorf("plural %s, name %s, shortNames %q, scope %s; want %s, %s, %q, %s", n.Plural, c.Name, n.ShortNames, c.Spec.Scope, tc.plural, tc.crdName, tc.shortNames, tc.scope)
			}
			v1, v1beta1 := c.Spec.Versions[0], c.Spec.Versions[1]
			if got := v1.AdditionalPrinterColumns[0].Name; got != tc.column {
				t.Errorf("v1's first column %s, want %s", got, tc.column)
			}
			if len(v1.SelectableFields) != tc.selectable {
				t.Errorf("v1's selectable fields %v, want %d", v1.SelectableFields, tc.selectable)
			}
			if v1beta1.Deprecated != tc.deprecatedV1beta1 || v1beta1.DeprecationWarning == nil || *v1beta1.DeprecationWarning != tc.warningV1beta1 {
				t.Errorf("v1beta1 deprecated %t, warning %v; want %t, %q", v1beta1.Deprecated, v1beta1.DeprecationWarning, tc.deprecatedV1beta1, tc.warningV1beta1)
			}
		})
	}
}
