package numbers_test

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/numbers"
)

// customMessage builds the protobuf message of a Custom by hand, so that
// its varints may exceed what the Go fields hold (the generated Marshal
// could not write those).
func customMessage(t *testing.T, replicas uint64, ports ...uint64) []byte {
	t.Helper()
	meta, err := (&metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"a": "b"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var spec []byte
	spec = protowire.AppendTag(spec, 1, protowire.BytesType)
	spec = protowire.AppendString(spec, "hello")
	spec = protowire.AppendTag(spec, 2, protowire.VarintType)
	spec = protowire.AppendVarint(spec, replicas)
	for i, p := range ports {
		var port []byte
		port = protowire.AppendTag(port, 1, protowire.BytesType)
		port = protowire.AppendString(port, "p"+string(rune('0'+i)))
		port = protowire.AppendTag(port, 2, protowire.VarintType)
		port = protowire.AppendVarint(port, p)
		spec = protowire.AppendTag(spec, 3, protowire.BytesType)
		spec = protowire.AppendBytes(spec, port)
	}
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendBytes(msg, meta)
	msg = protowire.AppendTag(msg, 2, protowire.BytesType)
	msg = protowire.AppendBytes(msg, spec)
	return msg
}

// negative is the varint of a negative int64, as protobuf encodes an int32.
func negative(v int64) uint64 { return uint64(v) }

func TestCheckProtobuf(t *testing.T) {
	custom := reflect.TypeFor[*testv1.Custom]()
	for _, tc := range []struct {
		name string
		msg  []byte
		want []string // fields refused
	}{
		{"in range", customMessage(t, 2147483647, 80), nil},
		{"negative in range", customMessage(t, negative(-2147483648)), nil},
		{"10000000000", customMessage(t, 10000000000), []string{"spec.replicas"}},
		{"4294967297", customMessage(t, 4294967297), []string{"spec.replicas"}},
		{"-2147483649", customMessage(t, negative(-2147483649)), []string{"spec.replicas"}},
		{"a port of the list", customMessage(t, 1, 80, 1<<40), []string{"spec.ports[1].port"}},
		{"truncated message", customMessage(t, 10000000000)[:5], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := numbers.CheckProtobuf(nil, tc.msg, custom)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("refused %v (%v), want %v", got, errs, tc.want)
			}
		})
	}
	// What the generated Marshal writes always passes, and decodes as built.
	obj := &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c1", Generation: 3}, Spec: testv1.CustomSpec{Replicas: -5, Ports: []testv1.CustomPort{{Name: "a", Port: 1}}},
		Status: testv1.CustomStatus{ObservedGeneration: 1 << 40}}
	b, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if errs := numbers.CheckProtobuf(nil, b, custom); len(errs) != 0 {
		t.Fatalf("a generated encoding refused: %v", errs)
	}
	// Why the check exists: the generated Unmarshal keeps the low 32 bits.
	var back testv1.Custom
	if err := back.Unmarshal(customMessage(t, 10000000000)); err != nil || back.Spec.Replicas != 1410065408 {
		t.Fatalf("generated Unmarshal: replicas %d, err %v; it no longer narrows silently", back.Spec.Replicas, err)
	}
}
