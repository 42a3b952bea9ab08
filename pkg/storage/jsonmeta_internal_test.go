package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
)

// metaBodies are JSON values whose apiVersion and kind jsonMeta must
// read exactly as json.SimpleMetaFactory does, by its fast path or not.
var metaBodies = []string{
	`{"kind":"Custom","apiVersion":"test/v1","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"replicas":3,"f":-1.5e+3,"l":[true,false,null,[],{}]}}`,
	`{"apiVersion":"v1","kind":"ConfigMap"}`,
	` 	{ "kind" : "K" , "apiVersion" : "g/v" } 
`,
	`{}`,
	`{"kind":"K"}`,
	`{"apiVersion":"g/v"}`,
	`{"kind":"A","kind":"B"}`,
	`{"kind":"A","KIND":"B"}`,
	`{"Kind":"A","kind":"B"}`,
	`{"apiversion":"g/v","kind":"K"}`,
	`{"kind":"\u004b"}`,
	`{"k\u0069nd":"K"}`,
	`{"kind":"K\n"}`,
	`{"kind":"Kä"}`,
	"{\"kind\":\"K\xff\"}",
	"{\"x\":\"\xff\xfe\",\"kind\":\"K\"}",
	"{\"x\":\"a\x01\",\"kind\":\"K\"}",
	`{"kind":null,"apiVersion":"v1"}`,
	`{"kind":"K","kind":null}`,
	`{"kind":5}`,
	`{"kind":["K"]}`,
	`{"apiVersion":"a/b/c","kind":"K"}`,
	`{"apiVersion":"/v1","kind":"K"}`,
	`{"x":01}`, `{"x":-}`, `{"x":1.}`, `{"x":1e}`, `{"x":.5}`, `{"x":-0.0e-0}`, `{"x":1E+99999}`,
	`{"x":tru}`, `{"x":truex}`, `{"x":nul}`, `{"x":"\x"}`, `{"x":"\u12"}`, `{"x":"\u12G4"}`, `{"x":"\ud800"}`,
	`{"x":[1,]}`, `{"x":[,1]}`, `{"x":{"a":1,}}`, `{"x":{"a"}}`, `{"x":{1:2}}`, `{,}`, `{"kind":"K",}`,
	`{"kind":"K"}x`, `{"kind":"K"} {}`, `{"kind":"K"`, `{"kind"`, `{"kind":`, `{`, ``, ` `, `null`, `[]`,
	`"kind"`, `5`, "\ufeff{\"kind\":\"K\"}", `{"kind":"K"}` + "\x00",
	`{"a":{"b":{"c":[[[{"kind":"inner"}]]]}},"kind":"outer"}`,
	`{"x":"\"\\\/\b\f\n\r\t\u00e9","kind":"K"}`,
	strings.Repeat("[", 2000) + strings.Repeat("]", 2000),
	`{"x":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `,"kind":"K"}`,
	`{"x":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `,"kind":"K"}`,
}

// TestJSONMetaDifferential: for every body, jsonMeta gives what
// SimpleMetaFactory gives, value and error; and where its fast path
// answers, SimpleMetaFactory succeeds with the same strings.
func TestJSONMetaDifferential(t *testing.T) {
	fast := 0
	for _, body := range metaBodies {
		if checkJSONMeta(t, []byte(body)) {
			fast++
		}
	}
	if fast < 8 {
		t.Errorf("the fast path answered for %d bodies, want at least the 8 plain ones", fast)
	}
}

// FuzzJSONMeta is TestJSONMetaDifferential on generated bodies:
// go test ./pkg/storage -run XXX -fuzz FuzzJSONMeta -fuzztime 60s.
func FuzzJSONMeta(f *testing.F) {
	for _, body := range metaBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkJSONMeta(t, body) })
}

// checkJSONMeta compares jsonMeta with SimpleMetaFactory on body and
// reports whether the fast path answered.
func checkJSONMeta(t *testing.T, body []byte) bool {
	t.Helper()
	want, wantErr := jsonserializer.DefaultMetaFactory.Interpret(body)
	got, gotErr := jsonMeta{}.Interpret(body)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
		t.Errorf("Interpret(%q) = %v, %v; SimpleMetaFactory gives %v, %v", body, got, gotErr, want, wantErr)
	}
	// SimpleMetaFactory's own first step.
	var typeMeta struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	unmarshalErr := json.Unmarshal(body, &typeMeta)
	apiVersion, kind, ok := scanTypeMeta(body)
	if ok && (unmarshalErr != nil || kind != typeMeta.Kind || apiVersion != typeMeta.APIVersion) {
		t.Errorf("scanTypeMeta(%q) = %q, %q; encoding/json gives %q, %q, %v", body, apiVersion, kind, typeMeta.APIVersion, typeMeta.Kind, unmarshalErr)
	}
	return ok
}

// TestStorageSerializerJSON: the storage serializer's JSON serializers
// decode and encode as the codec factory's (the same object in, the same
// bytes out), and the other media types are the factory's.
func TestStorageSerializerJSON(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := testv1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme, serializer.WithSerializer(cbor.NewSerializerInfo))
	s := newStorageSerializer(codecs, scheme)
	if got, want := len(s.SupportedMediaTypes()), len(codecs.SupportedMediaTypes()); got != want {
		t.Fatalf("%d media types, want the factory's %d", got, want)
	}
	ours, _ := runtime.SerializerInfoForMediaType(s.SupportedMediaTypes(), runtime.ContentTypeJSON)
	theirs, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	body := []byte(metaBodies[0])
	for _, pair := range []struct {
		name      string
		got, want runtime.Serializer
	}{{"serializer", ours.Serializer, theirs.Serializer}, {"strict", ours.StrictSerializer, theirs.StrictSerializer}} {
		got, gotGVK, gotErr := pair.got.Decode(body, nil, &testv1.Custom{})
		want, wantGVK, wantErr := pair.want.Decode(body, nil, &testv1.Custom{})
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotGVK, wantGVK) {
			t.Errorf("%s: decoded %v %v %v, the factory's %v %v %v", pair.name, got, gotGVK, gotErr, want, wantGVK, wantErr)
		}
		var a, b bytes.Buffer
		if err := pair.got.Encode(want, &a); err != nil {
			t.Fatal(err)
		}
		if err := pair.want.Encode(want, &b); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s: encoded %s, the factory's %s", pair.name, a.String(), b.String())
		}
	}
	for _, mt := range []string{runtime.ContentTypeYAML, runtime.ContentTypeProtobuf, runtime.ContentTypeCBOR} {
		got, _ := runtime.SerializerInfoForMediaType(s.SupportedMediaTypes(), mt)
		want, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
		if got.Serializer != want.Serializer {
			t.Errorf("%s: serializer %T, want the factory's", mt, got.Serializer)
		}
	}
}

// BenchmarkJSONMeta compares the type lookup of a stored object:
// go test ./pkg/storage -run XXX -bench JSONMeta -benchmem.
func BenchmarkJSONMeta(b *testing.B) {
	body := []byte(metaBodies[0])
	for _, bc := range []struct {
		name string
		mf   jsonserializer.MetaFactory
	}{{"simple", jsonserializer.DefaultMetaFactory}, {"scan", jsonMeta{}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := bc.mf.Interpret(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
