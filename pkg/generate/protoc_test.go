package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const commonProto = `syntax = "proto3";
package widgets.common;
option go_package = "example.com/widgets/common";

message Selector {
  string label_selector = 1;
}
`

// svcProto imports apimachinery's and the module's own .proto files by Go
// import path, as relay.proto in examples/grpc does.
const svcProto = `syntax = "proto3";
package widgets.svc;
import "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";
import "example.com/widgets/common/common.proto";
option go_package = "example.com/widgets/svc";

message Query {
  widgets.common.Selector selector = 1;
  k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta like = 2;
}

service Widgets {
  rpc Find(Query) returns (k8s.io.apimachinery.pkg.apis.meta.v1.Status);
  rpc Follow(Query) returns (stream k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent);
}
`

// TestProtoc runs `customapi-gen protoc` in a fresh module: with no protoc
// installed it resolves imports of k8s.io/apimachinery and of the module's
// own .proto files by Go import path, writes the messages and, with
// plugins=grpc, the gRPC stubs, and the module then builds against the
// google.golang.org/grpc customapi requires. Bad command lines and broken
// files are errors naming the problem.
func TestProtoc(t *testing.T) {
	bin := customapiGen(t)
	dir := newModule(t, map[string]string{
		"common/common.proto": commonProto,
		"svc/svc.proto":       svcProto,
		"bad/bad.proto":       "syntax = \"proto3\";\nimport \"example.com/widgets/missing.proto\";\n",
	})
	// Named with a slash: generated next to the file (source_relative).
	if out, err := run(t, dir, bin, "protoc", "--gogo_out=.", "common/common.proto"); err != nil {
		t.Fatalf("protoc common: %v\n%s", err, out)
	}
	if out, err := run(t, filepath.Join(dir, "svc"), bin, "protoc", "-I", ".", "--gogo_out=plugins=grpc,paths=source_relative:.", "svc.proto"); err != nil {
		t.Fatalf("protoc svc: %v\n%s", err, out)
	}
	for file, wants := range map[string][]string{
		"common/common.pb.go": {"package common", "type Selector struct"},
		"svc/svc.pb.go":       {"package svc", "func NewWidgetsClient(", "func RegisterWidgetsServer(", "Widgets_FollowServer", `v1 "k8s.io/apimachinery/pkg/apis/meta/v1"`},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", file, w)
			}
		}
	}
	if out, err := run(t, dir, "go", "build", "./..."); err != nil {
		t.Fatalf("go build ./... with the generated stubs: %v\n%s", err, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unsupported option", []string{"--cpp_out=.", "svc/svc.proto"}, "unsupported option --cpp_out=."},
		{"no output", []string{"svc/svc.proto"}, "missing output directives (--gogo_out)"},
		{"no input", []string{"--gogo_out=."}, "missing input file"},
		{"missing import", []string{"--gogo_out=.", "bad/bad.proto"}, "bad/bad.proto:2:8"},
		{"file outside the import paths", []string{"-I", "svc", "--gogo_out=.", "common/common.proto"}, "does not reside within any path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, dir, bin, append([]string{"protoc"}, tc.args...)...)
			if err == nil {
				t.Fatalf("exited 0:\n%s", out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}
