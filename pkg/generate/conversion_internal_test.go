package generate

import (
	"path/filepath"
	"strings"
	"testing"
)

// The stubs of the fleet example's two hand-written conversions, as if
// conversion.go did not declare them: each is named, calls its
// autoConvert function and returns an error naming the fields
// conversion-gen left out.
func TestConversionStubs(t *testing.T) {
	gen := filepath.Join("..", "..", "examples", "fleet", "apis", "fleet", "v1alpha1", conversionFile)
	stubs, imports, err := missingConversions(gen, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stubs {
		names = append(names, s.name)
	}
	if got, want := strings.Join(names, " "), "Convert_v1_FleetSpec_To_v1alpha1_FleetSpec Convert_v1alpha1_FleetSpec_To_v1_FleetSpec"; got != want {
		t.Fatalf("missing conversions %q, want %q", got, want)
	}
	if none, _, err := missingConversions(gen, map[string]bool{names[0]: true, names[1]: true}); err != nil || len(none) != 0 {
		t.Fatalf("with both declared: %v %v", none, err)
	}
	src, err := stubFile("v1alpha1", stubs, imports)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"package v1alpha1\n",
		"\t\"errors\"\n",
		"\t\"github.com/customapi/customapi/examples/fleet/apis/fleet/v1\"\n",
		"//   - in.Size (does not exist in peer-type)\n//   - in.Region (does not exist in peer-type)\n",
		"\t\"k8s.io/apimachinery/pkg/conversion\"\n",
		"func Convert_v1_FleetSpec_To_v1alpha1_FleetSpec(in *v1.FleetSpec, out *FleetSpec, s conversion.Scope) error {\n",
		"\tif err := autoConvert_v1alpha1_FleetSpec_To_v1_FleetSpec(in, out, s); err != nil {\n",
		`errors.New("Convert_v1_FleetSpec_To_v1alpha1_FleetSpec is a stub: convert in.Replicas (does not exist in peer-type), in.Placement (does not exist in peer-type) by hand`,
		`errors.New("Convert_v1alpha1_FleetSpec_To_v1_FleetSpec is a stub: convert in.Size (does not exist in peer-type), in.Region (does not exist in peer-type) by hand`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("stubs lack %q:\n%s", want, src)
		}
	}
	if strings.Contains(string(src), "runtime") || strings.Contains(string(src), "unsafe") {
		t.Errorf("stubs import what they do not use:\n%s", src)
	}
}
