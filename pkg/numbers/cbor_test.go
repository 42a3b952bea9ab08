package numbers_test

import (
	"encoding/hex"
	"reflect"
	"testing"

	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/numbers"
)

// checkDecoded is what CheckCBOR must report: the body decoded as
// k8s.io/apimachinery decodes CBOR, then Check.
func checkDecoded(path *field.Path, data []byte, typ reflect.Type) field.ErrorList {
	var content map[string]any
	if err := cbordirect.Unmarshal(data, &content); err != nil {
		return nil
	}
	return numbers.Check(path, content, typ)
}

func mustCBOR(t testing.TB, v any) []byte {
	t.Helper()
	b, err := cbordirect.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckCBOR: CheckCBOR reports exactly what decoding the body and
// Check report, for bodies that fit (walked without decoding) and bodies
// that do not, or that the walk leaves to the decoder (tags, indefinite
// lengths, half floats, byte string keys, bodies cut short).
func TestCheckCBOR(t *testing.T) {
	typ := reflect.TypeFor[*numbersObject]()
	selfDescribed := func(b []byte) []byte { return append([]byte{0xd9, 0xd9, 0xf7}, b...) }
	for _, tc := range []struct {
		name  string
		body  func(t *testing.T) []byte
		field string // the one error's field; "" for none
	}{
		{"fits", func(t *testing.T) []byte {
			return mustCBOR(t, map[string]any{"replicas": int64(2147483647), "big": int64(-9223372036854775808), "unsigned": int64(4294967295),
				"ratio": 1.5, "items": []any{map[string]any{"count": int64(-128), "weight": int64(65535)}}, "byName": map[string]any{"a": int64(1)},
				"nested": map[string]any{"x": []any{map[string]any{"count": int64(127)}}}, "metadata": map[string]any{"name": "a", "generation": int64(3), "labels": map[string]any{"k": "v"}},
				"port": int64(99999999999), "free": 1e300, "unknown": "x", "NoTag": int64(1), "level": int64(-32768)})
		}, ""},
		{"fits, self-described", func(t *testing.T) []byte {
			return selfDescribed(mustCBOR(t, map[string]any{"replicas": int64(3), "items": []any{map[string]any{"count": int64(1)}}}))
		}, ""},
		{"too large", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": int64(10000000000)}) }, "body.replicas"},
		{"too large, self-described", func(t *testing.T) []byte {
			return selfDescribed(mustCBOR(t, map[string]any{"replicas": int64(4294967297)}))
		}, "body.replicas"},
		{"too small", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": int64(-2147483649)}) }, "body.replicas"},
		{"negative unsigned", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"unsigned": int64(-1)}) }, "body.unsigned"},
		{"in a list", func(t *testing.T) []byte {
			return mustCBOR(t, map[string]any{"items": []any{map[string]any{"count": int64(1)}, map[string]any{"count": int64(300)}}})
		}, "body.items[1].count"},
		{"in a map", func(t *testing.T) []byte {
			return mustCBOR(t, map[string]any{"byName": map[string]any{"a": int64(1), "b": int64(2147483648)}})
		}, "body.byName[b]"},
		{"nested", func(t *testing.T) []byte {
			return mustCBOR(t, map[string]any{"nested": map[string]any{"x": []any{map[string]any{"count": int64(-129)}}}})
		}, "body.nested[x][0].count"},
		{"pointer", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"ptr": int64(2147483648)}) }, "body.ptr"},
		{"embedded", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"level": int64(40000)}) }, "body.level"},
		{"metadata", func(t *testing.T) []byte {
			return mustCBOR(t, map[string]any{"metadata": map[string]any{"generation": 1.5}})
		}, "body.metadata.generation"},
		{"a fraction", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": 1.5}) }, "body.replicas"},
		{"a whole float", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": 2.0}) }, ""},
		{"a string", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": "1"}) }, "body.replicas"},
		{"a boolean", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": true}) }, "body.replicas"},
		{"a map", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": map[string]any{}}) }, "body.replicas"},
		{"null", func(t *testing.T) []byte { return mustCBOR(t, map[string]any{"replicas": nil, "items": nil}) }, ""},
		{"float32 out of range", func(t *testing.T) []byte {
			return mustCBOR(t, map[string]any{"items": []any{map[string]any{"ratio": 1e39}}})
		}, "body.items[0].ratio"},
		{"directives", func(t *testing.T) []byte {
			return mustCBOR(t, map[string]any{"$patch": "replace", "items": []any{map[string]any{"$patch": "delete"}, map[string]any{"count": int64(1)}}})
		}, ""},
		// {"replicas": half float 1.5} and {"replicas": half float 2.0}
		{"half float fraction", func(t *testing.T) []byte { return mustHex(t, "a1687265706c69636173f93e00") }, "body.replicas"},
		{"half float whole", func(t *testing.T) []byte { return mustHex(t, "a1687265706c69636173f94000") }, ""},
		// {"replicas": 10000000000} in an indefinite-length map.
		{"indefinite map", func(t *testing.T) []byte { return mustHex(t, "bf687265706c696361731b00000002540be400ff") }, "body.replicas"},
		// {"replicas": tag 1 (epoch time) 5}: decoded to a time string.
		{"time tag", func(t *testing.T) []byte { return mustHex(t, "a1687265706c69636173c105") }, "body.replicas"},
		// A byte string key, which the decoder takes as a text string.
		{"byte string key", func(t *testing.T) []byte { return mustHex(t, "a1487265706c69636173"+"1b00000002540be400") }, "body.replicas"},
		{"cut short", func(t *testing.T) []byte { return mustHex(t, "a2687265706c69636173") }, ""},
		{"trailing bytes", func(t *testing.T) []byte {
			return append(mustCBOR(t, map[string]any{"replicas": int64(10000000000)}), 0x00)
		}, ""},
		{"not a map", func(t *testing.T) []byte { return mustCBOR(t, []any{int64(10000000000)}) }, ""},
		{"uint64 beyond int64", func(t *testing.T) []byte { return mustHex(t, "a1646269671bffffffffffffffff") }, ""},
		{"empty", func(t *testing.T) []byte { return nil }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body(t)
			path := field.NewPath("body")
			got, want := numbers.CheckCBOR(path, body, typ), checkDecoded(path, body, typ)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("CheckCBOR %v, decoded and checked %v", got, want)
			}
			switch {
			case tc.field == "" && len(got) != 0:
				t.Fatalf("errors %v, want none", got)
			case tc.field != "" && (len(got) != 1 || got[0].Field != tc.field):
				t.Fatalf("errors %v, want one for %s", got, tc.field)
			}
		})
	}
}

// A body nested deeper than the walk follows is left to the decoder.
func TestCheckCBORDeep(t *testing.T) {
	typ := reflect.TypeFor[*numbersObject]()
	body := mustHex(t, "a166756e6b6e6f776e") // {"unknown": [[[...]]]}
	for range 20000 {
		body = append(body, 0x81)
	}
	body = append(body, 0x01)
	if errs := numbers.CheckCBOR(nil, body, typ); len(errs) != 0 {
		t.Fatalf("errors %v, want none (the decoder refuses the body)", errs)
	}
}

// Counts no body can hold are left to the decoder, whatever they wrap to.
func TestCheckCBORCounts(t *testing.T) {
	typ := reflect.TypeFor[*numbersObject]()
	for _, body := range []string{
		"bb8000000000000001" + "687265706c69636173" + "1b00000002540be400", // a map of 2^63+1 pairs
		"a1656974656d739bffffffffffffffff01",                               // {"items": an array of 2^64-1}
		"a1" + "67756e6b6e6f776e" + "bb8000000000000001" + "0101",          // {"unknown": a map of 2^63+1 pairs}
	} {
		data := mustHex(t, body)
		if got, want := numbers.CheckCBOR(nil, data, typ), checkDecoded(nil, data, typ); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: CheckCBOR %v, decoded and checked %v", body, got, want)
		}
	}
}
