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
//   - openapi-gen: zz_generated.model_name.go in each API package, and
//     <root>/generated/openapi/zz_generated.openapi.go holding the
//     definitions of the API packages and of meta/v1, runtime and version
//     (read-only inputs, as hack/update-codegen.sh used to pass by hand);
//   - applyconfiguration-gen, client-gen, lister-gen and informer-gen:
//     <root>/generated/{applyconfiguration,clientset/versioned,listers,informers},
//     the layout of k8s.io/client-go, for the types tagged +genclient.
//
// <root> is the directory holding the nearest "apis" directory above an API
// package (pkg/apis/test/v1 -> pkg/generated), or the module root when there
// is none.
//
// API packages are the packages matched by the patterns whose package
// comment carries +k8s:deepcopy-gen=package or +groupName. Before generating
// anything, Run refuses, naming the file and the fix, what would break later:
// a missing +groupName, +k8s:openapi-gen=true or +k8s:openapi-model-package
// tag, and a root type (one embedding metav1.TypeMeta with metav1.ObjectMeta
// or metav1.ListMeta) without
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object.
//
// Protobuf marshallers and .proto files (go-to-protobuf) are not generated
// yet; see Options.Protobuf.
package generate
