// Package relay (directory examples/grpc) is a small gRPC service whose
// messages are a user's generated API types: it relays Get and Watch of
// customs.test/v1 objects from a customapi registry to gRPC clients, in
// any language, with the same protobuf encoding the HTTP API server uses
// for application/vnd.kubernetes.protobuf.
//
// The design, one piece per file:
//
//   - relay.proto defines the service. Its messages import the .proto file
//     customapi-gen generates for the API package
//     (github.com/customapi/customapi/pkg/apis/test/v1/generated.proto,
//     go-to-protobuf conventions: field numbers recorded in the Go struct
//     tags), so Get returns the Custom message itself and Watch streams
//     WatchEvent{type, object Custom}. Nothing about the objects is
//     redefined.
//   - relay.pb.go (stubs and request messages) is generated, never written
//     by hand: `customapi-gen protoc -I . --gogo_out=plugins=grpc,paths=source_relative:. relay.proto`
//     (hack/update-codegen.sh runs it; hack/verify-codegen.sh checks it),
//     customapi-gen's pure-Go protoc with gogo's generator and its grpc
//     plugin, which compile against google.golang.org/grpc v1.83
//     (grpc.SupportPackageIsVersion4 is still supported). The gogoproto
//     options in relay.proto give the request messages Marshal and
//     Unmarshal methods like the API types'; they change nothing on the
//     wire. relay.pb.go imports github.com/gogo/protobuf/proto for its
//     registration boilerplate only (the API types do not).
//   - codec.go: gRPC's default codec takes protobuf-go (APIv2) messages
//     only; Codec encodes with the messages' own Marshal/Unmarshal
//     methods. It is installed per server (grpc.ForceServerCodecV2) and per
//     connection (grpc.ForceCodecV2), not by replacing the global "proto"
//     codec, which the in-process etcd client of the registry uses.
//     The wire format stays standard protobuf (content type
//     application/grpc+proto): a client with protobuf-go messages built
//     from the .proto files, or in another language, needs no Codec (the
//     tests show one built with protocompile and dynamicpb).
//   - server.go: Server implements the service with the typed in-process
//     client (pkg/client) on the registry, the same path the HTTP API
//     server's requests take; NewGRPCServer builds a grpc.Server with it.
//     Watch sends its response headers once the registry watch is
//     established, so clients know when their writes will be seen.
//   - status.go: registry errors (Kubernetes Status) become gRPC status
//     codes (StatusError): NotFound, InvalidArgument, Aborted, OutOfRange
//     for an expired resourceVersion, ...
//   - client.go: Dial, a Go client with Codec installed.
//   - cmd/relay: a main that serves on 127.0.0.1:8090 with an embedded
//     etcd, and get and watch commands using Dial.
//
// The example serves plaintext gRPC without authentication, on loopback;
// a real service adds grpc.Creds and an interceptor that authorizes calls.
//
//	srv, err := relay.NewGRPCServer(reg) // reg from registry.Open(ctx, cfg, install.Customs)
//	...
//	go srv.Serve(lis)
//	c, err := relay.Dial(lis.Addr().String())
//	obj, err := c.Get(ctx, &relay.GetRequest{Namespace: "default", Name: "example"})
package relay
