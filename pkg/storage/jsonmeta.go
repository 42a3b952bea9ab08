package storage

import (
	"bytes"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// jsonMeta is k8s.io/apimachinery's json.SimpleMetaFactory with a fast
// path. SimpleMetaFactory finds an object's apiVersion and kind with
// encoding/json's Unmarshal into a two-field struct: a validating pass and
// a decoding pass over the whole value, about a third of the CPU of
// decoding a stored object (docs/performance.md, "Start-up"). scanTypeMeta
// reads the same two strings in one pass, and jsonMeta hands every value
// it cannot vouch for (see scanTypeMeta) to SimpleMetaFactory, so the
// result, errors included, is SimpleMetaFactory's for every input.
type jsonMeta struct{}

// Interpret implements json.MetaFactory.
func (jsonMeta) Interpret(data []byte) (*schema.GroupVersionKind, error) {
	apiVersion, kind, ok := scanTypeMeta(data)
	if !ok {
		return jsonserializer.DefaultMetaFactory.Interpret(data)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	return &schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}, nil
}

// storageSerializer is a codec factory whose JSON serializers (the ones
// the storage codec encodes with and decodes first) interpret the type
// with jsonMeta; everything else is the factory's own.
type storageSerializer struct {
	serializer.CodecFactory
	mediaTypes []runtime.SerializerInfo
}

// newStorageSerializer wraps codecs, the codec factory of scheme.
func newStorageSerializer(codecs serializer.CodecFactory, scheme *runtime.Scheme) storageSerializer {
	infos := slices.Clone(codecs.SupportedMediaTypes())
	for i := range infos {
		if infos[i].MediaType != runtime.ContentTypeJSON {
			continue
		}
		// The options of the factory's own JSON serializers
		// (serializer.NewCodecFactory): neither YAML nor pretty.
		infos[i].Serializer = jsonserializer.NewSerializerWithOptions(jsonMeta{}, scheme, scheme, jsonserializer.SerializerOptions{})
		infos[i].StrictSerializer = jsonserializer.NewSerializerWithOptions(jsonMeta{}, scheme, scheme, jsonserializer.SerializerOptions{Strict: true})
	}
	return storageSerializer{CodecFactory: codecs, mediaTypes: infos}
}

// SupportedMediaTypes implements runtime.StorageSerializer.
func (s storageSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.mediaTypes }

var _ runtime.StorageSerializer = storageSerializer{}

// maxScanDepth is the deepest nesting scanTypeMeta walks; deeper values go
// to SimpleMetaFactory (encoding/json's own limit is 10,000).
const maxScanDepth = 1000

// scanTypeMeta returns the values of the top-level "apiVersion" and
// "kind" of the JSON object data, as encoding/json's Unmarshal sets them
// (the last of repeated keys wins), when it can vouch that Unmarshal
// would succeed with exactly these: data is one valid JSON object (RFC
// 8259, as encoding/json checks it: any bytes in strings but control
// characters, invalid UTF-8 included) with only white space around it,
// nested at most maxScanDepth deep; no top-level key has an escape or a
// non-ASCII byte, or matches either name only case-insensitively (which
// Unmarshal would honour); and the two values, when present, are strings
// without escapes or non-ASCII bytes (which Unmarshal would rewrite).
// Otherwise ok is false.
func scanTypeMeta(data []byte) (apiVersion, kind string, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return "", "", false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			key, next, good := plainString(data, i)
			if !good {
				return "", "", false
			}
			i = skipSpace(data, next)
			if i >= len(data) || data[i] != ':' {
				return "", "", false
			}
			i = skipSpace(data, i+1)
			switch {
			case string(key) == "apiVersion", string(key) == "kind":
				value, next, good := plainString(data, i)
				if !good {
					return "", "", false
				}
				if key[0] == 'k' {
					kind = string(value)
				} else {
					apiVersion = string(value)
				}
				i = next
			case bytes.EqualFold(key, []byte("apiVersion")), bytes.EqualFold(key, []byte("kind")):
				return "", "", false
			default:
				if i, good = skipValue(data, i, 1); !good {
					return "", "", false
				}
			}
			var done bool
			if i, done, good = nextElement(data, i, '}'); !good {
				return "", "", false
			}
			if done {
				break
			}
		}
	}
	if skipSpace(data, i) != len(data) {
		return "", "", false
	}
	return apiVersion, kind, true
}

// plainString returns the contents of the string starting at data[i] and
// the index after it, when it is a string of ASCII bytes (no control
// character below 0x20, which JSON forbids) without escapes.
func plainString(data []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// nextElement reads what follows a member of an object or an element of
// an array, from data[i]: white space, then ',' (done is false, next the
// index of the next one, after white space) or closer (done, next the
// index after it). ok is false for anything else.
func nextElement(data []byte, i int, closer byte) (next int, done, ok bool) {
	i = skipSpace(data, i)
	switch {
	case i >= len(data):
		return 0, false, false
	case data[i] == ',':
		return skipSpace(data, i+1), false, true
	case data[i] == closer:
		return i + 1, true, true
	}
	return 0, false, false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the index after the JSON value starting at data[i]
// (no white space before it), nested depth deep, when it is valid.
func skipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) || depth > maxScanDepth {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '{':
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return 0, false
			}
			var ok bool
			if i, ok = skipString(data, i); !ok {
				return 0, false
			}
			i = skipSpace(data, i)
			if i >= len(data) || data[i] != ':' {
				return 0, false
			}
			if i, ok = skipValue(data, skipSpace(data, i+1), depth+1); !ok {
				return 0, false
			}
			var done bool
			if i, done, ok = nextElement(data, i, '}'); !ok || done {
				return i, ok
			}
		}
	case c == '[':
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(data, i, depth+1); !ok {
				return 0, false
			}
			var done bool
			if i, done, ok = nextElement(data, i, ']'); !ok || done {
				return i, ok
			}
		}
	case c == '-' || isDigit(c):
		return skipNumber(data, i)
	case c == 't':
		return skipLiteral(data, i, "true")
	case c == 'f':
		return skipLiteral(data, i, "false")
	case c == 'n':
		return skipLiteral(data, i, "null")
	}
	return 0, false
}

// skipString returns the index after the string starting at data[i] (a
// '"'), when it is valid: no control character, only JSON's escapes.
func skipString(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			j++
			if j >= len(data) {
				return 0, false
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(data) {
					return 0, false
				}
				for _, h := range data[j+1 : j+5] {
					if !isDigit(h) && (h|0x20 < 'a' || h|0x20 > 'f') {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// skipNumber returns the index after the number starting at data[i], when
// it follows JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return 0, false
	case data[i] == '0':
		i++
	case isDigit(data[i]):
		i = skipDigits(data, i)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return 0, false
		}
		i = skipDigits(data, i)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return 0, false
		}
		i = skipDigits(data, i)
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// skipLiteral returns the index after lit at data[i], when it is there.
func skipLiteral(data []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(data[i:], []byte(lit)) {
		return 0, false
	}
	return i + len(lit), true
}
