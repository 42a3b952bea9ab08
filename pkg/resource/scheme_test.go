package resource_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/resource"
)

// other and otherList are a second Go type for kind Custom, as another
// version's package would declare it.
type other struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              string `json:"spec,omitempty"`
}

func (o *other) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type otherList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []other `json:"items"`
}

func (l *otherList) DeepCopyObject() runtime.Object {
	c := *l
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	c.Items = make([]other, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*other)
	}
	return &c
}

// byValue is a runtime.Object that is not a pointer, which runtime.Scheme
// refuses (with a panic).
type byValue struct {
	*metav1.TypeMeta
	*metav1.ObjectMeta
}

func (v byValue) DeepCopyObject() runtime.Object { return v }

// customs returns install.Customs in version, changed by mutate.
func customs(version string, mutate func(r *resource.Resource)) resource.Resource {
	r := install.Customs
	r.GroupVersionKind.Version = version
	if mutate != nil {
		mutate(&r)
	}
	return r
}

func otherTypes(r *resource.Resource) {
	r.New = func() runtime.Object { return &other{} }
	r.NewList = func() runtime.Object { return &otherList{} }
	r.StatusSubresource, r.SelectableFields, r.PrinterColumns = false, nil, nil
}

func withKind(kind, plural string) func(r *resource.Resource) {
	return func(r *resource.Resource) {
		otherTypes(r)
		r.GroupVersionKind.Kind, r.Plural = kind, plural
	}
}

// TestNewSchemeVersionsAndConflicts: versions of a kind may share Go types
// (then the internal version uses them); anything runtime.Scheme would
// panic on is an error naming the kinds and Go types.
func TestNewSchemeVersionsAndConflicts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources []resource.Resource
		// wantErr are substrings of the error; none means success.
		wantErr []string
	}{
		{"one version", []resource.Resource{install.Customs}, nil},
		{"two versions, one Go type", []resource.Resource{install.Customs, customs("v1beta1", nil)}, nil},
		{"two versions, two Go types",
			[]resource.Resource{install.Customs, customs("v1alpha1", otherTypes)},
			[]string{"kind Custom of group test", "two Go types", "*v1.Custom in v1", "*resource_test.other in v1alpha1"}},
		{"two versions, one object type, two list types",
			[]resource.Resource{install.Customs, customs("v1alpha1", func(r *resource.Resource) {
				r.NewList = func() runtime.Object { return &otherList{} }
			})},
			[]string{"kind CustomList of group test", "*v1.CustomList in v1", "*resource_test.otherList in v1alpha1"}},
		{"a kind named like another resource's list kind",
			[]resource.Resource{install.Customs, customs("v1", withKind("CustomList", "customlists"))},
			[]string{"test/v1, Kind=CustomList", "already registered as Go type v1.CustomList", "resource_test.other"}},
		{"a list kind named like another resource's kind",
			[]resource.Resource{customs("v1", withKind("CustomList", "customlists")), customs("v1", withKind("Custom", "others"))},
			[]string{"test/v1, Kind=CustomList", "already registered as Go type resource_test.other", "resource_test.otherList"}},
		{"kind WatchEvent", []resource.Resource{customs("v1", withKind("WatchEvent", "watchevents"))},
			[]string{"Kind=WatchEvent", "v1.WatchEvent"}},
		{"kind WatchEvent after another kind of the version",
			[]resource.Resource{install.Customs, customs("v1", withKind("WatchEvent", "watchevents"))},
			[]string{"Kind=WatchEvent", "v1.WatchEvent"}},
		{"kind ListOptions", []resource.Resource{customs("v1", withKind("ListOptions", "listoptions"))},
			[]string{"Kind=ListOptions", "v1.ListOptions"}},
		{"kind Table of meta.k8s.io", []resource.Resource{customs("v1", func(r *resource.Resource) {
			withKind("Table", "tables")(r)
			r.GroupVersionKind.Group = "meta.k8s.io"
		})}, []string{"meta.k8s.io/v1, Kind=Table", "v1.Table"}},
		{"New returns nil", []resource.Resource{customs("v1", func(r *resource.Resource) {
			r.New = func() runtime.Object { return nil }
		})}, []string{"New() returns nil"}},
		{"New returns a nil pointer", []resource.Resource{customs("v1", func(r *resource.Resource) {
			r.New = func() runtime.Object { return (*testv1.Custom)(nil) }
			r.StatusSubresource = false
		})}, []string{"New() returns a nil *v1.Custom"}},
		{"NewList returns nil", []resource.Resource{customs("v1", func(r *resource.Resource) {
			r.NewList = func() runtime.Object { return nil }
		})}, []string{"NewList() returns nil"}},
		{"New returns a struct, not a pointer", []resource.Resource{customs("v1", func(r *resource.Resource) {
			r.New = func() runtime.Object { return byValue{&metav1.TypeMeta{}, &metav1.ObjectMeta{}} }
			r.StatusSubresource, r.SelectableFields = false, nil
		})}, []string{"resource_test.byValue, which is not a pointer to a struct"}},
		{"declared twice", []resource.Resource{install.Customs, install.Customs}, []string{"declared twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("NewScheme panicked: %v", p)
				}
			}()
			scheme, err := resource.NewScheme(tc.resources...)
			if len(tc.wantErr) != 0 {
				if err == nil {
					t.Fatalf("no error, want one containing %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Every version and the internal version know the kind as
			// its one Go type.
			for _, r := range tc.resources {
				gv := r.GroupVersionKind.GroupVersion()
				internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
				for _, gvk := range []schema.GroupVersionKind{
					r.GroupVersionKind, gv.WithKind(r.ListKind()), internal.WithKind(r.GroupVersionKind.Kind), internal.WithKind(r.ListKind()),
				} {
					obj, err := scheme.New(gvk)
					if err != nil {
						t.Fatalf("%s: %v", gvk, err)
					}
					want := r.New()
					if strings.HasSuffix(gvk.Kind, "List") {
						want = r.NewList()
					}
					if reflect.TypeOf(obj) != reflect.TypeOf(want) {
						t.Errorf("%s is %T, want %T", gvk, obj, want)
					}
				}
			}
		})
	}
}

