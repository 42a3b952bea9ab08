package storage

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/resource"
)

// writtenCodecs returns, for mediaType, the storage codec of samples as
// GetRESTOptions builds it (with writtenValues) and the same codec without
// it, the reference.
func writtenCodecs(t testing.TB, mediaType string) (codec, plain runtime.Codec) {
	t.Helper()
	scheme, err := resource.NewScheme(benchinstall.Samples)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Config{Etcd: etcd.ClientConfig{Endpoints: []string{"http://127.0.0.1:2379"}}, MediaType: mediaType}.getter(scheme)
	if err != nil {
		t.Fatal(err)
	}
	gr := schema.GroupResource{Group: "bench.customapi.io", Resource: "samples"}
	opts, err := g.GetRESTOptions(gr, &benchv1.Sample{})
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err = serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  mediaType,
		StorageSerializer: g.codecs,
		StorageVersion:    schema.GroupVersion(benchv1.GroupVersion),
		MemoryVersion:     schema.GroupVersion{Group: gr.Group, Version: runtime.APIVersionInternal},
	})
	if err != nil {
		t.Fatal(err)
	}
	return opts.StorageConfig.Codec, plain
}

// TestWrittenParsedOnce: a value the codec encoded is remembered, its first
// decode keeps an object, and its second takes that object (the entry is
// then gone); a value it did not encode is not remembered.
func TestWrittenParsedOnce(t *testing.T) {
	scheme, err := resource.NewScheme(benchinstall.Samples)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Config{Etcd: etcd.ClientConfig{Endpoints: []string{"http://127.0.0.1:2379"}}}.getter(scheme)
	if err != nil {
		t.Fatal(err)
	}
	cfg := serverstorage.StorageCodecConfig{
		StorageMediaType:  runtime.ContentTypeJSON,
		StorageSerializer: g.codecs,
		StorageVersion:    schema.GroupVersion(benchv1.GroupVersion),
		MemoryVersion:     schema.GroupVersion{Group: benchv1.GroupName, Version: runtime.APIVersionInternal},
	}
	values := parseOnce(&cfg)
	codec, _, err := serverstorage.NewStorageCodec(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, err := runtime.Encode(codec, writtenSamples()[0])
	if err != nil {
		t.Fatal(err)
	}
	entry := func() *writtenValue {
		values.mu.Lock()
		defer values.mu.Unlock()
		return values.entries[string(data)]
	}
	if v := entry(); v == nil || v.obj != nil {
		t.Fatalf("after the encode: entry %+v, want one without an object", v)
	}
	if _, _, err := codec.Decode(data, nil, &benchv1.Sample{}); err != nil {
		t.Fatal(err)
	}
	v := entry()
	if v == nil || v.obj == nil {
		t.Fatalf("after the first decode: entry %+v, want one with an object", v)
	}
	kept := v.obj
	got, _, err := codec.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != kept {
		t.Fatal("the second decode parsed instead of taking the kept object")
	}
	if entry() != nil {
		t.Fatal("the value is still remembered after its second decode")
	}
	other, err := runtime.Encode(codec, writtenSamples()[1])
	if err != nil {
		t.Fatal(err)
	}
	values.mu.Lock()
	delete(values.entries, string(other))
	values.mu.Unlock()
	if _, _, err := codec.Decode(other, nil, nil); err != nil {
		t.Fatal(err)
	}
	if values.has(other) {
		t.Fatal("a value not encoded by the codec was remembered")
	}
}

var writtenMediaTypes = []string{runtime.ContentTypeJSON, runtime.ContentTypeCBOR, runtime.ContentTypeProtobuf, runtime.ContentTypeYAML}

// writtenSamples are the objects the tests write: full (labels, managed
// fields, a timestamp with nanoseconds, which JSON keeps to the second),
// minimal, and with empty but non-nil maps and slices.
func writtenSamples() []*benchv1.Sample {
	now := metav1.NewTime(time.Date(2026, 12, 5, 5, 20, 1, 123456789, time.UTC))
	return []*benchv1.Sample{
		{
			TypeMeta: metav1.TypeMeta{APIVersion: "bench.customapi.io/v1", Kind: "Sample"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "full", Namespace: "ns", UID: "u-1", Generation: 3, CreationTimestamp: now,
				Labels:      map[string]string{"a": "1", "b": "2"},
				Annotations: map[string]string{"note": "x"},
				Finalizers:  []string{"f"},
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "m", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "bench.customapi.io/v1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:numbers":{}}}`),
				}},
			},
			Spec: benchv1.SampleSpec{Strings: []string{"s", ""}, Numbers: []int64{-1, 0, 1 << 40}},
		},
		{TypeMeta: metav1.TypeMeta{APIVersion: "bench.customapi.io/v1", Kind: "Sample"}, ObjectMeta: metav1.ObjectMeta{Name: "minimal"}},
		{
			TypeMeta:   metav1.TypeMeta{APIVersion: "bench.customapi.io/v1", Kind: "Sample"},
			ObjectMeta: metav1.ObjectMeta{Name: "empty", Labels: map[string]string{}, Finalizers: []string{}},
			Spec:       benchv1.SampleSpec{Strings: []string{}, Numbers: []int64{}},
		},
	}
}

// TestWrittenDecodeDifferential: the two decodes of a written value (the
// store's, into a new object, and the watch cache's, into nothing), in
// either order, return exactly what the codec without writtenValues
// returns, in every storage encoding; a change to the first result does not
// reach the second; a decode into a non-zero object, or with a default
// kind, is the plain one.
func TestWrittenDecodeDifferential(t *testing.T) {
	for _, mt := range writtenMediaTypes {
		codec, plain := writtenCodecs(t, mt)
		for _, obj := range writtenSamples() {
			for _, order := range []string{"into first", "nil first"} {
				t.Run(fmt.Sprintf("%s/%s/%s", mt, obj.Name, order), func(t *testing.T) {
					data, err := runtime.Encode(codec, obj.DeepCopy())
					if err != nil {
						t.Fatal(err)
					}
					wantInto, _, err := plain.Decode(data, nil, &benchv1.Sample{})
					if err != nil {
						t.Fatal(err)
					}
					wantNil, _, err := plain.Decode(data, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					decodeInto := func() runtime.Object {
						into := &benchv1.Sample{}
						got, _, err := codec.Decode(data, nil, into)
						if err != nil {
							t.Fatal(err)
						}
						if got != into {
							t.Fatalf("decode into %p returned another object %p", into, got)
						}
						return got
					}
					decodeNil := func() runtime.Object {
						got, _, err := codec.Decode(data, nil, nil)
						if err != nil {
							t.Fatal(err)
						}
						return got
					}
					first, second := decodeInto, decodeNil
					wantFirst, wantSecond := wantInto, wantNil
					if order == "nil first" {
						first, second = decodeNil, decodeInto
						wantFirst, wantSecond = wantNil, wantInto
					}
					got1 := first()
					if !reflect.DeepEqual(got1, wantFirst) {
						t.Fatalf("first decode:\n got %#v\nwant %#v", got1, wantFirst)
					}
					s := got1.(*benchv1.Sample)
					s.Name = "changed"
					if s.Labels != nil {
						s.Labels["a"] = "changed"
					}
					if len(s.ManagedFields) > 0 {
						s.ManagedFields[0].FieldsV1.GetRawBytes()[0] = 'X'
					}
					if len(s.Spec.Numbers) > 0 {
						s.Spec.Numbers[0] = 42
					}
					got2 := second()
					if !reflect.DeepEqual(got2, wantSecond) {
						t.Fatalf("second decode:\n got %#v\nwant %#v", got2, wantSecond)
					}
					// A third decode parses again (the value was forgotten) and
					// gives the same.
					if got3 := decodeNil(); !reflect.DeepEqual(got3, wantNil) {
						t.Fatalf("third decode:\n got %#v\nwant %#v", got3, wantNil)
					}
				})
			}
		}
		t.Run(mt+"/non-zero into", func(t *testing.T) {
			data, err := runtime.Encode(codec, writtenSamples()[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := codec.Decode(data, nil, nil); err != nil { // the first decode
				t.Fatal(err)
			}
			nonZero := func() *benchv1.Sample {
				return &benchv1.Sample{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kept": "if merged"}}}
			}
			want, _, err := plain.Decode(data, nil, nonZero())
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := codec.Decode(data, nil, nonZero())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decode into a non-zero object:\n got %#v\nwant %#v", got, want)
			}
			gvk := schema.GroupVersion(benchv1.GroupVersion).WithKind("Sample")
			want, _, err = plain.Decode(data, &gvk, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, _, err = codec.Decode(data, &gvk, nil); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("decode with a default kind: %v\n got %#v\nwant %#v", err, got, want)
			}
		})
	}
}

// TestWrittenDecodeConcurrent runs writes' two decodes at once, from two
// goroutines each (with -race in CI), and checks every result against the
// plain codec.
func TestWrittenDecodeConcurrent(t *testing.T) {
	codec, plain := writtenCodecs(t, runtime.ContentTypeJSON)
	const writes = 200
	var wg sync.WaitGroup
	errs := make(chan error, 2*writes)
	for i := range writes {
		obj := writtenSamples()[0]
		obj.Name = fmt.Sprintf("s-%d", i)
		obj.Labels["i"] = fmt.Sprint(i)
		data, err := runtime.Encode(codec, obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, into := range []bool{true, false} {
			var target func() runtime.Object
			if into {
				target = func() runtime.Object { return &benchv1.Sample{} }
			} else {
				target = func() runtime.Object { return nil }
			}
			want, _, err := plain.Decode(data, nil, target())
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				got, _, err := codec.Decode(data, nil, target())
				switch {
				case err != nil:
					errs <- err
				case !reflect.DeepEqual(got, want):
					errs <- fmt.Errorf("%s, into %v: got %#v, want %#v", obj.Name, into, got, want)
				default:
					got.(*benchv1.Sample).Labels["changed"] = "by the caller"
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWrittenValuesBytes: the values remembered hold at most
// writtenMaxBytes, the oldest forgotten first, and a value over
// writtenMaxValue is not remembered.
func TestWrittenValuesBytes(t *testing.T) {
	w := newWrittenValues()
	value := func(i int) []byte { return fmt.Appendf(bytes.Repeat([]byte{'x'}, 60<<10), "%d", i) }
	const n = 3 * writtenMaxBytes / (60 << 10)
	for i := range n {
		w.wrote(value(i))
		if w.bytes > writtenMaxBytes {
			t.Fatalf("after %d values: %d bytes remembered, more than %d", i+1, w.bytes, writtenMaxBytes)
		}
	}
	sum := 0
	for k := range w.entries {
		sum += len(k)
	}
	if sum != w.bytes {
		t.Fatalf("the count says %d bytes, the entries hold %d", w.bytes, sum)
	}
	if !w.has(value(n-1)) || w.has(value(0)) {
		t.Fatal("not the newest values remembered")
	}
	w.wrote(bytes.Repeat([]byte{'y'}, writtenMaxValue+1))
	if w.has(bytes.Repeat([]byte{'y'}, writtenMaxValue+1)) {
		t.Fatal("a value over writtenMaxValue was remembered")
	}
}

// TestWrittenValuesBound: values never decoded twice are forgotten
// oldest first, at writtenCapacity; a value decoded twice is forgotten at
// once.
func TestWrittenValuesBound(t *testing.T) {
	w := newWrittenValues()
	for i := range 3 * writtenCapacity {
		w.wrote(fmt.Appendf(nil, "value %d", i))
	}
	if n := len(w.entries); n != writtenCapacity {
		t.Fatalf("%d values remembered, want %d", n, writtenCapacity)
	}
	if w.has([]byte("value 0")) || !w.has(fmt.Appendf(nil, "value %d", 3*writtenCapacity-1)) {
		t.Fatal("not the newest values remembered")
	}
	last := fmt.Appendf(nil, "value %d", 3*writtenCapacity-1)
	w.decoded(last, &benchv1.Sample{}, schema.GroupVersionKind{})
	if obj, _, ok := w.lookup(last); !ok || obj == nil {
		t.Fatal("the decoded value was not found")
	}
	if w.has(last) {
		t.Fatal("a value decoded twice is still remembered")
	}
	if want := (writtenCapacity - 1) * len(last); w.bytes != want {
		t.Fatalf("%d bytes counted, want %d", w.bytes, want)
	}
}
