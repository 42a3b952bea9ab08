package storage

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
)

// internSample is a sample as a server stores it: ten labels, an
// annotation, an owner, a finalizer and one managedFields entry.
func internSample(name string) *benchv1.Sample {
	s := &benchv1.Sample{
		TypeMeta: metav1.TypeMeta{APIVersion: "bench.customapi.io/v1", Kind: "Sample"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "scale", UID: types.UID("5ca1e000-0000-4000-8000-" + name), Labels: map[string]string{},
			Annotations:     map[string]string{"example.com/note": "kept"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "test/v1", Kind: "Custom", Name: "owner", UID: "u-owner"}},
			Finalizers:      []string{"example.com/cleanup"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "Go-http-client", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "bench.customapi.io/v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:bench.customapi.io/label-0":{}}},"f:spec":{"f:numbers":{},"f:strings":{}}}`),
			}},
		},
		Spec: benchv1.SampleSpec{Strings: []string{"string value number 0"}, Numbers: []int64{1000000, 1000001}},
	}
	for i := range 10 {
		s.Labels[fmt.Sprintf("bench.customapi.io/label-%d", i)] = fmt.Sprintf("value-%d", i)
	}
	return s
}

// Interning changes no value, in any storage encoding (the codec the
// options build against one without it), and two decoded objects share
// their repeated metadata: the namespace, finalizers, owner kinds, managed
// fields' strings and field sets; their labels stay their own (the
// objects a decode returns may be changed: only the watch cache shares
// label maps, cacheAttrs).
func TestInternMetadata(t *testing.T) {
	for _, mt := range writtenMediaTypes {
		t.Run(mt, func(t *testing.T) {
			codec, plain := writtenCodecs(t, mt)
			var objs []*benchv1.Sample
			for _, name := range []string{"a", "b"} {
				data, err := k8sruntime.Encode(plain, internSample(name))
				if err != nil {
					t.Fatal(err)
				}
				want, _, err := plain.Decode(data, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := codec.Decode(data, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !equality.Semantic.DeepEqual(got, want) {
					t.Fatalf("interned %s differs:\n%#v\nwant\n%#v", name, got, want)
				}
				objs = append(objs, got.(*benchv1.Sample))
			}
			a, b := objs[0], objs[1]
			same := func(what, x, y string) {
				if unsafe.StringData(x) != unsafe.StringData(y) {
					t.Errorf("%s: two copies", what)
				}
			}
			same("namespace", a.Namespace, b.Namespace)
			a.Labels["changed"] = "a"
			if _, ok := b.Labels["changed"]; ok {
				t.Error("the labels of two decoded objects are one map")
			}
			same("manager", a.ManagedFields[0].Manager, b.ManagedFields[0].Manager)
			same("finalizer", a.Finalizers[0], b.Finalizers[0])
			same("owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind)
			if &a.ManagedFields[0].FieldsV1.GetRawBytes()[0] != &b.ManagedFields[0].FieldsV1.GetRawBytes()[0] {
				t.Error("field sets: two copies")
			}
		})
	}
}

// The watch cache's objects with equal labels share one map, its keys
// and values interned; other label sets get maps of their own; the
// labels cacheAttrs returns are the object's.
func TestCacheAttrs(t *testing.T) {
	attrs := cacheAttrs(func(obj k8sruntime.Object) (labels.Set, fields.Set, error) {
		return labels.Set(obj.(*benchv1.Sample).Labels), nil, nil
	})
	a, b, c := internSample("a"), internSample("b"), internSample("c")
	c.Labels["extra"] = "label"
	want := maps.Clone(a.Labels)
	var sets []labels.Set
	for _, s := range []*benchv1.Sample{a, b, c} {
		l, _, err := attrs(s)
		if err != nil {
			t.Fatal(err)
		}
		if reflect.ValueOf(l).UnsafePointer() != reflect.ValueOf(s.Labels).UnsafePointer() {
			t.Fatalf("%s: the labels returned are not the object's", s.Name)
		}
		sets = append(sets, l)
	}
	if !maps.Equal(a.Labels, want) {
		t.Fatalf("labels changed: %v, want %v", a.Labels, want)
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("equal label sets: two maps")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(c.Labels).UnsafePointer() {
		t.Error("different label sets: one map")
	}
	if len(sets[2]) != len(want)+1 {
		t.Errorf("c's labels: %v", sets[2])
	}
}

// BenchmarkCachedObjectBytes reports the live heap of a sample as a watch
// cache holds it (bytes/object: decoded, and for "interned" with the
// cache's shared labels too) and the decode time, in JSON and protobuf.
func BenchmarkCachedObjectBytes(b *testing.B) {
	for _, mt := range []string{k8sruntime.ContentTypeJSON, k8sruntime.ContentTypeProtobuf} {
		codec, plain := writtenCodecs(b, mt)
		data, err := k8sruntime.Encode(plain, internSample("scale-00000001"))
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name  string
			codec k8sruntime.Codec
		}{{"plain", plain}, {"interned", codec}} {
			b.Run(fmt.Sprintf("%s/%s", mediaName(mt), c.name), func(b *testing.B) {
				const keep = 10000
				objs := make([]k8sruntime.Object, keep)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				attrs := cacheAttrs(func(k8sruntime.Object) (labels.Set, fields.Set, error) { return nil, nil, nil })
				for i := range keep {
					if objs[i], _, err = c.codec.Decode(data, nil, nil); err != nil {
						b.Fatal(err)
					}
					if c.name == "interned" {
						if _, _, err := attrs(objs[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				live := float64(after.HeapAlloc-before.HeapAlloc) / keep
				runtime.KeepAlive(objs)
				for i := 0; b.Loop(); i++ {
					if objs[i%keep], _, err = c.codec.Decode(data, nil, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(live, "live-B/object")
			})
		}
	}
}

// mediaName is the short name of a storage media type, for benchmark names.
func mediaName(mt string) string {
	switch mt {
	case k8sruntime.ContentTypeJSON:
		return "json"
	case k8sruntime.ContentTypeProtobuf:
		return "protobuf"
	}
	return mt
}
