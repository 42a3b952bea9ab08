package generate

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path"
	"path/filepath"
	"text/template"

	"k8s.io/gengo/v2"
)

// fuzzerFuncsName is the function a version's package may declare in one of
// its own _test.go files to steer the fuzzer of the generated round-trip
// test (a k8s.io/apimachinery/pkg/api/apitesting/fuzzer.FuzzerFuncs).
const fuzzerFuncsName = "roundTripFuzzerFuncs"

// roundTripData fills roundTripTemplate.
type roundTripData struct {
	Pkg          string // the package of the version (the spoke)
	Group        string
	Version      string
	HubPath      string
	HubVersion   string
	Kinds        []string // the root types both packages declare
	Defaults     bool     // the spoke has zz_generated.defaults.go
	HubDefaults  bool
	FuzzerFuncs  bool // the spoke declares roundTripFuzzerFuncs in a test file
	Protobuf     bool // both packages are tagged +k8s:protobuf-gen=package
	Conversion   string
	FuzzerFuncsN string
}

var roundTripTemplate = template.Must(template.New("roundtrip").Parse(`package {{.Pkg}}

import (
	"flag"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	hub "{{.HubPath}}"
)

// The group versions of the round trip: this package's, the storage
// version's (the hub), and the group's internal version, which is the
// hub's Go types, as customapi registers them.
var (
	roundTripGV         = schema.GroupVersion{Group: "{{.Group}}", Version: "{{.Version}}"}
	roundTripHubGV      = schema.GroupVersion{Group: "{{.Group}}", Version: "{{.HubVersion}}"}
	roundTripInternalGV = schema.GroupVersion{Group: "{{.Group}}", Version: runtime.APIVersionInternal}
)

// roundTripIters is the number of objects TestConversionRoundTrip fuzzes
// per kind and direction.
var roundTripIters = flag.Int("roundtrip-iters", 100, "objects fuzzed per kind and direction by TestConversionRoundTrip")

// roundTripScheme registers the kinds declared in both this package and the
// hub's, this package's conversions (RegisterConversions of
// {{.Conversion}} and the hand-written Convert_* functions) and the
// defaults of both.
func roundTripScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
{{- range .Kinds}}
	s.AddKnownTypes(roundTripGV, &{{.}}{})
	s.AddKnownTypes(roundTripHubGV, &hub.{{.}}{})
	s.AddKnownTypes(roundTripInternalGV, &hub.{{.}}{})
{{- end}}
	for _, add := range []func(*runtime.Scheme) error{RegisterConversions{{if .Defaults}}, RegisterDefaults{{end}}{{if .HubDefaults}}, hub.RegisterDefaults{{end}}} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestConversionRoundTrip fuzzes every kind this package shares with the
// hub ({{.HubVersion}}) and fails on any difference after
//   - hub -> {{.Version}} -> JSON{{if .Protobuf}} (and protobuf){{end}} -> {{.Version}} -> hub, and hub -> JSON -> hub;
//   - {{.Version}} -> hub -> {{.Version}} (scheme conversions only);
//   - {{.Version}} -> JSON{{if .Protobuf}} (and protobuf){{end}} -> {{.Version}}.
// A conversion that loses or changes a field fails here. Decoding JSON in
// {{.Version}} applies its defaults, as a server does.
{{- if .FuzzerFuncs}}
// The fuzzer is steered by {{.FuzzerFuncsN}} (a _test.go file of this
// package).
{{- else}}
// To keep the fuzzer to the values the conversions carry (those validation
// accepts), declare func {{.FuzzerFuncsN}}(serializer.CodecFactory)
// []interface{} (an apitesting/fuzzer.FuzzerFuncs) in a _test.go file of
// this package and run customapi-gen again.
{{- end}}
// The fuzzer's seed is logged; -roundtrip-iters sets the number of objects
// per kind and direction.
func TestConversionRoundTrip(t *testing.T) {
	*roundtrip.FuzzIters = *roundTripIters
	s := roundTripScheme(t)
	codecs := serializer.NewCodecFactory(s)
	seed := rand.Int63()
	t.Logf("fuzzer seed %d", seed)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs{{if .FuzzerFuncs}}, {{.FuzzerFuncsN}}{{end}}), rand.NewSource(seed), codecs)
	for _, kind := range []string{ {{- range $i, $k := .Kinds}}{{if $i}}, {{end}}"{{$k}}"{{end -}} } {
		t.Run(kind, func(t *testing.T) {
			roundtrip.RoundTripSpecificKind{{if not .Protobuf}}WithoutProtobuf{{end}}(t, roundTripInternalGV.WithKind(kind), s, codecs, f, nil)
			roundtrip.RoundTripSpecificKind{{if not .Protobuf}}WithoutProtobuf{{end}}(t, roundTripGV.WithKind(kind), s, codecs, f, nil)
			for i := 0; i < *roundtrip.FuzzIters && !t.Failed(); i++ {
				in := roundTripNew(t, s, roundTripGV.WithKind(kind))
				f.Fill(in)
				roundTripClearTypeMeta(t, in)
				original := in.DeepCopyObject()
				h := roundTripNew(t, s, roundTripHubGV.WithKind(kind))
				if err := s.Convert(in, h, nil); err != nil {
					t.Fatalf("converting %s to %s: %v", roundTripGV.WithKind(kind), roundTripHubGV, err)
				}
				back := roundTripNew(t, s, roundTripGV.WithKind(kind))
				if err := s.Convert(h, back, nil); err != nil {
					t.Fatalf("converting %s back to %s: %v", roundTripHubGV.WithKind(kind), roundTripGV, err)
				}
				roundTripClearTypeMeta(t, back)
				if !apiequality.Semantic.DeepEqual(original, back) {
					t.Fatalf("%s -> %s -> %s changed the object (a conversion loses or changes a field); diff (-original +back):\n%s", roundTripGV.WithKind(kind), roundTripHubGV.Version, roundTripGV.Version, cmp.Diff(original, back))
				}
			}
		})
	}
}

func roundTripNew(t *testing.T, s *runtime.Scheme, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	obj, err := s.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func roundTripClearTypeMeta(t *testing.T, obj runtime.Object) {
	t.Helper()
	acc, err := meta.TypeAccessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	acc.SetAPIVersion("")
	acc.SetKind("")
}
`))

