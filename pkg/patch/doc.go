// Package patch computes the object a patch request produces, as
// kube-apiserver's patch handler (k8s.io/apiserver's handlers/patch.go)
// does with its patchers, without HTTP and without storage: For checks a
// patch body and returns a Mechanism, the function that turns the stored
// object into the patched one, for each patch type the API server serves:
//
//   - JSON patch (RFC 6902, upstream's jsonPatcher), at most 10000
//     operations;
//   - merge patch (RFC 7386, jsonPatcher as well), applied to the object's
//     JSON and decoded into its Go type;
//   - strategic merge patch (smpPatcher), with the Go type's patchStrategy
//     and patchMergeKey tags as its schema;
//   - server-side apply of a YAML or CBOR manifest (applyPatcher), the
//     field manager merging it into the object.
//
// Field validation (Strict, Warn, Ignore) decides what an unknown or
// duplicate field does, with warnings sent to the context's recorder
// (k8s.io/apiserver/pkg/warning); numbers the Go type cannot hold exactly
// are refused (pkg/numbers), as the HTTP server's number filter refuses
// them. Errors are Status errors (k8s.io/apimachinery/pkg/api/errors) with
// the codes kube-apiserver answers.
//
// Running a Mechanism inside a store's update (the missing object, the
// apply that creates it, the checks of name and namespace, the retry on a
// conflict) is the caller's: pkg/registry's Store.Patch and Store.Apply.
// DedupWarnings keeps the warnings of such retries from repeating. ToJSON
// is the JSON form of a patch body that upstream records in audit events.
//
// See the Example (example_test.go; it runs as a test).
package patch
