package numbers

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"

	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckCBOR is Check for data, a CBOR document holding an object (an
// application/cbor POST or PUT body, an application/apply-patch+cbor
// patch), read as k8s.io/apimachinery reads CBOR (integers as int64,
// floats as float64, byte and text strings as strings; the self-described
// CBOR tag 55799 skipped). A body that does not decode to an object has
// nothing to check (nil): the decoder that reads it next refuses it.
// Errors are field.Invalid at the fields' paths under path, which may be
// nil.
//
// The body is first walked in place, guided by goType, without decoding
// it: when every number at a numeric field fits, which is nearly every
// body, that is the answer. Anything else (a number that does not fit, a
// value of another kind where a number is expected, a tag other than
// 55799, an indefinite length, a body cut short, a count larger than the
// body, nesting deeper than cborMaxDepth) is decided as before the
// walk existed: the body is decoded (k8s.io/apimachinery's
// cbor/direct.Unmarshal) and the result checked with [Check], so the walk
// changes what a check costs, never what it reports.
func CheckCBOR(path *field.Path, data []byte, goType reflect.Type) field.ErrorList {
	w := cborWalk{data: data}
	if w.value(goType) {
		return nil
	}
	var content map[string]any
	if err := cbordirect.Unmarshal(data, &content); err != nil {
		return nil
	}
	return Check(path, content, goType)
}

// cborWalk reads one CBOR data item after another from data, starting at
// off. Its methods return false when the walk cannot vouch that Check would
// find nothing, which sends the body to the full decode.
type cborWalk struct {
	data  []byte
	off   int
	depth int // items being walked, nested
}

// directive starts the keys of strategic merge patch directives ($patch),
// which Check does not look into.
var directive = []byte("$")

// cborMaxDepth bounds the nesting the walk follows (the decoder's own limit
// is 10,000 levels); a deeper body goes to the decoder.
const cborMaxDepth = 1000

// CBOR major types (RFC 8949, section 3.1).
const (
	cborUint   = 0
	cborNegInt = 1
	cborBytes  = 2
	cborText   = 3
	cborArray  = 4
	cborMap    = 5
	cborTag    = 6
	cborSimple = 7
)

// cborSelfDescribed is the self-described CBOR tag (55799) that
// k8s.io/apimachinery's encoder puts before every object and its decoder
// skips.
const cborSelfDescribed = 55799

// head reads the head of the next data item: its major type, its
// additional information (the low five bits) and its argument (the value,
// length or count; a float's bits for major type 7). It returns false for a
// truncated item, a reserved additional information (28-30) and an
// indefinite length (31).
func (w *cborWalk) head() (major, info byte, arg uint64, ok bool) {
	if w.off >= len(w.data) {
		return 0, 0, 0, false
	}
	b := w.data[w.off]
	w.off++
	major, info = b>>5, b&0x1f
	n := 0
	switch {
	case info < 24:
		return major, info, uint64(info), true
	case info == 24:
		n = 1
	case info == 25:
		n = 2
	case info == 26:
		n = 4
	case info == 27:
		n = 8
	default:
		return 0, 0, 0, false
	}
	if len(w.data)-w.off < n {
		return 0, 0, 0, false
	}
	p := w.data[w.off : w.off+n]
	w.off += n
	switch n {
	case 1:
		arg = uint64(p[0])
	case 2:
		arg = uint64(binary.BigEndian.Uint16(p))
	case 4:
		arg = uint64(binary.BigEndian.Uint32(p))
	default:
		arg = binary.BigEndian.Uint64(p)
	}
	return major, info, arg, true
}

// itemHead is head after any self-described tags, refusing other tags:
// the decoder turns some tagged items into values of another kind (a time
// tag's number into a string), so a tagged value is never vouched for.
func (w *cborWalk) itemHead() (major, info byte, arg uint64, ok bool) {
	for {
		major, info, arg, ok = w.head()
		if !ok || major != cborTag {
			return major, info, arg, ok
		}
		if arg != cborSelfDescribed {
			return 0, 0, 0, false
		}
	}
}

// skipContent moves past the content of an item whose head was read.
func (w *cborWalk) skipContent(major byte, arg uint64) bool {
	if !w.countFits(major, arg) {
		return false
	}
	switch major {
	case cborBytes, cborText:
		if arg > uint64(len(w.data)-w.off) {
			return false
		}
		w.off += int(arg)
	case cborArray:
		for range arg {
			if !w.skip() {
				return false
			}
		}
	case cborMap:
		for range 2 * arg { // a key and a value per pair
			if !w.skip() {
				return false
			}
		}
	}
	return true
}

// countFits says whether the items an array or map head counts can be in
// what is left of data (each takes a byte at least), so that a count is
// never trusted beyond the body (or doubled past 2^64).
func (w *cborWalk) countFits(major byte, arg uint64) bool {
	left := uint64(len(w.data) - w.off)
	switch major {
	case cborArray:
		return arg <= left
	case cborMap:
		return arg <= left/2
	}
	return true
}

// skip moves past the next data item, tags included: Check does not look
// into it.
func (w *cborWalk) skip() bool {
	if w.depth++; w.depth > cborMaxDepth {
		return false
	}
	major, _, arg, ok := w.head()
	for ok && major == cborTag {
		major, _, arg, ok = w.head()
	}
	ok = ok && w.skipContent(major, arg)
	w.depth--
	return ok
}

// key reads a map key: a byte or text string (k8s.io/apimachinery writes
// byte strings and reads both as strings). The bytes are data's.
func (w *cborWalk) key() ([]byte, bool) {
	major, _, n, ok := w.itemHead()
	if !ok || (major != cborText && major != cborBytes) || n > uint64(len(w.data)-w.off) {
		return nil, false
	}
	k := w.data[w.off : w.off+int(n)]
	w.off += int(n)
	return k, true
}

// value walks the next data item as a value of Go type t, following the
// same types and fields as checkValue, and reports whether checkValue would
// find nothing in it.
func (w *cborWalk) value(t reflect.Type) bool {
	if w.depth++; w.depth > cborMaxDepth {
		return false
	}
	ok := w.typedValue(t)
	w.depth--
	return ok
}

func (w *cborWalk) typedValue(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		if decodesItself(t) {
			return w.skip()
		}
		t = t.Elem()
	}
	if decodesItself(t) || !examined(t) {
		return w.skip()
	}
	major, info, arg, ok := w.itemHead()
	if !ok {
		return false
	}
	if major == cborSimple && info == 22 {
		return true // null, which checkValue accepts anywhere
	}
	if !w.countFits(major, arg) {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fitsInteger(major, arg, t)
	case reflect.Float32, reflect.Float64:
		switch major {
		case cborUint, cborNegInt:
			return true
		case cborSimple:
			f, ok := cborFloat(info, arg)
			return ok && !math.IsNaN(f) && !math.IsInf(f, 0) && (t.Kind() == reflect.Float64 || math.Abs(f) <= math.MaxFloat32)
		}
		return false
	case reflect.Struct:
		if major != cborMap {
			return w.skipContent(major, arg)
		}
		fields := jsonFields(t)
		for range arg {
			k, ok := w.key()
			if !ok {
				return false
			}
			ft, known := fields[string(k)]
			if !known || bytes.HasPrefix(k, directive) {
				if !w.skip() {
					return false
				}
				continue
			}
			if !w.value(ft) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if major != cborArray {
			return w.skipContent(major, arg)
		}
		for range arg {
			if !w.value(t.Elem()) {
				return false
			}
		}
		return true
	case reflect.Map:
		if major != cborMap {
			return w.skipContent(major, arg)
		}
		for range arg {
			k, ok := w.key()
			if !ok {
				return false
			}
			if bytes.HasPrefix(k, directive) {
				if !w.skip() {
					return false
				}
				continue
			}
			if !w.value(t.Elem()) {
				return false
			}
		}
		return true
	}
	return w.skipContent(major, arg)
}

// examined says whether checkValue looks into a value of type t (not a
// pointer): numbers, structs, lists other than []byte, maps with string
// keys.
func examined(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Struct:
		return true
	case reflect.Slice, reflect.Array:
		return t.Elem().Kind() != reflect.Uint8
	case reflect.Map:
		return t.Key().Kind() == reflect.String
	}
	return false
}

// fitsInteger says whether a CBOR integer (major type 0 or 1, argument
// arg) is one the integer type t holds and apimachinery decodes (an int64).
func fitsInteger(major byte, arg uint64, t reflect.Type) bool {
	if arg > math.MaxInt64 {
		return false
	}
	bits := t.Bits()
	signed := t.Kind() <= reflect.Int64
	switch major {
	case cborUint:
		if signed {
			return arg <= 1<<(bits-1)-1
		}
		return bits == 64 || arg <= 1<<bits-1
	case cborNegInt: // the value is -1-arg
		return signed && arg <= 1<<(bits-1)-1
	}
	return false
}

// cborFloat returns the value of a half, single or double precision float
// (major type 7, additional information 25, 26 or 27).
func cborFloat(info byte, bits uint64) (float64, bool) {
	switch info {
	case 25:
		return halfToFloat(uint16(bits)), true
	case 26:
		return float64(math.Float32frombits(uint32(bits))), true
	case 27:
		return math.Float64frombits(bits), true
	}
	return 0, false
}

// halfToFloat converts an IEEE 754 half precision float.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(frac+1024, exp-25)
}