// generateRoundTripTests writes, into the temporary tree, a
// zz_generated.roundtrip_test.go for each package of r tagged
// +k8s:conversion-gen=<hub> whose hub is an API package of r, covering the
// root types both declare. It runs after defaulter-gen and conversion-gen.
func generateRoundTripTests(r *outputRoot, header string, rm *remapper) error {
	byPath := map[string]*apiPackage{}
	for _, p := range r.pkgs {
		byPath[p.importPath] = p
	}
	boilerplate, err := gengo.GoBoilerplate(header, gengo.StdBuildTag, gengo.StdGeneratedBy)
	if err != nil {
		return fmt.Errorf("header file: %w", err)
	}
	exists := func(dir, name string) bool {
		_, err := os.Stat(filepath.Join(rm.remap(dir), name))
		return err == nil
	}
	for _, p := range r.pkgs {
		var hub *apiPackage
		for _, peer := range p.conversionPeers {
			if h := byPath[peer]; h != nil {
				hub = h
				break
			}
		}
		if hub == nil || !exists(p.dir, conversionFile) {
			continue
		}
		hubTypes := map[string]bool{}
		for _, k := range hub.rootTypes {
			hubTypes[k] = true
		}
		d := roundTripData{
			Pkg:          path.Base(p.importPath),
			Group:        p.groupName,
			Version:      path.Base(p.importPath),
			HubPath:      hub.importPath,
			HubVersion:   path.Base(hub.importPath),
			Defaults:     exists(p.dir, defaultsFile),
			HubDefaults:  exists(hub.dir, defaultsFile),
			FuzzerFuncs:  p.testFuncs[fuzzerFuncsName],
			Protobuf:     p.protobuf && hub.protobuf,
			Conversion:   conversionFile,
			FuzzerFuncsN: fuzzerFuncsName,
		}
		for _, k := range p.rootTypes {
			if hubTypes[k] {
				d.Kinds = append(d.Kinds, k)
			}
		}
		if len(d.Kinds) == 0 {
			continue
		}
		var b bytes.Buffer
		b.Write(boilerplate)
		if err := roundTripTemplate.Execute(&b, d); err != nil {
			return fmt.Errorf("round-trip test of %s: %w", p.importPath, err)
		}
		src, err := format.Source(b.Bytes())
		if err != nil {
			return fmt.Errorf("formatting the round-trip test of %s: %w\n%s", p.importPath, err, b.Bytes())
		}
		dir := rm.remap(p.dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, roundTripFile), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}
