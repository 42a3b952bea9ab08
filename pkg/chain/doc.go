// Package chain is the HTTP handler chain of a customapi server: the
// filters customapi puts around k8s.io/apiserver's API handler and into its
// default chain, as functions of the generic server's configuration and a
// small Options, with no server state.
//
// From the outside in (Build):
//
//   - the request body's time bound: a body must arrive within
//     Options.RequestBodyTimeout (options.LimitOptions.RequestBodyTimeout) of the request, else 408 (a slow client
//     cannot hold a handler's goroutine for the request timeout);
//   - k8s.io/apiserver's DefaultBuildHandlerChain (panic recovery, audit,
//     authentication, impersonation, request info, timeouts), with its
//     max-in-flight filter replaced by Seats (read-only and mutating seats,
//     a LIST served from the watch cache priced by the copies it builds) and
//     its authorization step answered by customapi's own, which answers 503
//     when an authorizer cannot decide (upstream: 500);
//   - the number check: a CBOR or protobuf body, or a patch, with a number
//     the Go type cannot hold is 422 naming the field;
//   - deprecation warnings of deprecated versions;
//   - the reasons of failed /readyz, /livez and /healthz checks, for
//     clients allowed to read each check's own path.
package chain
