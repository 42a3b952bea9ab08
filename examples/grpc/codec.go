package relay

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Codec is the gRPC codec of the Relay service: it encodes messages with
// their own generated methods, Marshal() ([]byte, error) and
// Unmarshal([]byte) error, which customapi-gen (go-to-protobuf) generates
// for API types such as testv1.Custom and gogo's generator for the
// messages of relay.proto. gRPC's default codec only takes protobuf-go
// (APIv2) messages, which those are not. The bytes are standard protobuf,
// so the content type stays application/grpc(+proto) and clients in any
// language, or Go clients with the default codec and protobuf-go messages
// built from the .proto files, interoperate.
//
// Values without those methods (protobuf-go messages, such as gRPC's own
// health or reflection services) go to the codec registered for "proto".
//
// Install it per server and per connection, not globally, since the
// in-process etcd client uses gRPC too: grpc.ForceServerCodecV2(Codec{})
// (NewGRPCServer does) and grpc.WithDefaultCallOptions(grpc.ForceCodecV2(Codec{}))
// (Dial does).
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// marshaler and unmarshaler are the methods of generated gogo-style
// messages.
type marshaler interface {
	Marshal() ([]byte, error)
}

type unmarshaler interface {
	Unmarshal([]byte) error
}

// Name is "proto": the wire format is protobuf's, so the content-subtype
// is the standard one.
func (Codec) Name() string { return proto.Name }

// Marshal encodes v with its Marshal method, or with the "proto" codec.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(marshaler)
	if !ok {
		return fallback().Marshal(v)
	}
	b, err := m.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", v, err)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

// Unmarshal decodes data into v with its Unmarshal method, or with the
// "proto" codec. Generated Unmarshal methods copy what they keep (strings
// and bytes), so data is not referenced after it returns, as gRPC
// requires.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(unmarshaler)
	if !ok {
		return fallback().Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if err := m.Unmarshal(buf.ReadOnlyData()); err != nil {
		return fmt.Errorf("unmarshal %T: %w", v, err)
	}
	return nil
}

func fallback() encoding.CodecV2 { return encoding.GetCodecV2(proto.Name) }
