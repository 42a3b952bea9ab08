package storage

import (
	"bytes"
	"io"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
)

// Bounds of a writtenValues: what it remembers are the values of writes
// whose two decodes have not both happened yet. A value is usually
// forgotten within milliseconds of its write, at its second decode; the
// bounds matter only for values never decoded twice (a write etcd refused,
// an update that changed nothing and so wrote nothing), which are
// forgotten oldest first.
const (
	// writtenCapacity is how many values are remembered at most.
	writtenCapacity = 256
	// writtenMaxBytes bounds the bytes of the values remembered (the
	// decoded objects they keep are a few times larger): 1 MiB.
	writtenMaxBytes = 1 << 20
	// writtenMaxValue is the largest value remembered, 64 KiB: a larger
	// one is parsed twice, as upstream does.
	writtenMaxValue = 64 << 10
)

// writtenValues lets the two decodes of a value that a store has just
// written share one parse. k8s.io/apiserver's etcd3 store decodes the
// bytes it wrote to return the stored object to the caller
// (etcd3.(*store).Create and GuaranteedUpdate), and its watcher decodes
// the same bytes again when the watch cache receives the write's event
// (watchChan.transform): two parses of every created or updated object.
//
// The storage codec's encoder (encodeWritten) tells it of every value it
// encodes for etcd; the first decode of such a value, whichever of the two
// it is, keeps a deep copy of what the serializer returned, and the second
// gets that copy (which no one else holds) instead of parsing the bytes
// again. Decoding is a pure function of the bytes, so the copy is what the
// parse would have returned: the decoder uses it only where that holds (no
// default GroupVersionKind, and no object to decode into, or a zero one of
// the decoded type: the JSON serializer decodes into a non-zero object by
// merging), and parses otherwise. Objects are copied with their generated
// DeepCopyObject, so nothing is shared between the two callers. A value
// decoded a third time (a GET of what a write stored) is parsed. Only a
// store with a watch cache decodes a value twice: the storage options use
// writtenValues only then.
//
// Safe for concurrent use.
type writtenValues struct {
	mu      sync.Mutex
	entries map[string]*writtenValue
	ring    [writtenCapacity]*writtenValue // insertion order, for eviction
	next    int                            // the ring's oldest slot
	bytes   int                            // the bytes of the keys of entries
	// count is len(entries), read without the lock: a decode while
	// nothing is remembered (every decode of a watch cache's initial load)
	// neither locks nor hashes its value.
	count atomic.Int64
}

type writtenValue struct {
	key string
	obj runtime.Object          // the serializer's result; nil until the first decode
	gvk schema.GroupVersionKind // the serializer's GroupVersionKind of obj
}

func newWrittenValues() *writtenValues {
	return &writtenValues{entries: map[string]*writtenValue{}}
}

