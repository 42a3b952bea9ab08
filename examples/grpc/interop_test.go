package relay

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// The interop tests decode objects as a program in another language would:
// with no Go type of customapi, only the .proto files (relay.proto, the
// generated.proto of test/v1 and the apimachinery .proto files they
// import), compiled at run time with protocompile, and protobuf-go's
// dynamicpb messages, over plain gRPC with protobuf-go's default codec.

// descriptors are the messages and methods the interop tests use, from the
// compiled .proto files.
type descriptors struct {
	getRequest, watchRequest, watchEvent, custom, unknown protoreflect.MessageDescriptor
	getMethod, watchMethod                                string // full gRPC method names
}

// compileProtos compiles relay.proto and k8s.io/apimachinery's
// runtime/generated.proto (runtime.Unknown, the envelope of a protobuf
// HTTP response) with imports resolved by Go import path, as customapi-gen
// protoc and protoc with an import tree do.
func compileProtos(t *testing.T) descriptors {
	t.Helper()
	roots := protoRoots(t)
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: func(p string) (io.ReadCloser, error) {
			for prefix, dir := range roots {
				if rest, ok := strings.CutPrefix(p, prefix); ok {
					return os.Open(filepath.Join(dir, filepath.FromSlash(rest)))
				}
			}
			return os.Open(p) // relay.proto, in this directory
		},
	})}
	files, err := c.Compile(t.Context(), "relay.proto", "k8s.io/apimachinery/pkg/runtime/generated.proto")
	if err != nil {
		t.Fatal(err)
	}
	relay, runtimeProto := files[0], files[1]
	svc := relay.Services().ByName("Relay")
	if svc == nil {
		t.Fatal("relay.proto has no service Relay")
	}
	get, watch := svc.Methods().ByName("Get"), svc.Methods().ByName("Watch")
	if get == nil || watch == nil || !watch.IsStreamingServer() {
		t.Fatal("Relay lacks Get or a server-streaming Watch")
	}
	d := descriptors{
		getRequest:   get.Input(),
		custom:       get.Output(),
		watchRequest: watch.Input(),
		watchEvent:   watch.Output(),
		unknown:      runtimeProto.Messages().ByName("Unknown"),
		getMethod:    "/" + string(svc.FullName()) + "/Get",
		watchMethod:  "/" + string(svc.FullName()) + "/Watch",
	}
	if d.custom.FullName() != "github.com.customapi.customapi.pkg.apis.test.v1.Custom" || d.unknown == nil {
		t.Fatalf("Get returns %s, want the generated Custom message (Unknown found: %v)", d.custom.FullName(), d.unknown != nil)
	}
	return d
}

// protoRoots maps the Go import paths of the modules holding the .proto
// files (customapi itself, k8s.io/apimachinery, github.com/gogo/protobuf),
// with a trailing slash, to their directories.
func protoRoots(t *testing.T) map[string]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	roots := map[string]string{"github.com/customapi/customapi/": root}
	for _, mod := range []string{"k8s.io/apimachinery", "github.com/gogo/protobuf"} {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
		if err != nil {
			t.Fatalf("go list -m %s: %v", mod, err)
		}
		roots[mod+"/"] = strings.TrimSpace(string(out))
	}
	return roots
}

// dynamicMessage returns a dynamicpb message of md with the given string
// fields set.
func dynamicMessage(t *testing.T, md protoreflect.MessageDescriptor, fields map[string]string) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	for name, v := range fields {
		m.Set(field(t, md, name), protoreflect.ValueOfString(v))
	}
	return m
}

func field(t *testing.T, md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	t.Helper()
	fd := md.Fields().ByName(protoreflect.Name(name))
	if fd == nil {
		t.Fatalf("message %s has no field %s", md.FullName(), name)
	}
	return fd
}

func get(t *testing.T, m protoreflect.Message, name string) protoreflect.Value {
	t.Helper()
	return m.Get(field(t, m.Descriptor(), name))
}

