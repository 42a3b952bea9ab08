package relay

import (
	"bytes"
	"testing"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Codec encodes generated gogo-style messages with their own methods and
// protobuf-go messages as gRPC's "proto" codec does; both round-trip.
func TestCodec(t *testing.T) {
	obj := sample("codec")
	obj.Namespace, obj.UID, obj.ResourceVersion = "ns", "uid-1", "42"
	for _, tc := range []struct {
		name string
		in   any
		out  any
		want []byte // the encoding, as the message's own method gives it
	}{
		{"API type", obj, new(testv1.Custom), mustMarshal(t, obj)},
		{"request message", &WatchRequest{Namespace: "ns", ResourceVersion: "7", LabelSelector: "app=x"}, new(WatchRequest), nil},
		{"event with an object", &WatchEvent{Type: "ADDED", Object: obj}, new(WatchEvent), nil},
		{"protobuf-go message", wrapperspb.String("plain"), new(wrapperspb.StringValue), mustProto(t, wrapperspb.String("plain"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Codec{}.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			b := data.Materialize()
			data.Free()
			if tc.want != nil && !bytes.Equal(b, tc.want) {
				t.Errorf("encoding %x, want %x", b, tc.want)
			}
			if err := (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, tc.out); err != nil {
				t.Fatal(err)
			}
			again, err := Codec{}.Marshal(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			if b2 := again.Materialize(); !bytes.Equal(b2, b) {
				t.Errorf("decoded and encoded again %x, want %x", b2, b)
			}
		})
	}
	if _, err := (Codec{}).Marshal(struct{}{}); err == nil {
		t.Error("Marshal of a value that is no message: no error")
	}
}

func mustMarshal(t *testing.T, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustProto(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
