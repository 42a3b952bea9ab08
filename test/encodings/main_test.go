package encodings_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"

	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/resource"
)

// Media types of the wire.
const (
	jsonType     = "application/json"
	yamlType     = "application/yaml"
	cborType     = "application/cbor"
	cborSeqType  = "application/cbor-seq"
	protobufType = "application/vnd.kubernetes.protobuf"
	applyCBOR    = "application/apply-patch+cbor"
	applyYAML    = "application/apply-patch+yaml"
)

// shared serves customs (test/v1 Custom, with generated protobuf
// marshallers once pkg/apis/test/v1 has them) and devices (fleet Device,
// without), started by TestMain.
var shared *customapitest.Server

// codecs decodes every encoding the server may answer in, for both kinds.
var codecs serializer.CodecFactory

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	scheme, err := resource.NewScheme(install.Customs, fleetapi.Devices)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	codecs = serializer.NewCodecFactory(scheme, serializer.WithSerializer(cbor.NewSerializerInfo))
	return customapitest.Main(m, customapitest.Options{}, func(s *customapitest.Server) error {
		shared = s
		return nil
	}, install.Customs, fleetapi.Devices)
}

// kind is one served resource as the tests see it.
type kind struct {
	name       string
	res        resource.Resource
	collection func(t *testing.T) string // a collection of the test's own
	object     func(name string) runtime.Object
}

// customs has protobuf marshallers when pkg/apis/test/v1 generates them.
var customs = kind{
	name: "customs",
	res:  install.Customs,
	collection: func(t *testing.T) string {
		return "/apis/test/v1/namespaces/" + customapitest.Namespace(t) + "/customs"
	},
	object: func(name string) runtime.Object {
		return &testv1.Custom{
			TypeMeta:   metav1.TypeMeta{APIVersion: "test/v1", Kind: "Custom"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "e1"}},
			Spec:       testv1.CustomSpec{Message: "hello", Replicas: 1, Ports: []testv1.CustomPort{{Name: "http", Port: 80}}},
		}
	},
}

// devices is cluster-scoped and never has protobuf marshallers; names are
// made unique per test by the callers.
var devices = kind{
	name:       "devices",
	res:        fleetapi.Devices,
	collection: func(*testing.T) string { return "/apis/fleet.example.com/v1alpha1/devices" },
	object: func(name string) runtime.Object {
		return &fleetv1alpha1.Device{
			TypeMeta:   metav1.TypeMeta{APIVersion: "fleet.example.com/v1alpha1", Kind: "Device"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "e1"}},
			Spec:       fleetv1alpha1.DeviceSpec{Model: "m1", Firmware: "1.0"},
		}
	},
}

// uniqueName returns a DNS label unique to the test (devices are
// cluster-scoped, so tests cannot rely on namespaces to separate them).
func uniqueName(t *testing.T, prefix string) string {
	ns := customapitest.Namespace(t)
	return prefix + "-" + ns[len(ns)-8:]
}

// request is one HTTP request; path includes the query.
type request struct {
	method      string
	path        string
	body        []byte
	contentType string
	accept      string
}

// response is an answer, its body read whole.
type response struct {
	code        int
	contentType string
	body        []byte
}

func do(t *testing.T, r request) response {
	t.Helper()
	resp := open(t, t.Context(), r)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	return response{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}
}

// open sends r and returns the response with its body unread.
func open(t *testing.T, ctx context.Context, r request) *http.Response {
	t.Helper()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, shared.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	resp, err := shared.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return resp
}

// mediaType is the media type of a Content-Type without parameters.
func mediaType(t *testing.T, contentType string) string {
	t.Helper()
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("Content-Type %q: %v", contentType, err)
	}
	return mt
}

