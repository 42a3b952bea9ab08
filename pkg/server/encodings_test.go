package server_test

import (
	"net/http"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
)

// protobufBody is obj in Kubernetes' protobuf envelope, with a second spec
// message appended that sets spec.replicas to the varint v: protobuf merges
// repeated embedded messages, so the decoded object takes v, which the
// generated Marshal could never write for an int32.
func protobufBody(t *testing.T, obj *testv1.Custom, v uint64) []byte {
	t.Helper()
	msg, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	spec := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), v)
	msg = protowire.AppendBytes(protowire.AppendTag(msg, 2, protowire.BytesType), spec)
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "test/v1", Kind: "Custom"}, Raw: msg}
	env, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), env...)
}

// twosComplement is the varint protobuf writes for a negative int32/int64.
func twosComplement(v int64) uint64 { return uint64(v) }

// TestProtobufNumbersNeverNarrowed is TestNumbersNeverNarrowed for
// protobuf bodies (the
// integers protobuf can carry; 1.5 and "1" have no varint form): a POST or
// PUT whose spec.replicas varint does not fit the int32 is 422 naming
// spec.replicas, where the generated Unmarshal would keep the low bits
// (10000000000 stored as 1410065408); nothing changes.
func TestProtobufNumbersNeverNarrowed(t *testing.T) {
	e := start(t)
	c1 := e.create(t, custom("c1"))
	before := e.snapshot(t)
	const protobuf = "application/vnd.kubernetes.protobuf"
	for _, v := range []struct {
		name   string
		varint uint64
	}{
		{"10000000000", 10000000000},
		{"4294967297", 4294967297},
		{"-2147483649", twosComplement(-2147483649)},
	} {
		for _, p := range []struct {
			method, path string
			obj          *testv1.Custom
		}{
			{http.MethodPost, e.customs(), custom("n1")},
			{http.MethodPut, e.customs() + "/c1", func() *testv1.Custom { c := custom("c1"); c.ResourceVersion = c1.ResourceVersion; return c }()},
		} {
			for _, dryRun := range []string{"", "?dryRun=All"} {
				t.Run(p.method+"/"+v.name+dryRun, func(t *testing.T) {
					r := e.do(t, request{method: p.method, path: p.path + dryRun, contentType: protobuf, accept: "application/json", body: protobufBody(t, p.obj, v.varint)})
					requireNamesField(t, r, "spec.replicas")
					e.requireUnchanged(t, before)
				})
			}
		}
	}
	t.Run("in range", func(t *testing.T) {
		r := e.do(t, request{method: http.MethodPost, path: e.customs() + "?dryRun=All", contentType: protobuf, accept: "application/json", body: protobufBody(t, custom("n1"), 2147483647)})
		requireCode(t, r, http.StatusCreated)
		if got := decodeCustom(t, r.body); got.Spec.Replicas != 2147483647 {
			t.Fatalf("replicas %d", got.Spec.Replicas)
		}
	})
}
