package numbers_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/numbers"
)

// TestCheckYAML checks JSON and YAML bodies with CheckYAML and JSON
// bodies with CheckJSON: the literal an error shows, the path prefix, and
// bodies with nothing to check.
func TestCheckYAML(t *testing.T) {
	typ := reflect.TypeFor[*numbersObject]()
	for _, tc := range []struct {
		name  string
		body  string
		field string // "" for no error
		value any
		yaml  bool // CheckYAML only: not a JSON document
	}{
		{"JSON", `{"replicas": 10000000000}`, "body.replicas", "10000000000", false},
		{"YAML", "items:\n- count: 300\n", "body.items[0].count", "300", true},
		{"JSON that fits", `{"replicas": 1, "big": 9223372036854775807}`, "", nil, false},
		{"YAML that does not parse", "replicas: [", "", nil, true},
		{"a list, not an object", `[1, 2]`, "", nil, false},
		{"null", `null`, "", nil, false},
		{"JSON that does not parse", `{"replicas": `, "", nil, false},
	} {
		check := map[string]func(*field.Path, []byte, reflect.Type) field.ErrorList{"CheckYAML": numbers.CheckYAML}
		if !tc.yaml {
			check["CheckJSON"] = numbers.CheckJSON
		}
		for fn, check := range check {
			t.Run(tc.name+"/"+fn, func(t *testing.T) {
				errs := check(field.NewPath("body"), []byte(tc.body), typ)
				switch {
				case tc.field == "" && len(errs) != 0:
					t.Fatalf("errors %v, want none", errs)
				case tc.field != "" && (len(errs) != 1 || errs[0].Field != tc.field || errs[0].BadValue != tc.value):
					t.Fatalf("errors %v, want one for %s showing %v", errs, tc.field, tc.value)
				}
			})
		}
	}
}

// BenchmarkCheckBody compares the number check of one body of the
// benchmark object's shape read as YAML (converted to JSON first), as JSON,
// and as CBOR, walked (CheckCBOR) and decoded first (the check CheckCBOR
// falls back to): go test ./pkg/numbers -run XXX -bench CheckBody -benchmem.
func BenchmarkCheckBody(b *testing.B) {
	typ := reflect.TypeFor[*numbersObject]()
	body := []byte(`{"metadata":{"labels":{"a":"1","b":"2","c":"3","d":"4","e":"5"}},"replicas":3,"items":[{"count":1},{"count":2},{"count":3},{"count":4},{"count":5}]}`)
	// The same object in CBOR, as k8s.io/apimachinery's encoder writes it
	// (self-described, integers as integers).
	labels := map[string]any{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
	var items []any
	for i := range 5 {
		items = append(items, map[string]any{"count": int64(i + 1)})
	}
	content := map[string]any{"metadata": map[string]any{"labels": labels}, "replicas": int64(3), "items": items}
	cborBody := append([]byte{0xd9, 0xd9, 0xf7}, mustCBOR(b, content)...)
	for _, bc := range []struct {
		name  string
		body  []byte
		check func(*field.Path, []byte, reflect.Type) field.ErrorList
	}{{"yaml", body, numbers.CheckYAML}, {"json", body, numbers.CheckJSON}, {"cbor", cborBody, numbers.CheckCBOR}, {"cbor-decoded", cborBody, checkDecoded}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if errs := bc.check(nil, bc.body, typ); len(errs) != 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
