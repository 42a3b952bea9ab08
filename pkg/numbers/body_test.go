package numbers_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/numbers"
)

// TestCheckYAML checks JSON and YAML bodies, the literal an error shows,
// the path prefix, and bodies with nothing to check.
func TestCheckYAML(t *testing.T) {
	typ := reflect.TypeFor[*numbersObject]()
	for _, tc := range []struct {
		name  string
		body  string
		field string // "" for no error
		value any
	}{
		{"JSON", `{"replicas": 10000000000}`, "body.replicas", "10000000000"},
		{"YAML", "items:\n- count: 300\n", "body.items[0].count", "300"},
		{"JSON that fits", `{"replicas": 1, "big": 9223372036854775807}`, "", nil},
		{"YAML that does not parse", "replicas: [", "", nil},
		{"a list, not an object", `[1, 2]`, "", nil},
		{"null", `null`, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := numbers.CheckYAML(field.NewPath("body"), []byte(tc.body), typ)
			switch {
			case tc.field == "" && len(errs) != 0:
				t.Fatalf("errors %v, want none", errs)
			case tc.field != "" && (len(errs) != 1 || errs[0].Field != tc.field || errs[0].BadValue != tc.value):
				t.Fatalf("errors %v, want one for %s showing %v", errs, tc.field, tc.value)
			}
		})
	}
}
