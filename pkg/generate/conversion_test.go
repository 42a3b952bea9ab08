package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hub (things/v1) and a version with a renamed field (things/v1beta1:
// spec.size for v1's spec.replicas), in a fresh module.
const (
	thingsHubDoc = `// Package v1 is things.example.com/v1, the storage version.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.example.things.v1
// +groupName=things.example.com
package v1
`
	thingsSpokeDoc = `// Package v1beta1 is things.example.com/v1beta1, converted through v1.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=example.com/widgets/apis/things/v1
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.example.things.v1beta1
// +groupName=things.example.com
package v1beta1
`
	thingsTypes = `package PKG

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Thing is a thing.
type Thing struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec ThingSpec ` + "`json:\"spec,omitempty\"`" + `
}

// ThingSpec is a thing's spec.
type ThingSpec struct {
	// +optional
	COUNT int32 ` + "`json:\"LOWER,omitempty\"`" + `
	// +optional
	Color string ` + "`json:\"color,omitempty\"`" + `
	// +optional
	Labels map[string]string ` + "`json:\"labels,omitempty\"`" + `
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ThingList is a list of things.
type ThingList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items []Thing ` + "`json:\"items\"`" + `
}
`
	// thingsConversion is v1beta1's hand-written conversion.go; DROP is
	// replaced by the line that converts spec.replicas back to spec.size.
	thingsConversion = `package v1beta1

import (
	"k8s.io/apimachinery/pkg/conversion"

	v1 "example.com/widgets/apis/things/v1"
)

// Convert_v1beta1_ThingSpec_To_v1_ThingSpec renames size to replicas.
func Convert_v1beta1_ThingSpec_To_v1_ThingSpec(in *ThingSpec, out *v1.ThingSpec, s conversion.Scope) error {
	if err := autoConvert_v1beta1_ThingSpec_To_v1_ThingSpec(in, out, s); err != nil {
		return err
	}
	out.Replicas = in.Size
	return nil
}

// Convert_v1_ThingSpec_To_v1beta1_ThingSpec renames replicas to size.
func Convert_v1_ThingSpec_To_v1beta1_ThingSpec(in *v1.ThingSpec, out *ThingSpec, s conversion.Scope) error {
	if err := autoConvert_v1_ThingSpec_To_v1beta1_ThingSpec(in, out, s); err != nil {
		return err
	}
	DROP
	return nil
}
`
)

func thingsTypesOf(pkg, field, json string) string {
	return strings.NewReplacer("PKG", pkg, "COUNT", field, "LOWER", json).Replace(thingsTypes)
}

// TestConversions runs customapi-gen on a hub and a version with a renamed
// field in a fresh module: it writes zz_generated.conversion.go,
// zz_generated.defaults.go and zz_generated.roundtrip_test.go, and, once,
// a conversion.go with stubs of the two Convert_* functions conversion-gen
// cannot write, naming the fields; --verify then passes, the module builds,
// and the generated round-trip test fails on the stubs. A hand-written
// conversion that drops the renamed field fails the round-trip test with a
// diff naming it; the right one passes; customapi-gen never rewrites
// conversion.go. Skipped with -short.
func TestConversions(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs the generators in a fresh module and its tests")
	}
	bin := customapiGen(t)
	dir := newModule(t, map[string]string{
		"apis/things/v1/doc.go":        thingsHubDoc,
		"apis/things/v1/types.go":      thingsTypesOf("v1", "Replicas", "replicas"),
		"apis/things/v1beta1/doc.go":   thingsSpokeDoc,
		"apis/things/v1beta1/types.go": thingsTypesOf("v1beta1", "Size", "size"),
	})
	spoke := filepath.Join(dir, "apis/things/v1beta1")
	conv := filepath.Join(spoke, "conversion.go")

	out, err := run(t, dir, bin, "./apis/...")
	if err != nil {
		t.Fatalf("customapi-gen: %v\n%s", err, out)
	}
	for _, want := range []string{
		"wrote: " + conv + " (stubs returning an error, yours to finish: Convert_v1_ThingSpec_To_v1beta1_ThingSpec, Convert_v1beta1_ThingSpec_To_v1_ThingSpec;",
		"wrote: " + filepath.Join(spoke, "zz_generated.conversion.go"),
		"wrote: " + filepath.Join(spoke, "zz_generated.roundtrip_test.go"),
		"wrote: " + filepath.Join(dir, "apis/things/v1/zz_generated.defaults.go"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("customapi-gen output lacks %q:\n%s", want, out)
		}
	}
	stubs, err := os.ReadFile(conv)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"func Convert_v1beta1_ThingSpec_To_v1_ThingSpec(in *ThingSpec, out *v1.ThingSpec, s conversion.Scope) error {",
		"autoConvert_v1beta1_ThingSpec_To_v1_ThingSpec(in, out, s)",
		`return errors.New("Convert_v1beta1_ThingSpec_To_v1_ThingSpec is a stub: convert in.Size (does not exist in peer-type) by hand`,
		`convert in.Replicas (does not exist in peer-type) by hand`,
	} {
		if !strings.Contains(string(stubs), want) {
			t.Errorf("conversion.go lacks %q:\n%s", want, stubs)
		}
	}
	if out, err := run(t, dir, bin, "--verify", "./apis/..."); err != nil {
		t.Fatalf("--verify right after writing the stubs: %v\n%s", err, out)
	}
	if out, err := run(t, dir, "go", "vet", "./..."); err != nil {
		t.Fatalf("go vet of the module with the stubs: %v\n%s", err, out)
	}
	if out, err := run(t, dir, "go", "test", "./apis/..."); err == nil || !strings.Contains(out, "_ThingSpec is a stub: convert in.") {
		t.Fatalf("the round-trip test passed on the stubs, or failed without naming them (%v):\n%s", err, out)
	}

	for _, tc := range []struct {
		name, line string
		fail       []string // "" for a pass
	}{
		{"dropped field", "// spec.size forgotten", []string{"--- FAIL: TestConversionRoundTrip", "Replicas:"}},
		{"converted", "out.Size = in.Replicas", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(conv, []byte(strings.Replace(thingsConversion, "DROP", tc.line, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := run(t, dir, "go", "test", "-count=1", "./apis/...")
			if tc.fail == nil {
				if err != nil {
					t.Fatalf("go test: %v\n%s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("the round-trip test passed on a conversion that drops spec.size:\n%s", out)
			}
			for _, want := range tc.fail {
				if !strings.Contains(out, want) {
					t.Errorf("go test output lacks %q:\n%s", want, out)
				}
			}
		})
	}

	before, err := os.ReadFile(conv)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, dir, bin, "./apis/..."); err != nil {
		t.Fatalf("customapi-gen again: %v\n%s", err, out)
	} else if strings.Contains(out, "conversion") {
		t.Errorf("customapi-gen wrote conversion files again:\n%s", out)
	}
	if after, _ := os.ReadFile(conv); string(after) != string(before) {
		t.Errorf("customapi-gen rewrote conversion.go:\n%s", after)
	}
	if out, err := run(t, dir, bin, "--verify", "./apis/..."); err != nil {
		t.Fatalf("--verify with the hand-written conversions: %v\n%s", err, out)
	}
}
