package numbers

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Check reports every number in content that the Go type goType
// cannot hold exactly, so that a body decoded without a type (server-side
// apply, strategic merge patch) is refused where a typed decode (POST, PUT,
// merge and JSON patch, through sigs.k8s.io/json) refuses it, instead of
// being narrowed by runtime.DefaultUnstructuredConverter (which stores
// 10000000000 into an int32 as 1410065408).
//
// content is a JSON document decoded into any: maps of string keys, slices,
// strings, bools, nil, and numbers as json.Number (decoding with UseNumber,
// which keeps the literal), float64, or any Go integer type. goType is the
// object's Go type (a pointer is followed). Fields are matched by their json
// tag name; embedded structs without a name and ",inline" fields are
// flattened; pointers, slices, arrays and maps with string keys are followed.
// Keys the type does not know and keys starting with "$" (strategic merge
// patch directives) are not checked: unknown fields are field validation's
// business. Types with their own JSON or text unmarshalling (metav1.Time,
// resource.Quantity, intstr.IntOrString, runtime.RawExtension) and interface
// fields are not looked into.
//
// An integer field (int8..int64, uint8..uint64) takes a number with no
// fractional part in the type's range (1.0 is accepted, as the converter
// accepts it; 1.5, 1e100 and 4294967297 for an int32 are not), a float
// field a number; a string, bool, map or list where a number is expected is
// refused as well. null is always accepted (it clears the field). Each
// error is field.Invalid at the field's path (spec.replicas, items[2].count,
// labels[key]) under path, which may be nil.
func Check(path *field.Path, content any, goType reflect.Type) field.ErrorList {
	var errs field.ErrorList
	checkValue(path, content, goType, &errs)
	return errs
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself says whether t (or *t) decodes its own JSON.
func decodesItself(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer {
		t = reflect.PointerTo(t)
	}
	return t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType)
}

func checkValue(path *field.Path, v any, t reflect.Type, errs *field.ErrorList) {
	if v == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		if decodesItself(t) {
			return
		}
		t = t.Elem()
	}
	if decodesItself(t) {
		return
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if msg := checkInteger(v, t); msg != "" {
			*errs = append(*errs, field.Invalid(path, shown(v), msg))
		}
	case reflect.Float32, reflect.Float64:
		if msg := checkFloat(v, t); msg != "" {
			*errs = append(*errs, field.Invalid(path, shown(v), msg))
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return // a type mismatch the typed decode reports
		}
		fields := jsonFields(t)
		for key, val := range m {
			if strings.HasPrefix(key, "$") {
				continue
			}
			if ft, ok := fields[key]; ok {
				checkValue(path.Child(key), val, ft, errs)
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return // []byte is a base64 string
		}
		l, ok := v.([]any)
		if !ok {
			return
		}
		for i, val := range l {
			if m, ok := val.(map[string]any); ok && len(m) == 1 {
				if _, ok := m["$patch"]; ok {
					continue // a strategic merge patch directive in a list
				}
			}
			checkValue(path.Index(i), val, t.Elem(), errs)
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for key, val := range m {
			if strings.HasPrefix(key, "$") {
				continue
			}
			checkValue(path.Key(key), val, t.Elem(), errs)
		}
	}
}

// fieldsByType caches jsonFields per struct type (reflect.Type keys,
// map[string]reflect.Type values, never modified once stored): a type's
// fields do not change, and every check of a body walks the same types.
var fieldsByType sync.Map

// jsonFields returns the JSON names of t's fields (a struct type) and their
// types, flattening embedded and inline structs as encoding/json does. The
// map is shared: callers must not modify it.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsByType.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	addJSONFields(t, out, 0)
	m, _ := fieldsByType.LoadOrStore(t, out)
	return m.(map[string]reflect.Type)
}

func addJSONFields(t reflect.Type, out map[string]reflect.Type, depth int) {
	if depth > 10 {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := strings.Contains(","+opts+",", ",inline,")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if (f.Anonymous && name == "") || inline {
			if ft.Kind() == reflect.Struct && !decodesItself(ft) {
				addJSONFields(ft, out, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := out[name]; !taken || depth == 0 {
			out[name] = f.Type
		}
	}
}

// checkInteger returns why v does not fit the integer type t, or "".
func checkInteger(v any, t reflect.Type) string {
	var n big.Int
	switch x := v.(type) {
	case json.Number:
		if _, ok := n.SetString(string(x), 10); !ok {
			f, _, err := big.ParseFloat(string(x), 10, 256, big.ToNearestEven)
			if err != nil {
				return fmt.Sprintf("must be an integer of type %s", t.Kind())
			}
			if !f.IsInt() {
				return fmt.Sprintf("must be an integer of type %s, not a number with a fraction", t.Kind())
			}
			f.Int(&n)
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) {
			return fmt.Sprintf("must be an integer of type %s, not a number with a fraction", t.Kind())
		}
		big.NewFloat(x).Int(&n)
	case float32:
		return checkInteger(float64(x), t)
	case int, int8, int16, int32, int64:
		n.SetInt64(reflect.ValueOf(x).Int())
	case uint, uint8, uint16, uint32, uint64:
		n.SetUint64(reflect.ValueOf(x).Uint())
	default:
		return fmt.Sprintf("must be an integer of type %s, not %s", t.Kind(), jsonKind(v))
	}
	bits := t.Bits()
	var lo, hi big.Int
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		hi.Lsh(big.NewInt(1), uint(bits)).Sub(&hi, big.NewInt(1))
	} else {
		hi.Lsh(big.NewInt(1), uint(bits-1)).Sub(&hi, big.NewInt(1))
		lo.Neg(&hi).Sub(&lo, big.NewInt(1))
	}
	if n.Cmp(&lo) < 0 || n.Cmp(&hi) > 0 {
		return fmt.Sprintf("must be an integer of type %s, between %s and %s", t.Kind(), lo.String(), hi.String())
	}
	return ""
}

// checkFloat returns why v does not fit the float type t, or "".
func checkFloat(v any, t reflect.Type) string {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return fmt.Sprintf("must be a number of type %s", t.Kind())
		}
	case float64:
		f = x
	case float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return ""
	default:
		return fmt.Sprintf("must be a number of type %s, not %s", t.Kind(), jsonKind(v))
	}
	if t.Kind() == reflect.Float32 && math.Abs(f) > math.MaxFloat32 {
		return fmt.Sprintf("must be a number of type %s (at most %g in magnitude)", t.Kind(), math.MaxFloat32)
	}
	return ""
}

// jsonKind names the JSON kind of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// shown is the value an error reports: the literal for numbers.
func shown(v any) any {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case map[string]any:
		return "<object>"
	case []any:
		return "<list>"
	}
	return v
}
