package encodings_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// requireProtobuf fails a protobuf case of a kind whose Go types have no
// generated protobuf marshallers.
func requireProtobuf(t *testing.T, k kind) {
	t.Helper()
	if !k.res.SupportsProtobuf() {
		t.Fatalf("%s: the Go types have no generated protobuf marshallers (Marshal/Unmarshal/Reset); run hack/update-codegen.sh", k.res.GroupVersionKind)
	}
}

// TestKinds pins what the two kinds under test are: customs with protobuf
// marshallers, devices without.
func TestKinds(t *testing.T) {
	requireProtobuf(t, customs)
	if devices.res.SupportsProtobuf() {
		t.Fatalf("%s has protobuf marshallers: the tests need a kind without", devices.res.GroupVersionKind)
	}
}

// servesProtobuf says what the kind should answer to a protobuf Accept.
func servesProtobuf(k kind) bool { return k.res.SupportsProtobuf() }

// TestNegotiationFallsBack: for GET and LIST, an Accept list
// with a fallback always gets an encoding the resource supports, with a
// Content-Type saying which.
func TestNegotiationFallsBack(t *testing.T) {
	for _, k := range []kind{customs, devices} {
		t.Run(k.name, func(t *testing.T) {
			collection := k.collection(t)
			name := uniqueName(t, "neg")
			create(t, collection, k.object(name))
			protobufOrJSON := jsonType
			if servesProtobuf(k) {
				protobufOrJSON = protobufType
			}
			for _, tc := range []struct {
				accept, want string
			}{
				{protobufType + ", " + jsonType, protobufOrJSON}, // client-go's default for protobuf clients
				{protobufType + ";q=0.9, " + jsonType + ";q=0.5", protobufOrJSON},
				{"*/*", jsonType},
				{"", jsonType},
				{cborType + ", " + jsonType, cborType},
				{jsonType + ";q=0.9, " + cborType, cborType}, // client-go's dynamic client with ClientsAllowCBOR
				{cborType, cborType},
				{yamlType, yamlType},
				{"text/html, " + jsonType, jsonType},
			} {
				for _, target := range []struct {
					verb, path, kind string
				}{
					{"GET", collection + "/" + name, k.res.GroupVersionKind.Kind},
					{"LIST", collection + "?labelSelector=app%3De1", k.res.ListKind()},
				} {
					t.Run(fmt.Sprintf("%s/Accept=%s", target.verb, tc.accept), func(t *testing.T) {
						r := do(t, request{method: http.MethodGet, path: target.path, accept: tc.accept})
						if r.code != http.StatusOK {
							t.Fatalf("HTTP %d: %s", r.code, abbreviate(r.body))
						}
						if got := mediaType(t, r.contentType); got != tc.want {
							t.Fatalf("Content-Type %q, want %s", r.contentType, tc.want)
						}
						obj := decode(t, r, target.kind)
						if target.verb == "GET" {
							if got := obj.(metav1.Object).GetName(); got != name {
								t.Fatalf("name %q, want %q", got, name)
							}
							return
						}
						items, err := meta.ExtractList(obj)
						if err != nil {
							t.Fatal(err)
						}
						found := false
						for _, it := range items {
							found = found || it.(metav1.Object).GetName() == name
						}
						if !found {
							t.Fatalf("list of %d items lacks %s", len(items), name)
						}
					})
				}
			}
		})
	}
}

// TestWatchNegotiation: for WATCH, the stream's Content-Type
// names its encoding and framing, and its first event decodes in it, so a
// watch never answers 200 with an empty body.
func TestWatchNegotiation(t *testing.T) {
	for _, k := range []kind{customs, devices} {
		t.Run(k.name, func(t *testing.T) {
			collection := k.collection(t)
			name := uniqueName(t, "watch")
			create(t, collection, k.object(name))
			protobufOrJSON := jsonType
			if servesProtobuf(k) {
				protobufOrJSON = protobufType + ";stream=watch"
			}
			for _, tc := range []struct {
				accept, want string
			}{
				{protobufType + ", " + jsonType, protobufOrJSON},
				{"*/*", jsonType},
				{cborType + ", " + jsonType, cborSeqType},
				{cborType, cborSeqType},
				{jsonType, jsonType},
			} {
				t.Run("Accept="+tc.accept, func(t *testing.T) {
					path := collection + "?watch=true&resourceVersion=0&fieldSelector=metadata.name%3D" + name
					ev := firstWatchEvent(t, path, tc.accept, tc.want)
					if ev.Type != "ADDED" {
						t.Fatalf("first event %s, want ADDED", ev.Type)
					}
					if got := ev.Object.(metav1.Object).GetName(); got != name {
						t.Fatalf("event for %q, want %q", got, name)
					}
				})
			}
			if k.name != customs.name {
				return // devices: protobuf alone is TestNotAcceptable's 406
			}
			t.Run("protobuf only", func(t *testing.T) {
				requireProtobuf(t, k)
				path := collection + "?watch=true&resourceVersion=0&fieldSelector=metadata.name%3D" + name
				ev := firstWatchEvent(t, path, protobufType, protobufType+";stream=watch")
				if got := ev.Object.(metav1.Object).GetName(); got != name {
					t.Fatalf("event for %q, want %q", got, name)
				}
			})
		})
	}
}

