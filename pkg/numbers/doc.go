// Package numbers checks the numbers of a request body against the Go type
// it will be decoded into, so that every door and every encoding refuses a
// number the type cannot hold, where some of k8s.io/apimachinery's decoders
// would narrow it silently:
//
//   - Check walks a body decoded without a type (server-side apply,
//     strategic merge patch, any JSON, YAML or CBOR body decoded into
//     map[string]any): runtime.DefaultUnstructuredConverter stores
//     10000000000 into an int32 as 1410065408, where a typed JSON decode
//     (sigs.k8s.io/json) refuses it;
//   - CheckYAML is Check for a JSON or YAML body, decoded keeping each
//     number's literal;
//   - CheckCBOR is Check for a CBOR body, walked in place and decoded
//     only when a number does not fit;
//   - CheckProtobuf walks a protobuf message: go-to-protobuf's generated
//     Unmarshal keeps a varint's low bits.
//
// All report field.Invalid errors at the fields' JSON paths
// (spec.replicas), which the callers turn into 422 Invalid: the HTTP
// server's number filter (pkg/server) and the in-process patch and apply
// (pkg/patch).
package numbers
