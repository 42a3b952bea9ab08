package numbers

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckProtobuf reports every integer in data, the protobuf
// encoding of an object of Go type goType (a pointer is followed), that
// the Go field cannot hold: go-to-protobuf's generated Unmarshal decodes a
// varint into an int32 field by keeping its low 32 bits, so spec.replicas
// sent as 10000000000 would be stored as 1410065408, where JSON, YAML and
// CBOR bodies are refused. data is the object's message alone (the Raw of
// the runtime.Unknown envelope of application/vnd.kubernetes.protobuf).
//
// Fields are matched by the field numbers of their `protobuf:"..."` struct
// tags and reported under their JSON names (spec.replicas, items[1].port,
// labels[key]); embedded messages, repeated fields (packed or not) and map
// entries are followed; fields without a protobuf tag, unknown field
// numbers and fixed-width numbers are not checked. Each error is
// field.Invalid under path, which may be nil. Malformed wire data stops the
// walk without an error: the typed decode refuses it.
func CheckProtobuf(path *field.Path, data []byte, goType reflect.Type) field.ErrorList {
	var errs field.ErrorList
	checkMessage(path, data, goType, &errs, 0)
	return errs
}

// protoField is one struct field as the protobuf wire names it.
type protoField struct {
	name     string // JSON name, for paths
	encoding string // varint, zigzag32, zigzag64, bytes, fixed32, ...
	typ      reflect.Type
}

// protoFieldsByType caches protoFields per struct type (reflect.Type keys,
// map[protowire.Number]protoField values, never modified once stored).
var protoFieldsByType sync.Map

// protoFields returns t's fields by protobuf field number; embedded
// structs without a protobuf tag are not flattened (go-to-protobuf gives
// every encoded field its own tag). The map is shared: callers must not
// modify it.
func protoFields(t reflect.Type) map[protowire.Number]protoField {
	if m, ok := protoFieldsByType.Load(t); ok {
		return m.(map[protowire.Number]protoField)
	}
	m, _ := protoFieldsByType.LoadOrStore(t, buildProtoFields(t))
	return m.(map[protowire.Number]protoField)
}

func buildProtoFields(t reflect.Type) map[protowire.Number]protoField {
	out := map[protowire.Number]protoField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("protobuf")
		if tag == "" {
			continue
		}
		parts := strings.Split(tag, ",")
		if len(parts) < 2 {
			continue
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		out[protowire.Number(n)] = protoField{name: name, encoding: parts[0], typ: f.Type}
	}
	return out
}

func checkMessage(path *field.Path, data []byte, t reflect.Type, errs *field.ErrorList, depth int) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth > 32 {
		return
	}
	fields := protoFields(t)
	index := map[protowire.Number]int{}
	for len(data) > 0 {
		num, wt, n := protowire.ConsumeTag(data)
		if n < 0 {
			return
		}
		data = data[n:]
		f, known := fields[num]
		var value []byte
		var varint uint64
		switch wt {
		case protowire.VarintType:
			varint, n = protowire.ConsumeVarint(data)
		case protowire.BytesType:
			value, n = protowire.ConsumeBytes(data)
		default:
			n = protowire.ConsumeFieldValue(num, wt, data)
		}
		if n < 0 {
			return
		}
		data = data[n:]
		if !known {
			continue
		}
		ft := f.typ
		p := path.Child(f.name)
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
			p = p.Index(index[num])
			index[num]++
			ft = ft.Elem()
		}
		switch {
		case wt == protowire.VarintType:
			checkVarint(p, varint, f.encoding, ft, errs)
		case wt == protowire.BytesType && f.typ.Kind() == reflect.Map:
			checkMapEntry(path.Child(f.name), value, f.typ, errs, depth)
		case wt == protowire.BytesType && f.typ.Kind() == reflect.Slice && isInteger(ft):
			// packed repeated integers
			index[num]--
			for len(value) > 0 {
				v, n := protowire.ConsumeVarint(value)
				if n < 0 {
					return
				}
				value = value[n:]
				checkVarint(path.Child(f.name).Index(index[num]), v, f.encoding, ft, errs)
				index[num]++
			}
		case wt == protowire.BytesType:
			checkMessage(p, value, ft, errs, depth+1)
		}
	}
}

// checkMapEntry checks the value of one map entry (key 1, value 2).
func checkMapEntry(path *field.Path, data []byte, t reflect.Type, errs *field.ErrorList, depth int) {
	key, val := "", []byte(nil)
	var varint uint64
	isVarint := false
	for len(data) > 0 {
		num, wt, n := protowire.ConsumeTag(data)
		if n < 0 {
			return
		}
		data = data[n:]
		switch {
		case num == 1 && wt == protowire.BytesType:
			var b []byte
			b, n = protowire.ConsumeBytes(data)
			key = string(b)
		case num == 2 && wt == protowire.BytesType:
			val, n = protowire.ConsumeBytes(data)
		case num == 2 && wt == protowire.VarintType:
			varint, n = protowire.ConsumeVarint(data)
			isVarint = true
		default:
			n = protowire.ConsumeFieldValue(num, wt, data)
		}
		if n < 0 {
			return
		}
		data = data[n:]
	}
	switch {
	case isVarint:
		checkVarint(path.Key(key), varint, "varint", t.Elem(), errs)
	case val != nil:
		checkMessage(path.Key(key), val, t.Elem(), errs, depth+1)
	}
}

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// checkVarint reports a varint that the integer type t cannot hold, read
// as the tag's encoding says (zigzag or two's complement).
func checkVarint(path *field.Path, v uint64, encoding string, t reflect.Type, errs *field.ErrorList) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !isInteger(t) {
		return
	}
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if bits < 64 && v > uint64(1)<<bits-1 {
			*errs = append(*errs, field.Invalid(path, strconv.FormatUint(v, 10),
				fmt.Sprintf("must be an integer of type %s, between 0 and %d", t.Kind(), uint64(1)<<bits-1)))
		}
	default:
		s := int64(v)
		if strings.HasPrefix(encoding, "zigzag") {
			s = protowire.DecodeZigZag(v)
		}
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if bits < 64 {
			lo, hi = -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
		}
		if s < lo || s > hi {
			*errs = append(*errs, field.Invalid(path, strconv.FormatInt(s, 10),
				fmt.Sprintf("must be an integer of type %s, between %d and %d", t.Kind(), lo, hi)))
		}
	}
}