// TestNotAcceptable: 406 when nothing acceptable exists, and the
// Status lists what the resource serves; protobuf alone is accepted only
// for a type with marshallers.
func TestNotAcceptable(t *testing.T) {
	name := uniqueName(t, "na")
	create(t, devices.collection(t), devices.object(name))
	for _, tc := range []struct {
		what, path, accept string
		lists              []string
	}{
		{"GET protobuf", devices.collection(t) + "/" + name, protobufType, []string{jsonType, yamlType, cborType}},
		{"LIST protobuf", devices.collection(t), protobufType, []string{jsonType, yamlType, cborType}},
		{"WATCH protobuf", devices.collection(t) + "?watch=true", protobufType, []string{jsonType, cborSeqType}},
		{"GET text/html", devices.collection(t) + "/" + name, "text/html", []string{jsonType, yamlType, cborType}},
		// As in kube-apiserver: go-restful matches a route's media types
		// exactly or */*, so application/* finds none.
		{"GET application/*", devices.collection(t) + "/" + name, "application/*", []string{jsonType, yamlType, cborType}},
		// As in kube-apiserver: a watch is negotiated against the
		// serializers' media types (application/cbor) and answered as
		// application/cbor-seq; asking for the sequence type is a 406.
		{"WATCH cbor-seq", devices.collection(t) + "?watch=true", cborSeqType, []string{jsonType, yamlType, cborType}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			r := do(t, request{method: http.MethodGet, path: tc.path, accept: tc.accept})
			if r.code != http.StatusNotAcceptable {
				t.Fatalf("HTTP %d (%s), want 406: %s", r.code, r.contentType, abbreviate(r.body))
			}
			st := statusOf(t, r)
			if st.Reason != metav1.StatusReasonNotAcceptable || st.Code != http.StatusNotAcceptable {
				t.Fatalf("Status %d %s: %s", st.Code, st.Reason, st.Message)
			}
			requireListsTypes(t, st.Message, tc.lists...)
			if strings.Contains(st.Message, protobufType) {
				t.Errorf("message %q offers protobuf for a type without marshallers", st.Message)
			}
		})
	}
	t.Run("customs GET protobuf", func(t *testing.T) {
		requireProtobuf(t, customs)
		c := customs.collection(t)
		create(t, c, customs.object("pb"))
		r := do(t, request{method: http.MethodGet, path: c + "/pb", accept: protobufType})
		if r.code != http.StatusOK || mediaType(t, r.contentType) != protobufType {
			t.Fatalf("HTTP %d %s: %s", r.code, r.contentType, abbreviate(r.body))
		}
		if got := decode(t, r, "Custom").(metav1.Object).GetName(); got != "pb" {
			t.Fatalf("name %q", got)
		}
	})
}

