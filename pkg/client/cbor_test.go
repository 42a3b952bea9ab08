package client_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"

	"github.com/customapi/customapi/pkg/customapitest"
)

// cborManifest is an apply configuration of Custom name in CBOR, with the
// self-described CBOR tag first as k8s.io/apimachinery's serializer writes.
func cborManifest(t *testing.T, name string, replicas any) []byte {
	t.Helper()
	b, err := cbordirect.Marshal(map[string]any{
		"apiVersion": "test/v1", "kind": "Custom",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"enc": "cbor"}},
		"spec":     map[string]any{"message": "hello", "replicas": replicas},
	})
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{0xd9, 0xd9, 0xf7}, b...)
}

// TestApplyCBOR: the in-process door takes types.ApplyCBORPatchType as the
// HTTP server does, and refuses a number there as it refuses one in JSON: a
// value spec.replicas (int32) cannot hold is Invalid naming it, and nothing
// changes.
func TestApplyCBOR(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	out, err := e.c.Patch(ctx, "c1", types.ApplyCBORPatchType, cborManifest(t, "c1", int64(2)), metav1.PatchOptions{FieldManager: "cbor"})
	if err != nil {
		t.Fatalf("apply create: %v", err)
	}
	if out.Spec.Replicas != 2 || out.Labels["enc"] != "cbor" {
		t.Fatalf("applied %+v", out)
	}
	if mf := out.ManagedFields; len(mf) != 1 || mf[0].Manager != "cbor" || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managedFields %+v", mf)
	}
	before := e.snapshot(t)
	for _, v := range []any{int64(10000000000), int64(4294967297), int64(-2147483649), 1.5, "1"} {
		for _, name := range []string{"c1", "new"} { // update, create
			t.Run(name, func(t *testing.T) {
				_, err := e.c.Patch(ctx, name, types.ApplyCBORPatchType, cborManifest(t, name, v), metav1.PatchOptions{FieldManager: "cbor", Force: new(true)})
				st := customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
				customapitest.RequireCause(t, st, "spec.replicas")
				if after := e.snapshot(t); !equalMaps(before, after) {
					t.Fatalf("replicas %v: a refused apply changed etcd", v)
				}
			})
		}
	}
	if _, err := e.c.Patch(ctx, "c1", types.ApplyCBORPatchType, []byte{0xd9, 0xd9, 0xf7, 0xff}, metav1.PatchOptions{FieldManager: "cbor"}); err == nil {
		t.Fatal("a malformed CBOR body was applied")
	} else {
		customapitest.RequireReason(t, err, metav1.StatusReasonBadRequest)
	}
}
