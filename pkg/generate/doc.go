// Package generate is the logic of cmd/customapi-gen: one command that
// generates, for the API packages of any Go module, everything customapi and
// Go clients in other processes need from them.
//
// It runs Kubernetes' own generators in-process through their Go packages,
// at the versions pinned by customapi's go.mod (k8s.io/code-generator and
// k8s.io/kube-openapi), so a user's module needs nothing but a requirement
// on customapi:
//
//   - register-gen: zz_generated.register.go (GroupName, SchemeGroupVersion,
//     AddToScheme), unless the package declares AddToScheme itself;
//   - deepcopy-gen: zz_generated.deepcopy.go;
//   - defaulter-gen, for packages tagged +k8s:defaulter-gen=TypeMeta:
//     zz_generated.defaults.go (RegisterDefaults and SetObjectDefaults_*,
//     from the +default markers and the package's SetDefaults_* functions);
//   - conversion-gen, for packages tagged +k8s:conversion-gen=<import path
//     of the storage version's package>: zz_generated.conversion.go
//     (RegisterConversions, the Convert_* functions and the autoConvert_*
//     ones the hand-written Convert_* of renamed or split fields call).
//     A Convert_* function that code calls and the package does not
//     declare is written once, as a stub that calls autoConvert_* and
//     returns an error naming the fields conversion-gen left out, into a
//     new conversion.go (conversion_2.go, ... if that exists), which Run
//     never rewrites or removes; conversion-gen then runs again to see it.
//     With Verify a missing one is reported as a missing file;
//   - for the same packages, when the hub is among the API packages of the
//     run: zz_generated.roundtrip_test.go, TestConversionRoundTrip, which
//     fuzzes each kind both packages declare (apimachinery's
//     apitesting/roundtrip and fuzzer) through hub -> version -> JSON ->
//     hub, version -> hub -> version and version -> JSON -> version, with
//     the package's roundTripFuzzerFuncs (declared in one of its _test.go
//     files) when there is one;
//   - openapi-gen: zz_generated.model_name.go in each API package, and
//     <root>/generated/openapi/zz_generated.openapi.go holding the
//     definitions of the API packages and of meta/v1, runtime and version
//     (read-only inputs, as hack/update-codegen.sh used to pass by hand);
//   - go-to-protobuf (k8s.io/code-generator), only for packages also tagged
//     +k8s:protobuf-gen=package: generated.proto and generated.pb.go in the
//     package (Marshal, MarshalToSizedBuffer, Size, Unmarshal, Reset, as for
//     k8s.io/api's types), and a protobuf:"<wire type>,<number>,..." tag on each
//     field of the package's Go files. The numbers are read back from those
//     tags on every run, so they are stable: never renumber a field. No
//     protoc is needed: see RunHelperIfInvoked;
//   - applyconfiguration-gen, client-gen, lister-gen and informer-gen:
//     <root>/generated/{applyconfiguration,clientset/versioned,listers,informers},
//     the layout of k8s.io/client-go, for the types tagged +genclient.
//
// With Options.CRDDir it also writes, after the code, a
// CustomResourceDefinition YAML per kind with sigs.k8s.io/controller-tools'
// CRD generator (see CRDs and WriteCRDs).
//
// <root> is the directory holding the nearest "apis" directory above an API
// package (pkg/apis/test/v1 -> pkg/generated), or the module root when there
// is none.
//
// API packages are the packages matched by the patterns whose package
// comment carries +k8s:deepcopy-gen=package or +groupName. Before generating
// anything, Run refuses, naming the file and the fix, what would break later:
// a missing +groupName, +k8s:openapi-gen=true or +k8s:openapi-model-package
// tag, a root type (one embedding metav1.TypeMeta with metav1.ObjectMeta
// or metav1.ListMeta) without
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object,
// and a +k8s:conversion-gen tag naming no package.
// In packages tagged +k8s:protobuf-gen=package it also refuses the field
// types protobuf cannot carry, on which go-to-protobuf would exit or write
// code that does not compile: int, uint and uintptr (use int32 or int64),
// 8- and 16-bit integers, complex numbers, arrays, lists of lists, maps of
// lists such as map[string][]string (use a named list type tagged
// +protobuf.nullable=true, as k8s.io/api's ExtraValue), maps of maps,
// interfaces, channels, funcs, anonymous structs, generic types, time.Time
// and time.Duration (use metav1.Time and metav1.Duration), and types of
// packages without protobuf definitions.
//
// go-to-protobuf runs last, in a child process, on a copy of the module
// (symbolic links, with real copies of the protobuf packages holding the
// code just generated), with an import-path tree of the module,
// k8s.io/apimachinery and github.com/gogo/protobuf for its protoc search
// path; its output and rewritten struct tags join the other generated files,
// so --verify covers them too.
package generate
