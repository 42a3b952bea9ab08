package storage

import (
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// internMaxValue is the longest string interned: longer values (an
// annotation holding a document) are rarely repeated, and their
// allocation dwarfs what a shared copy would save.
const internMaxValue = 1024

// internDecodes makes decorate's decoders (nil: none) intern the metadata
// of every typed object they decode (internMetadata).
func internDecodes(decorate func([]runtime.Decoder) []runtime.Decoder) func([]runtime.Decoder) []runtime.Decoder {
	return func(decoders []runtime.Decoder) []runtime.Decoder {
		if decorate != nil {
			decoders = decorate(decoders)
		}
		return []runtime.Decoder{internDecoder{decoder: recognizer.NewDecoder(decoders...)}}
	}
}

// internDecoder interns the metadata of what it decodes.
type internDecoder struct {
	decoder runtime.Decoder
}

// Decode implements runtime.Decoder.
func (d internDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.decoder.Decode(data, defaults, into)
	if err == nil {
		internMetadata(obj)
	}
	return obj, gvk, err
}

// internMetadata makes the strings of a freshly decoded typed object's
// metadata that objects tend to share (the namespace, annotation keys,
// finalizers, owner references' kinds, the
// managers, operations, versions and field sets of managedFields) point to
// one canonical copy each (a table of the strings seen last, bounded by
// internMaxEntries), instead of one copy per
// object: a watch cache holds every object of a resource decoded, and
// these repeat across objects, often entirely (the objects one controller
// writes have the same labels' keys and the same managed field sets).
// Strings are immutable, so the objects cannot tell; a managedFields
// entry's FieldsV1.Raw becomes a slice of a canonical string's bytes, which
// nothing writes to (a watch cache's objects are copied before they are
// changed, and a FieldsV1 is replaced, not edited, by the field manager).
// Objects whose metadata is not a *metav1.ObjectMeta (unstructured custom
// resources) are left as they are.
func internMetadata(obj runtime.Object) {
	acc, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return
	}
	m, ok := acc.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok || m == nil {
		return
	}
	m.Namespace = intern(m.Namespace)
	m.GenerateName = intern(m.GenerateName)
	if len(m.Annotations) != 0 {
		annotations := make(map[string]string, len(m.Annotations))
		for k, v := range m.Annotations {
			annotations[intern(k)] = intern(v)
		}
		m.Annotations = annotations
	}
	for i, f := range m.Finalizers {
		m.Finalizers[i] = intern(f)
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
	}
	for i := range m.ManagedFields {
		e := &m.ManagedFields[i]
		e.Manager, e.APIVersion, e.FieldsType, e.Subresource = intern(e.Manager), intern(e.APIVersion), intern(e.FieldsType), intern(e.Subresource)
		e.Operation = metav1.ManagedFieldsOperationType(intern(string(e.Operation)))
		if raw := e.FieldsV1.GetRawBytes(); len(raw) != 0 && len(raw) <= internMaxValue {
			s := intern(string(raw))
			// SetRawBytes would copy; sharing the canonical bytes is the point.
			//lint:ignore SA1019 the field is assigned directly so that equal field sets share one array
			e.FieldsV1.Raw = unsafe.Slice(unsafe.StringData(s), len(s))
		}
	}
}

// internMaxEntries bounds the table of canonical copies: when it holds
// this many, it starts over empty. Strings that repeat are interned again
// at once; those that do not (a label value unique to each object) only
// pass through it.
const internMaxEntries = 1 << 16

// internTable is the current table of canonical copies (a *sync.Map of
// string to itself) and internCount how many it holds.
var (
	internTable atomic.Pointer[sync.Map]
	internCount atomic.Int64
)

// internLabels returns the canonical map of the label set of m: objects
// with equal labels share one map (its keys and values interned), as the
// objects one controller writes often do; a map is ~60 bytes a label. Only
// for objects no one changes: the watch cache's (cacheAttrs). A set not
// seen since the table last started over becomes the canonical one.
func internLabels(m map[string]string) map[string]string {
	h := labelsHash(m)
	table := labelsTable.Load()
	if table == nil {
		labelsTable.CompareAndSwap(nil, &sync.Map{})
		table = labelsTable.Load()
	}
	if v, ok := table.Load(h); ok {
		if canonical := v.(map[string]string); maps.Equal(canonical, m) {
			return canonical
		}
	}
	canonical := make(map[string]string, len(m))
	for k, v := range m {
		canonical[intern(k)] = intern(v)
	}
	if _, loaded := table.LoadOrStore(h, canonical); !loaded && labelsCount.Add(1) > internMaxEntries {
		labelsCount.Store(0)
		labelsTable.Store(&sync.Map{})
	}
	return canonical
}

// labelsHash is a hash of a label set that does not depend on the map's
// order: the sum of its pairs' hashes.
func labelsHash(m map[string]string) uint64 {
	var sum uint64
	for k, v := range m {
		sum += maphash.String(labelsSeed, k)*31 + maphash.String(labelsSeed, v)
	}
	return sum
}

// labelsTable holds the canonical label maps by labelsHash (a *sync.Map of
// uint64 to map[string]string), labelsCount how many.
var (
	labelsTable atomic.Pointer[sync.Map]
	labelsCount atomic.Int64
	labelsSeed  = maphash.MakeSeed()
)

// intern returns the canonical copy of s, or s itself when it is empty or
// longer than internMaxValue.
func intern(s string) string {
	if s == "" || len(s) > internMaxValue {
		return s
	}
	table := internTable.Load()
	if table == nil {
		internTable.CompareAndSwap(nil, &sync.Map{})
		table = internTable.Load()
	}
	if v, ok := table.Load(s); ok {
		return v.(string)
	}
	v, loaded := table.LoadOrStore(s, s)
	if !loaded && internCount.Add(1) > internMaxEntries {
		internCount.Store(0)
		internTable.Store(&sync.Map{})
	}
	return v.(string)
}

// cacheAttrs is getAttrs for the objects a watch cache keeps (its
// GetAttrsFunc, called on each object it stores and on nothing else): it
// gives the object the canonical map of its labels (internLabels), so
// that the cache's objects with equal labels share one. The cache's
// objects are never changed in place: k8s.io/apiserver copies one before
// an update, and the in-process client copies what it hands out (the
// cacher's GETs already return copies that share the object's maps).
func cacheAttrs(getAttrs storage.AttrFunc) storage.AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		if acc, ok := obj.(metav1.ObjectMetaAccessor); ok {
			if m, ok := acc.GetObjectMeta().(*metav1.ObjectMeta); ok && m != nil && len(m.Labels) != 0 {
				m.Labels = internLabels(m.Labels)
			}
		}
		return getAttrs(obj)
	}
}

// withCacheAttrs makes the watch cache of decorate (the cacher's
// decorator) use cacheAttrs.
func withCacheAttrs(decorate generic.StorageDecorator) generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		return decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, cacheAttrs(getAttrs), triggers, indexers)
	}
}