// serializerFor returns the test's serializer of the media type.
func serializerFor(t *testing.T, mt string) runtime.SerializerInfo {
	t.Helper()
	if mt == cborSeqType {
		mt = cborType
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
	if !ok {
		t.Fatalf("no serializer for %q", mt)
	}
	return info
}

// decode decodes an answer in the encoding its Content-Type names,
// failing the test unless it is one object (or list) of the wanted kind.
func decode(t *testing.T, r response, wantKind string) runtime.Object {
	t.Helper()
	info := serializerFor(t, mediaType(t, r.contentType))
	obj, gvk, err := info.Serializer.Decode(r.body, nil, nil)
	if err != nil {
		t.Fatalf("decode %s answer (HTTP %d): %v; body: %q", r.contentType, r.code, err, abbreviate(r.body))
	}
	if gvk.Kind != wantKind {
		t.Fatalf("decoded %s, want %s", gvk, wantKind)
	}
	return obj
}

// encodeAs encodes obj in the media type.
func encodeAs(t *testing.T, obj runtime.Object, mt string) []byte {
	t.Helper()
	info := serializerFor(t, mt)
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		t.Fatalf("encode %T as %s: %v", obj, mt, err)
	}
	return buf.Bytes()
}

// create POSTs obj as JSON into the collection and returns it as stored.
func create(t *testing.T, collection string, obj runtime.Object) runtime.Object {
	t.Helper()
	r := do(t, request{method: http.MethodPost, path: collection, body: encodeAs(t, obj, jsonType), contentType: jsonType, accept: jsonType})
	if r.code != http.StatusCreated {
		t.Fatalf("create: HTTP %d: %s", r.code, abbreviate(r.body))
	}
	return decode(t, r, obj.GetObjectKind().GroupVersionKind().Kind)
}

// watchEvent is one decoded event of a watch.
type watchEvent struct {
	Type   string
	Object runtime.Object
}

// firstWatchEvent opens a watch, checks its answer and Content-Type, and
// decodes its first event in that encoding within 20 s: a watch that
// answers 200 and then nothing fails the test.
func firstWatchEvent(t *testing.T, path, accept, wantContentType string) watchEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp := open(t, ctx, request{method: http.MethodGet, path: path, accept: accept})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch: HTTP %d: %s", resp.StatusCode, abbreviate(body))
	}
	if got := resp.Header.Get("Content-Type"); got != wantContentType {
		t.Fatalf("watch Content-Type %q, want %q", got, wantContentType)
	}
	info := serializerFor(t, mediaType(t, wantContentType))
	if info.StreamSerializer == nil {
		t.Fatalf("%s has no stream serializer", wantContentType)
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(resp.Body)
	dec := streaming.NewDecoder(frames, info.StreamSerializer.Serializer)
	var ev metav1.WatchEvent
	got, _, err := dec.Decode(nil, &ev)
	if err != nil {
		if errors.Is(err, io.EOF) {
			t.Fatalf("watch (%s) answered 200 and ended without an event", wantContentType)
		}
		t.Fatalf("watch (%s): decode first event: %v", wantContentType, err)
	}
	if got != &ev {
		t.Fatalf("decoded %T, want a WatchEvent", got)
	}
	obj, _, err := info.Serializer.Decode(ev.Object.Raw, nil, nil)
	if err != nil {
		t.Fatalf("watch (%s): decode the %s event's object: %v", wantContentType, ev.Type, err)
	}
	return watchEvent{Type: ev.Type, Object: obj}
}

// statusOf decodes a JSON or CBOR Status answer.
func statusOf(t *testing.T, r response) *metav1.Status {
	t.Helper()
	obj := decode(t, r, "Status")
	st, ok := obj.(*metav1.Status)
	if !ok {
		t.Fatalf("decoded %T, want a Status", obj)
	}
	return st
}

func abbreviate(b []byte) string {
	const max = 1000
	if len(b) > max {
		return fmt.Sprintf("%s... (%d bytes)", b[:max], len(b))
	}
	return string(b)
}

// requireListsTypes fails unless msg names every media type.
func requireListsTypes(t *testing.T, msg string, types ...string) {
	t.Helper()
	for _, mt := range types {
		if !strings.Contains(msg, mt) {
			t.Errorf("message %q does not list %s", msg, mt)
		}
	}
}