// otherVersion declares other as version name of install.Customs, with
// conversions (Spec is spec.message) registered when convert is set.
func otherVersion(name string, convert bool, mutate func(v *resource.Version)) resource.Resource {
	r := install.Customs
	r.StatusSubresource = false // other has no status
	v := resource.Version{
		Name:    name,
		New:     func() runtime.Object { return &other{} },
		NewList: func() runtime.Object { return &otherList{} },
	}
	if convert {
		v.AddToScheme = []func(*runtime.Scheme) error{addOtherConversions}
	}
	if mutate != nil {
		mutate(&v)
	}
	r.Versions = []resource.Version{v}
	return r
}

// addOtherConversions converts other to and from testv1.Custom (for the
// declaration tests: the generated conversions of a real version are
// conversion-gen's).
func addOtherConversions(s *runtime.Scheme) error {
	for _, f := range []struct {
		a, b any
		fn   func(a, b any, _ conversion.Scope) error
	}{
		{(*other)(nil), (*testv1.Custom)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*other), b.(*testv1.Custom)
			out.ObjectMeta, out.Spec.Message = in.ObjectMeta, in.Spec
			return nil
		}},
		{(*testv1.Custom)(nil), (*other)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*testv1.Custom), b.(*other)
			out.ObjectMeta, out.Spec = in.ObjectMeta, in.Spec.Message
			return nil
		}},
		{(*otherList)(nil), (*testv1.CustomList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*otherList), b.(*testv1.CustomList)
			out.ListMeta, out.Items = in.ListMeta, make([]testv1.Custom, len(in.Items))
			for i := range in.Items {
				out.Items[i].ObjectMeta, out.Items[i].Spec.Message = in.Items[i].ObjectMeta, in.Items[i].Spec
			}
			return nil
		}},
		{(*testv1.CustomList)(nil), (*otherList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*testv1.CustomList), b.(*otherList)
			out.ListMeta, out.Items = in.ListMeta, make([]other, len(in.Items))
			for i := range in.Items {
				out.Items[i].ObjectMeta, out.Items[i].Spec = in.Items[i].ObjectMeta, in.Items[i].Spec.Message
			}
			return nil
		}},
	} {
		if err := s.AddConversionFunc(f.a, f.b, f.fn); err != nil {
			return err
		}
	}
	return nil
}

// TestNewSchemeVersions: a kind's Versions are registered with their
// conversions, the highest version is the group's preferred one, and a
// Version that could not be served is refused with an error naming it.
func TestNewSchemeVersions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource resource.Resource
		wantErr  []string // none: success
	}{
		{"a version with conversions", otherVersion("v1alpha1", true, nil), nil},
		{"a version without conversions", otherVersion("v1alpha1", false, nil),
			[]string{"version v1alpha1", "no conversion from *resource_test.other to *v1.Custom", "RegisterConversions"}},
		{"a version with the storage version's Go type", otherVersion("v1alpha1", true, func(v *resource.Version) {
			v.New = func() runtime.Object { return &testv1.Custom{} }
		}), []string{"version v1alpha1 has the storage version's Go type *v1.Custom"}},
		{"the storage version again", otherVersion("v1", true, nil), []string{`version "v1" is declared twice`}},
		{"the internal version", otherVersion(runtime.APIVersionInternal, true, nil), []string{`"__internal" is not a version`}},
		{"a version that is not a DNS label", otherVersion("V1", true, nil), []string{`version "V1"`}},
		{"a version without NewList", otherVersion("v1alpha1", true, func(v *resource.Version) { v.NewList = nil }),
			[]string{"version v1alpha1: New and NewList are required"}},
		{"AddToScheme fails", otherVersion("v1alpha1", true, func(v *resource.Version) {
			v.AddToScheme = append(v.AddToScheme, func(*runtime.Scheme) error { return errors.New("boom") })
		}), []string{"version v1alpha1: AddToScheme: boom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme, err := resource.NewScheme(tc.resource)
			if len(tc.wantErr) != 0 {
				if err == nil {
					t.Fatalf("no error, want one containing %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := scheme.PrioritizedVersionsForGroup("test"); len(got) != 2 || got[0].Version != "v1" || got[1].Version != "v1alpha1" {
				t.Errorf("version priority %v, want v1 then v1alpha1", got)
			}
			in := &other{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: "hello"}
			hub, err := scheme.ConvertToVersion(in, schema.GroupVersion{Group: "test", Version: runtime.APIVersionInternal})
			if err != nil {
				t.Fatal(err)
			}
			if c := hub.(*testv1.Custom); c.Name != "a" || c.Spec.Message != "hello" {
				t.Errorf("converted to %+v", c)
			}
			if got := tc.resource.ServedVersions(); !reflect.DeepEqual(got, []string{"v1", "v1alpha1"}) {
				t.Errorf("ServedVersions() = %v", got)
			}
		})
	}
}

// TestSortVersions: Kubernetes' version order, the preferred first.
func TestSortVersions(t *testing.T) {
	got := []string{"v1alpha1", "v2beta1", "foo", "v1", "v1beta2", "v2", "v1beta1", "v10"}
	resource.SortVersions(got)
	want := []string{"v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SortVersions = %v, want %v", got, want)
	}
}
