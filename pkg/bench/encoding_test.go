package bench

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	benchinstall "github.com/customapi/customapi/pkg/apis/bench/install"
	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// encodings are the formats of the encode/decode benchmarks: name and
// media type (the serializers of the bench codecs).
var encodings = []struct{ name, mediaType string }{
	{"json", runtime.ContentTypeJSON},
	{"cbor", runtime.ContentTypeCBOR},
	{"protobuf", runtime.ContentTypeProtobuf},
	{"yaml", runtime.ContentTypeYAML},
}

// storedSample is the benchmark object as a GET answers it: the bench
// sample with the fields the server sets (uid, resourceVersion,
// generation, creationTimestamp and the managedFields entry of its
// create).
func storedSample() *sample {
	gvk := benchinstall.Samples.GroupVersionKind
	s := newSample(gvk.GroupVersion().String(), gvk.Kind, nsList, "l-00000")
	s.UID = types.UID("6a1b7c3e-0f52-4d8e-9a47-1c2d3e4f5a6b")
	s.ResourceVersion = "123456"
	s.Generation = 1
	s.CreationTimestamp = metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	fields := `{"f:metadata":{"f:labels":{".":{}`
	for k := range s.Labels {
		fields += `,"f:` + k + `":{}`
	}
	fields += `}},"f:spec":{"f:numbers":{},"f:strings":{}}}`
	s.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: "customapi", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: s.APIVersion,
		Time: &s.CreationTimestamp, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields),
	}}
	return s
}

// serializerFor returns the raw serializer of a media type in the codecs
// the HTTP targets use, skipping protobuf while Sample has no generated
// marshallers.
func serializerFor(tb testing.TB, mediaType string) runtime.Serializer {
	tb.Helper()
	if mediaType == runtime.ContentTypeProtobuf {
		if err := wireEncodings[2].prepare(); err != nil {
			tb.Skip(err)
		}
	}
	codecs := codecsFor(benchinstall.Samples.GroupVersionKind.GroupVersion(), "Sample")
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		tb.Fatalf("no serializer for %s", mediaType)
	}
	return info.Serializer
}

// encode returns obj encoded by ser.
func encode(tb testing.TB, ser runtime.Serializer, obj runtime.Object) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := ser.Encode(obj, &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkEncode encodes the benchmark object per format
// (go test ./pkg/bench -run XXX -bench Encode); B/object is the encoded
// size.
func BenchmarkEncode(b *testing.B) {
	for _, e := range encodings {
		b.Run(e.name, func(b *testing.B) {
			ser := serializerFor(b, e.mediaType)
			obj := storedSample()
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := ser.Encode(obj, &buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "B/object")
		})
	}
}

// BenchmarkDecode decodes the encoded benchmark object per format into a
// typed Sample.
func BenchmarkDecode(b *testing.B) {
	for _, e := range encodings {
		b.Run(e.name, func(b *testing.B) {
			ser := serializerFor(b, e.mediaType)
			data := encode(b, ser, storedSample())
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ser.Decode(data, nil, &benchv1.Sample{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "B/object")
		})
	}
}

// Every format round-trips the benchmark object (what the benchmarks
// measure is a faithful encoding).
func TestEncodingsRoundTrip(t *testing.T) {
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			ser := serializerFor(t, e.mediaType)
			want := storedSample()
			got := &benchv1.Sample{}
			if _, _, err := ser.Decode(encode(t, ser, want), nil, got); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Labels, got.Spec, got.UID, got.ResourceVersion, got.CreationTimestamp.UTC()) !=
				fmt.Sprint(want.Labels, want.Spec, want.UID, want.ResourceVersion, want.CreationTimestamp.UTC()) {
				t.Errorf("round trip changed the object:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestEtcdValueSizes stores the benchmark object through the in-process
// client in every storage media type on a real etcd and reports the size
// of its value in etcd (go test ./pkg/bench -run EtcdValueSizes -v).
// Protobuf is skipped, with the reason, while Sample has no generated
// marshallers.
func TestEtcdValueSizes(t *testing.T) {
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: filepath.Join(t.TempDir(), "etcd")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := e.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	var report strings.Builder
	jsonSize := 0
	for i, mt := range storage.MediaTypes {
		if mt == runtime.ContentTypeProtobuf {
			if err := wireEncodings[2].prepare(); err != nil {
				fmt.Fprintf(&report, "%-36s skipped: %v\n", mt, err)
				continue
			}
		}
		prefix := fmt.Sprintf("/size-%d", i)
		target, err := newInprocessAt(t.Context(), e.ClientConfig(), prefix, mt)
		if err != nil {
			t.Fatalf("%s: %v", mt, err)
		}
		obj := storedSample()
		obj.ResourceVersion, obj.UID, obj.CreationTimestamp = "", "", metav1.Time{}
		if _, err := target.Create(t.Context(), nsList, obj.Name, obj); err != nil {
			t.Fatalf("%s: create: %v", mt, err)
		}
		v, err := storedValue(t.Context(), cli, prefix, nsList, obj.Name)
		_ = target.Close()
		if err != nil {
			t.Fatalf("%s: %v", mt, err)
		}
		if mt == runtime.ContentTypeJSON {
			jsonSize = len(v)
		}
		fmt.Fprintf(&report, "%-36s %4d bytes (%.2fx JSON)\n", mt, len(v), float64(len(v))/float64(jsonSize))
	}
	t.Log("etcd value of the benchmark object per storage encoding:\n" + report.String())
}