// requireCustom checks the fields of a dynamic Custom message against the
// object the registry has.
func requireCustom(t *testing.T, m protoreflect.Message, want *testv1.Custom) {
	t.Helper()
	meta := get(t, m, "metadata").Message()
	for name, v := range map[string]string{
		"name":            want.Name,
		"namespace":       want.Namespace,
		"uid":             string(want.UID),
		"resourceVersion": want.ResourceVersion,
	} {
		if got := get(t, meta, name).String(); got != v || v == "" {
			t.Errorf("metadata.%s = %q, want %q", name, got, v)
		}
	}
	labels := get(t, meta, "labels").Map()
	if labels.Len() != len(want.Labels) || labels.Get(protoreflect.ValueOfString("app").MapKey()).String() != want.Labels["app"] {
		t.Errorf("metadata.labels has %d entries, app=%q; want %v", labels.Len(), labels.Get(protoreflect.ValueOfString("app").MapKey()).String(), want.Labels)
	}
	created := get(t, meta, "creationTimestamp").Message()
	if s := get(t, created, "seconds").Int(); s != want.CreationTimestamp.Unix() {
		t.Errorf("metadata.creationTimestamp.seconds = %d, want %d", s, want.CreationTimestamp.Unix())
	}
	spec := get(t, m, "spec").Message()
	if got := get(t, spec, "message").String(); got != want.Spec.Message {
		t.Errorf("spec.message = %q, want %q", got, want.Spec.Message)
	}
	if got := get(t, spec, "replicas").Int(); got != int64(want.Spec.Replicas) {
		t.Errorf("spec.replicas = %d, want %d", got, want.Spec.Replicas)
	}
	ports := get(t, spec, "ports").List()
	if ports.Len() != len(want.Spec.Ports) {
		t.Fatalf("spec.ports has %d entries, want %d", ports.Len(), len(want.Spec.Ports))
	}
	for i, p := range want.Spec.Ports {
		pm := ports.Get(i).Message()
		if n, port := get(t, pm, "name").String(), get(t, pm, "port").Int(); n != p.Name || port != int64(p.Port) {
			t.Errorf("spec.ports[%d] = %s:%d, want %s:%d", i, n, port, p.Name, p.Port)
		}
	}
}

