// Package encodings tests customapi's wire encodings and Kubernetes' content
// negotiation against one shared server (TestMain) serving two kinds:
// customs (test/v1 Custom, whose types get generated protobuf marshallers)
// and devices (examples/fleet Device, which has none).
//
// Content negotiation is tested by TestNegotiationFallsBack (GET and LIST with
// Accept lists that fall back; TestTableNegotiation for kubectl's Table
// request), TestWatchNegotiation (watch Content-Type and a first event that
// decodes within a deadline: never an empty 200), TestNotAcceptable (406
// listing the served types), TestRequestBodies (JSON, YAML, CBOR and protobuf
// bodies on POST, PUT and apply-patch+cbor; a protobuf body for devices is 415
// and stores nothing), TestOpenAPIMediaTypes (the OpenAPI documents advertise
// per path what the resource serves) and the client tests (kubectl, client-go's
// dynamic client, the generated typed clientset over protobuf, client-go
// preferring CBOR). CBOR bodies whose integers do not fit the field are
// pkg/server's TestNumbersNeverNarrowed.
//
// TestKinds pins that customs has generated protobuf marshallers
// (resource.SupportsProtobuf) and devices has none.
//
//	go test ./test/encodings -count=1
package encodings