// TestRequestBodies: every served encoding is
// accepted on POST, PUT and server-side apply (CBOR as
// application/apply-patch+cbor); a protobuf body for a type without
// marshallers is 415 listing the supported types, and nothing is stored.
func TestRequestBodies(t *testing.T) {
	for _, k := range []kind{customs, devices} {
		t.Run(k.name, func(t *testing.T) {
			collection := k.collection(t)
			bodyTypes := []string{jsonType, yamlType, cborType}
			if servesProtobuf(k) {
				bodyTypes = append(bodyTypes, protobufType)
			}
			for _, ct := range bodyTypes {
				t.Run(ct, func(t *testing.T) {
					name := uniqueName(t, "body")
					obj := k.object(name)
					r := do(t, request{method: http.MethodPost, path: collection, body: encodeAs(t, obj, ct), contentType: ct, accept: ct})
					if r.code != http.StatusCreated {
						t.Fatalf("POST: HTTP %d: %s", r.code, abbreviate(r.body))
					}
					if got := mediaType(t, r.contentType); got != ct {
						t.Fatalf("POST answered in %s, want %s", got, ct)
					}
					stored := decode(t, r, k.res.GroupVersionKind.Kind)
					stored.(metav1.Object).SetLabels(map[string]string{"app": "e1", "put": "yes"})
					stored.GetObjectKind().SetGroupVersionKind(k.res.GroupVersionKind)
					r = do(t, request{method: http.MethodPut, path: collection + "/" + name, body: encodeAs(t, stored, ct), contentType: ct, accept: ct})
					if r.code != http.StatusOK {
						t.Fatalf("PUT: HTTP %d: %s", r.code, abbreviate(r.body))
					}
					if got := decode(t, r, k.res.GroupVersionKind.Kind).(metav1.Object).GetLabels()["put"]; got != "yes" {
						t.Fatalf("PUT did not take: labels %v", got)
					}
				})
			}
			t.Run("apply-patch+cbor", func(t *testing.T) {
				name := uniqueName(t, "apply")
				for i, label := range []string{"one", "two"} { // create, then update
					obj := k.object(name)
					obj.(metav1.Object).SetLabels(map[string]string{"app": "e1", "applied": label})
					r := do(t, request{method: http.MethodPatch, path: collection + "/" + name + "?fieldManager=e1", body: encodeAs(t, obj, cborType), contentType: applyCBOR, accept: jsonType})
					want := http.StatusOK
					if i == 0 {
						want = http.StatusCreated
					}
					if r.code != want {
						t.Fatalf("apply %d: HTTP %d, want %d: %s", i, r.code, want, abbreviate(r.body))
					}
					got := decode(t, r, k.res.GroupVersionKind.Kind).(metav1.Object)
					if got.GetLabels()["applied"] != label {
						t.Fatalf("apply %d: labels %v", i, got.GetLabels())
					}
					if mf := got.GetManagedFields(); len(mf) == 0 || mf[0].Manager != "e1" || mf[0].Operation != metav1.ManagedFieldsOperationApply {
						t.Fatalf("apply %d: managedFields %+v", i, mf)
					}
				}
			})
		})
	}
	t.Run("devices protobuf body", func(t *testing.T) {
		name := uniqueName(t, "pb")
		// A protobuf envelope around the object's JSON: what a client
		// without the type's marshallers could send at best; the server
		// must refuse it by Content-Type before looking inside.
		body := append([]byte{0x6b, 0x38, 0x73, 0x00}, encodeAs(t, devices.object(name), jsonType)...)
		for _, tc := range []struct{ method, path string }{
			{http.MethodPost, devices.collection(t)},
			{http.MethodPut, devices.collection(t) + "/" + name},
		} {
			r := do(t, request{method: tc.method, path: tc.path, body: body, contentType: protobufType})
			if r.code != http.StatusUnsupportedMediaType {
				t.Fatalf("%s: HTTP %d, want 415: %s", tc.method, r.code, abbreviate(r.body))
			}
			st := statusOf(t, r)
			if st.Reason != metav1.StatusReasonUnsupportedMediaType {
				t.Fatalf("%s: reason %s: %s", tc.method, st.Reason, st.Message)
			}
			requireListsTypes(t, st.Message, jsonType, yamlType, cborType)
			if strings.Contains(st.Message, "supported media types: ["+protobufType) || strings.Contains(st.Message, ", "+protobufType) {
				t.Errorf("message %q lists protobuf as supported", st.Message)
			}
		}
		if r := do(t, request{method: http.MethodGet, path: devices.collection(t) + "/" + name}); r.code != http.StatusNotFound {
			t.Fatalf("GET after the refused bodies: HTTP %d, want 404: %s", r.code, abbreviate(r.body))
		}
	})
}

// TestTableNegotiation: kubectl's table request (protobuf Table first,
// then JSON Table, then JSON) answers a JSON Table for both kinds: as in
// kube-apiserver, Tables are served in JSON and YAML only
// (RequestScope.AllowsMediaTypeTransform), so the list falls back.
func TestTableNegotiation(t *testing.T) {
	const accept = protobufType + ";as=Table;v=v1;g=meta.k8s.io," + jsonType + ";as=Table;v=v1;g=meta.k8s.io," + jsonType
	for _, k := range []kind{customs, devices} {
		t.Run(k.name, func(t *testing.T) {
			collection := k.collection(t)
			create(t, collection, k.object(uniqueName(t, "table")))
			r := do(t, request{method: http.MethodGet, path: collection, accept: accept})
			if r.code != http.StatusOK {
				t.Fatalf("HTTP %d: %s", r.code, abbreviate(r.body))
			}
			if mt := mediaType(t, r.contentType); mt != jsonType {
				t.Fatalf("Content-Type %q, want %s", r.contentType, jsonType)
			}
			if !strings.Contains(string(r.body), `"kind":"Table"`) {
				t.Fatalf("not a Table: %s", abbreviate(r.body))
			}
		})
	}
}