// wrote records that data is about to be written to etcd.
func (w *writtenValues) wrote(data []byte) {
	if len(data) > writtenMaxValue {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.entries[string(data)]; ok {
		return
	}
	// The value takes the oldest slot, whose value is forgotten; while the
	// bytes would exceed writtenMaxBytes, the next oldest are forgotten too.
	for i := range writtenCapacity {
		if i > 0 && w.bytes+len(data) <= writtenMaxBytes {
			break
		}
		slot := (w.next + i) % writtenCapacity
		if old := w.ring[slot]; old != nil {
			w.forgetLocked(old)
			w.ring[slot] = nil
		}
	}
	v := &writtenValue{key: string(data)}
	w.ring[w.next] = v
	w.next = (w.next + 1) % writtenCapacity
	w.entries[v.key] = v
	w.bytes += len(v.key)
	w.count.Store(int64(len(w.entries)))
}

// forgetLocked removes v from the entries if it is still there.
func (w *writtenValues) forgetLocked(v *writtenValue) {
	if w.entries[v.key] == v {
		delete(w.entries, v.key)
		w.bytes -= len(v.key)
		w.count.Store(int64(len(w.entries)))
	}
}

// has reports whether data was written and is not forgotten yet.
func (w *writtenValues) has(data []byte) bool {
	if w.count.Load() == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.entries[string(data)]
	return ok
}

// lookup returns the entry of data, if data was written and not forgotten;
// with a decoded object, the entry is forgotten (its second decode), and
// the object is the caller's: no one else holds it.
func (w *writtenValues) lookup(data []byte) (obj runtime.Object, gvk schema.GroupVersionKind, written bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.entries[string(data)]
	if !ok {
		return nil, schema.GroupVersionKind{}, false
	}
	if v.obj != nil {
		w.forgetLocked(v)
	}
	return v.obj, v.gvk, true
}

// decoded keeps a copy of obj, the first decode of data, for its second.
func (w *writtenValues) decoded(data []byte, obj runtime.Object, gvk schema.GroupVersionKind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, ok := w.entries[string(data)]; ok && v.obj == nil {
		v.obj, v.gvk = obj, gvk
	}
}

// encodeWritten is the storage encoder that tells values of what it
// encodes (serverstorage.StorageCodecConfig.EncoderDecoratorFn).
type encodeWritten struct {
	runtime.Encoder
	values *writtenValues
}

// Encode implements runtime.Encoder: the encoding of obj, as the wrapped
// encoder writes it, recorded as written. Into a bytes.Buffer (what
// runtime.Encode and so the etcd3 store pass) it encodes in place;
// another writer gets the bytes through a buffer of its own.
func (e encodeWritten) Encode(obj runtime.Object, w io.Writer) error {
	if buf, ok := w.(*bytes.Buffer); ok {
		start := buf.Len()
		if err := e.Encoder.Encode(obj, buf); err != nil {
			return err
		}
		e.values.wrote(buf.Bytes()[start:])
		return nil
	}
	var buf bytes.Buffer
	if err := e.Encoder.Encode(obj, &buf); err != nil {
		return err
	}
	e.values.wrote(buf.Bytes())
	_, err := w.Write(buf.Bytes())
	return err
}

// parseOnce makes the storage codec of cfg parse each value it encodes
// once (writtenValues), and returns the values it remembers.
func parseOnce(cfg *serverstorage.StorageCodecConfig) *writtenValues {
	written := newWrittenValues()
	cfg.EncoderDecoratorFn = func(e runtime.Encoder) runtime.Encoder {
		return encodeWritten{Encoder: e, values: written}
	}
	cfg.DecoderDecoratorFn = written.decorateDecoders
	return written
}

// decodeWritten is the storage decoder that parses a written value once
// (serverstorage.StorageCodecConfig.DecoderDecoratorFn): it sits under the
// codec's conversion and defaulting, in place of the recognizer over the
// serializers, so what it keeps and copies is the serializer's result.
type decodeWritten struct {
	decoder runtime.Decoder // the recognizer over the storage serializers
	values  *writtenValues
}

// decorateDecoders is the DecoderDecoratorFn of a storage codec whose
// encoder is encodeWritten with the same values.
func (v *writtenValues) decorateDecoders(decoders []runtime.Decoder) []runtime.Decoder {
	return []runtime.Decoder{decodeWritten{decoder: recognizer.NewDecoder(decoders...), values: v}}
}

// Decode implements runtime.Decoder.
func (d decodeWritten) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if defaults != nil || !d.values.has(data) || !zeroOrNil(into) {
		return d.decoder.Decode(data, defaults, into)
	}
	cached, gvk, written := d.values.lookup(data)
	if !written {
		return d.decoder.Decode(data, defaults, into)
	}
	if cached != nil {
		// lookup forgot the entry: cached is this caller's alone.
		if into == nil {
			return cached, &gvk, nil
		}
		if reflect.TypeOf(into) == reflect.TypeOf(cached) {
			reflect.ValueOf(into).Elem().Set(reflect.ValueOf(cached).Elem())
			return into, &gvk, nil
		}
		return d.decoder.Decode(data, defaults, into)
	}
	obj, actual, err := d.decoder.Decode(data, defaults, into)
	if err != nil || obj == nil || actual == nil {
		return obj, actual, err
	}
	if _, ok := obj.(runtime.Unstructured); !ok && (into == nil || obj == into) {
		d.values.decoded(data, obj.DeepCopyObject(), *actual)
	}
	return obj, actual, nil
}

// zeroOrNil reports whether into is nil, or a pointer to a zero struct
// that is not unstructured: an object decoding cannot merge into.
func zeroOrNil(into runtime.Object) bool {
	if into == nil {
		return true
	}
	if _, ok := into.(runtime.Unstructured); ok {
		return false
	}
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	return v.Elem().IsZero()
}
