package storage

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
)

// DecodeCounts counts, per resource, the values its storage codec has
// decoded from etcd: while a watch cache loads, the objects it has read so
// far (registry.Registry.Loading reports them). The zero value is ready to
// use; safe for concurrent use. Set it as Config.DecodeCounts.
type DecodeCounts struct {
	counters sync.Map // schema.GroupResource -> *atomic.Int64
}

// Decoded returns how many values the codec of the served resource gr has
// decoded so far.
func (d *DecodeCounts) Decoded(gr schema.GroupResource) int64 {
	return d.counter(gr).Load()
}

func (d *DecodeCounts) counter(gr schema.GroupResource) *atomic.Int64 {
	if c, ok := d.counters.Load(gr); ok {
		return c.(*atomic.Int64)
	}
	c, _ := d.counters.LoadOrStore(gr, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// countDecodes makes decorate's decoders (nil: none) count every decode
// into counter.
func countDecodes(decorate func([]runtime.Decoder) []runtime.Decoder, counter *atomic.Int64) func([]runtime.Decoder) []runtime.Decoder {
	return func(decoders []runtime.Decoder) []runtime.Decoder {
		if decorate != nil {
			decoders = decorate(decoders)
		}
		return []runtime.Decoder{countingDecoder{decoder: recognizer.NewDecoder(decoders...), decoded: counter}}
	}
}

// countingDecoder counts the values it decodes.
type countingDecoder struct {
	decoder runtime.Decoder
	decoded *atomic.Int64
}

// Decode implements runtime.Decoder.
func (d countingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	d.decoded.Add(1)
	return d.decoder.Decode(data, defaults, into)
}