// createSample creates sample(name) in a namespace of the test's own and
// returns the object as the registry has it.
func createSample(t *testing.T, name string) *testv1.Custom {
	t.Helper()
	ctx := testContext(t)
	reg := customs(t, customapitest.Namespace(t))
	if _, err := reg.Create(ctx, sample(name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, err := reg.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// A Get and a Watch of the gRPC service, by a client that has only the
// .proto files: plain gRPC (protobuf-go's default codec, no Codec of
// ours), dynamicpb messages.
func TestInteropGRPC(t *testing.T) {
	ctx := testContext(t)
	d := compileProtos(t)
	want := createSample(t, "interop")
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	req := dynamicMessage(t, d.getRequest, map[string]string{"namespace": want.Namespace, "name": want.Name})
	resp := dynamicpb.NewMessage(d.custom)
	if err := conn.Invoke(ctx, d.getMethod, req, resp); err != nil {
		t.Fatal(err)
	}
	requireCustom(t, resp, want)

	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	stream, err := conn.NewStream(watchCtx, &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}, d.watchMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(dynamicMessage(t, d.watchRequest, map[string]string{"namespace": want.Namespace})); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	ev := dynamicpb.NewMessage(d.watchEvent)
	if err := stream.RecvMsg(ev); err != nil {
		t.Fatal(err)
	}
	if typ := get(t, ev, "type").String(); typ != "ADDED" {
		t.Fatalf("first watch event %s, want ADDED", typ)
	}
	requireCustom(t, get(t, ev, "object").Message(), want)
}

// A protobuf GET of the HTTP API server (Accept:
// application/vnd.kubernetes.protobuf): the body is the magic "k8s\x00"
// and a runtime.Unknown whose raw field holds the Custom message.
func TestInteropHTTPProtobuf(t *testing.T) {
	d := compileProtos(t)
	want := createSample(t, "interop-http")

	body := protobufGET(t, want)
	magic := []byte(protobufMagic)
	if !bytes.HasPrefix(body, magic) {
		t.Fatalf("body starts %q, want the magic %q", body[:min(len(body), 4)], magic)
	}
	unknown := dynamicpb.NewMessage(d.unknown)
	if err := proto.Unmarshal(body[len(magic):], unknown); err != nil {
		t.Fatal(err)
	}
	tm := get(t, unknown, "typeMeta").Message()
	if av, kind := get(t, tm, "apiVersion").String(), get(t, tm, "kind").String(); av != "test/v1" || kind != "Custom" {
		t.Errorf("typeMeta %s %s, want test/v1 Custom", av, kind)
	}
	obj := dynamicpb.NewMessage(d.custom)
	if err := proto.Unmarshal(get(t, unknown, "raw").Bytes(), obj); err != nil {
		t.Fatal(err)
	}
	requireCustom(t, obj, want)
}

// protobufMagic starts every protobuf body of the Kubernetes API, before
// the runtime.Unknown envelope.
const protobufMagic = "k8s\x00"

// protobufGET returns the body of GET obj with Accept:
// application/vnd.kubernetes.protobuf from the shared API server.
func protobufGET(t *testing.T, obj *testv1.Custom) []byte {
	t.Helper()
	ctx := testContext(t)
	url := api.URL + "/apis/test/v1/namespaces/" + obj.Namespace + "/customs/" + obj.Name
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", runtime.ContentTypeProtobuf)
	resp, err := api.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("protobuf GET: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != runtime.ContentTypeProtobuf {
		t.Fatalf("Content-Type %q, want %s", ct, runtime.ContentTypeProtobuf)
	}
	return body
}

// viewProto reads a protobuf response body (after the magic) in one go: a
// message with the fields of runtime.Unknown, except that raw, bytes in
// Unknown, is declared as the Custom it holds (the same wire encoding).
const viewProto = `syntax = "proto2";
import "k8s.io/apimachinery/pkg/runtime/generated.proto";
import "github.com/customapi/customapi/pkg/apis/test/v1/generated.proto";
message CustomResponse {
  optional k8s.io.apimachinery.pkg.runtime.TypeMeta typeMeta = 1;
  optional github.com.customapi.customapi.pkg.apis.test.v1.Custom raw = 2;
  optional string contentEncoding = 3;
  optional string contentType = 4;
}
`

// protoc itself (C++, no Go at all) decodes a protobuf GET response with
// the generated .proto file and the apimachinery .proto files it imports,
// found by Go import path in an import tree: the invocation
// docs/defining-types.md documents. Skipped when protoc is not installed.
func TestInteropProtocDecode(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc is not installed")
	}
	want := createSample(t, "interop-protoc")
	body := protobufGET(t, want)

	tree := t.TempDir()
	for imp, dir := range protoRoots(t) {
		link := filepath.Join(tree, filepath.FromSlash(strings.TrimSuffix(imp, "/")))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dir, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "view.proto"), []byte(viewProto), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), protoc, "-I", tree, "--decode=CustomResponse", "view.proto")
	cmd.Stdin = bytes.NewReader(bytes.TrimPrefix(body, []byte(protobufMagic)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc --decode: %v\n%s", err, stderr.String())
	}
	text := string(out)
	for _, w := range []string{
		`apiVersion: "test/v1"`, `kind: "Custom"`,
		`name: "interop-protoc"`, `namespace: "` + want.Namespace + `"`,
		`uid: "` + string(want.UID) + `"`, `resourceVersion: "` + want.ResourceVersion + `"`,
		`message: "hello over gRPC"`, `replicas: 3`, `port: 8080`, `port: 9090`,
	} {
		if !strings.Contains(text, w) {
			t.Errorf("protoc --decode output lacks %s:\n%s", w, text)
		}
	}
}
