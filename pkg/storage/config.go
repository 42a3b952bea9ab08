package storage

import (
	"errors"
	"fmt"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/registry/generic"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/customapi/customapi/pkg/etcd"
)

// DefaultPrefix is the etcd key prefix of all objects, as in kube-apiserver
// (--etcd-prefix).
const DefaultPrefix = "/registry"

// DefaultMediaType is the encoding of values in etcd (--storage-media-type).
const DefaultMediaType = runtime.ContentTypeJSON

// DefaultCompactionInterval is how often the compactor asks etcd to compact
// old revisions, as kube-apiserver's --etcd-compaction-interval.
const DefaultCompactionInterval = storagebackend.DefaultCompactInterval

// Config says where and how objects are stored. Etcd is required; every
// other zero value means the default. The registry takes it as it is
// (registry.Config.Storage); Options sets it from kube-apiserver's flags.
type Config struct {
	// Etcd is the cluster to store in: an embedded server's ClientConfig or
	// an external cluster. registry.Open fills it in when it starts an
	// embedded etcd.
	Etcd etcd.ClientConfig
	// Prefix is prepended to every key; "" means DefaultPrefix. It must
	// start with "/".
	Prefix string
	// MediaType is the storage encoding, one of MediaTypes; "" means
	// application/json. application/yaml and application/cbor work for any
	// type; application/vnd.kubernetes.protobuf needs generated marshallers.
	MediaType string
	// DisableWatchCache serves every read from etcd instead of from the
	// watch cache (kube-apiserver's --watch-cache=false).
	DisableWatchCache bool
	// WatchCacheDisabled are resources served without a watch cache even
	// when it is on (kube-apiserver's --watch-cache-sizes=<resource>#0):
	// their reads go to etcd and their watches to etcd's watch, and the
	// server holds none of their objects in memory. For a resource stored
	// as another (StoredAs), name the served one.
	WatchCacheDisabled []schema.GroupResource
	// CompactionInterval is how often old revisions are compacted, by
	// k8s.io/apiserver's compactor (kube-apiserver's
	// --etcd-compaction-interval; each run compacts the revisions older
	// than the previous run, so between one and two intervals of history
	// are kept); 0 means DefaultCompactionInterval and a negative value
	// disables compaction.
	CompactionInterval time.Duration
	// WriteTimeout bounds each create, update and delete in etcd; 0 means
	// DefaultWriteTimeout (8 s) and a negative value means no bound (the
	// request's own timeout, as upstream). A write that runs out of time, or
	// that etcd cannot serve (no quorum, no leader), fails with 504 Timeout:
	// it may or may not have been applied.
	WriteTimeout time.Duration
	// ReadTimeout bounds each get and list that goes to etcd, including a
	// consistent list's resourceVersion check when the watch cache serves
	// it; 0 means DefaultReadTimeout (8 s) and a negative value means no
	// bound. A read that runs out of time, or that etcd cannot serve, fails
	// with 503 ServiceUnavailable. Keep it above the time the largest
	// unpaginated list takes.
	ReadTimeout time.Duration
	// Transformers encrypt values at rest: each resource's values pass
	// through TransformerForResource(gr) on their way to and from etcd, with
	// the value's full etcd key as authenticated data, as kube-apiserver's
	// --encryption-provider-config does (storagebackend.Config.Transformer).
	// gr is the resource whose keys hold the value: for a resource stored as
	// another (StoredAs) that other resource. Build it with
	// k8s.io/apiserver/pkg/server/options/encryptionconfig
	// (LoadEncryptionConfig, then StaticTransformers or DynamicTransformers).
	// nil stores values as they are encoded (no encryption).
	Transformers value.ResourceTransformers
	// TracerProvider traces the etcd client's calls (a span per gRPC
	// call, as kube-apiserver's etcd client with --tracing-config-file);
	// the etcd3 store's own spans ("Create etcd3", ...) need no provider:
	// they are children of the request's span. registry.Open sets it to
	// registry.Config.TracerProvider when nil. nil: the etcd client
	// traces nothing.
	TracerProvider oteltrace.TracerProvider
	// ObjectCounts, when set, is told each resource's object count and
	// average size (storage.Stats, from the watch cache's keys or an etcd
	// count) every CountPollPeriod, under the resource's
	// "<resource>.<group>" name, as kube-apiserver's generic registry does
	// (genericregistry.Store's startObservingCount, which also sets the
	// apiserver_storage_objects metric). A server reads it to charge a LIST
	// by the objects it returns (the in-flight seats of
	// options.LimitOptions). nil: counts are not polled.
	ObjectCounts flowcontrolrequest.StorageObjectCountTracker
	// EnableGarbageCollection makes deletes honour propagationPolicy
	// Foreground and Orphan (and the deprecated orphanDependents) as
	// kube-apiserver's stores do with a garbage collector: the object
	// gets deletionTimestamp and the finalizer foregroundDeletion or
	// orphan, and stays until the garbage collector removes it; a
	// resource's default policy is Background. Set it only when a garbage
	// collector runs (pkg/controllers/garbagecollector): without one,
	// such deletes never finish. false: every delete is immediate, its
	// dependents untouched.
	EnableGarbageCollection bool
	// DecodeCounts, when set, counts the values each Go-typed resource's
	// storage codec decodes (under the served resource: both resources
	// of a StoredAs pair count apart): the progress of a watch cache's
	// initial load. nil: not counted.
	DecodeCounts *DecodeCounts
	// Alarms, when set, follows etcd's alarms: every store's write that
	// etcd refuses because its database reached its space quota
	// (NOSPACE) is answered with Alarms.NoSpaceError (503
	// ServiceUnavailable naming the quota and the recovery command; the
	// Status without them when nil) and makes Alarms read etcd's alarms
	// at once. registry.Open creates one when nil, runs it on the
	// registry's etcd until Close, and reports it (Registry.EtcdAlarms).
	Alarms *AlarmMonitor
	// CountPollPeriod is how often ObjectCounts is told the counts
	// (kube-apiserver's --etcd-count-metric-poll-period); 0 means
	// DefaultCountPollPeriod. Ignored when ObjectCounts is nil.
	CountPollPeriod time.Duration
	// Overrides keep some resources in etcd clusters of their own
	// (kube-apiserver's --etcd-servers-overrides; see Override): every
	// other field applies to them as to the resources on Etcd, per
	// cluster (compaction runs on each, a store whose cluster cannot
	// answer fails with 503/504 while the others keep working). Each
	// resource at most once. nil: every resource is on Etcd.
	Overrides []Override
}

// DefaultCountPollPeriod is Config.CountPollPeriod's default: ten seconds.
// kube-apiserver polls every minute (--etcd-count-metric-poll-period); a
// count that lags by a minute lets a server just filled with objects serve
// a minute of LISTs charged as if the resource were empty, which is what the
// count is for. A poll is one etcd request (the current revision) and one
// pass over the resource's keys in the watch cache (an etcd count without
// the watch cache).
const DefaultCountPollPeriod = 10 * time.Second

// Validate returns an error naming the first invalid field: Etcd (see
// etcd.ClientConfig.Validate), then what ValidateWithoutEtcd checks.
func (c Config) Validate() error {
	if err := c.Etcd.Validate(); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return c.ValidateWithoutEtcd()
}

// ValidateWithoutEtcd checks every field but Etcd, for a caller that fills
// Etcd in later (registry.Open with an embedded etcd): Overrides (a
// resource and a valid etcd each, no resource twice), Prefix (CheckPrefix)
// and MediaType (CheckMediaType). Whether the scheme's types can be
// encoded in MediaType is checked per resource, when its store is built.
func (c Config) ValidateWithoutEtcd() error {
	if err := validateOverrides(c.Overrides); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err := CheckPrefix(c.Prefix); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err := CheckMediaType(c.MediaType); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// WithDefaults returns c with an empty Prefix and MediaType replaced by
// DefaultPrefix and DefaultMediaType, the values keys and values are
// written with. (The durations keep their 0-means-default convention:
// RESTOptionsGetter applies it.)
func (c Config) WithDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.MediaType == "" {
		c.MediaType = DefaultMediaType
	}
	return c
}

// RESTOptionsGetter validates the configuration and returns the options
// getter the generic registry builds its storage from, for the types of
// scheme (see resource.NewScheme). It returns an error for an invalid
// configuration, a nil scheme or a media type the scheme cannot encode.
// Connections to etcd are made when each resource's store is built.
func (c Config) RESTOptionsGetter(scheme *runtime.Scheme) (generic.RESTOptionsGetter, error) {
	if scheme == nil {
		return nil, errors.New("storage: a scheme is required")
	}
	return c.getter(scheme)
}

// getter validates c and builds the getter of scheme's types; a nil scheme
// (custom resources) has no codec factory.
func (c Config) getter(scheme *runtime.Scheme) (*restOptionsGetter, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	var codecs runtime.StorageSerializer
	if scheme != nil {
		// The storage codec factory: CBOR (RFC 8949) is offered besides
		// JSON, YAML and protobuf: it works by reflection on any Go type,
		// and decodes faster than JSON.
		// Its JSON serializers read the type of a stored object in one
		// pass (jsonMeta).
		codecs = newStorageSerializer(serializer.NewCodecFactory(scheme, serializer.WithSerializer(cbor.NewSerializerInfo)), scheme)
		if _, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), c.MediaType); !ok {
			return nil, fmt.Errorf("storage: media type %q is not supported by the scheme", c.MediaType)
		}
	}
	// One backend per etcd: the main one and each override's, with the
	// same prefix and compaction (k8s.io/apiserver runs one compactor per
	// cluster).
	newBackend := func(e etcd.ClientConfig) storagebackend.Config {
		b := backend(e, c.Prefix)
		if c.TracerProvider != nil {
			b.Transport.TracerProvider = c.TracerProvider
		}
		switch {
		case c.CompactionInterval < 0:
			b.CompactionInterval = 0
		case c.CompactionInterval > 0:
			b.CompactionInterval = c.CompactionInterval
		}
		return *b
	}
	var overrides map[schema.GroupResource]storagebackend.Config
	for _, o := range c.Overrides {
		if overrides == nil {
			overrides = map[schema.GroupResource]storagebackend.Config{}
		}
		overrides[o.Resource] = newBackend(o.Etcd)
	}
	return &restOptionsGetter{
		scheme:       scheme,
		codecs:       codecs,
		mediaType:    c.MediaType,
		backend:      newBackend(c.Etcd),
		overrides:    overrides,
		watchCache:   !c.DisableWatchCache,
		noCache:      sets.New(c.WatchCacheDisabled...),
		writeTimeout: effectiveTimeout(c.WriteTimeout, DefaultWriteTimeout),
		readTimeout:  effectiveTimeout(c.ReadTimeout, DefaultReadTimeout),
		transformers: c.Transformers,
		counts:       c.ObjectCounts,
		countPeriod:  effectiveTimeout(c.CountPollPeriod, DefaultCountPollPeriod),
		gc:           c.EnableGarbageCollection,
		decodes:      c.DecodeCounts,
		alarms:       c.Alarms,
	}, nil
}

// effectiveTimeout applies the Config convention: 0 is def, negative is no
// bound (returned as 0).
func effectiveTimeout(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

type restOptionsGetter struct {
	scheme                    *runtime.Scheme
	codecs                    runtime.StorageSerializer // nil without a scheme
	mediaType                 string
	backend                   storagebackend.Config
	overrides                 map[schema.GroupResource]storagebackend.Config // Config.Overrides' backends; nil without
	watchCache                bool
	noCache                   sets.Set[schema.GroupResource] // Config.WatchCacheDisabled
	writeTimeout, readTimeout time.Duration
	transformers              value.ResourceTransformers                   // nil: none
	counts                    flowcontrolrequest.StorageObjectCountTracker // nil: no polling
	countPeriod               time.Duration
	gc                        bool          // Config.EnableGarbageCollection
	decodes                   *DecodeCounts // nil: not counted
	alarms                    *AlarmMonitor // Config.Alarms; nil: none
}

// GetRESTOptions returns the storage options of one resource: its codec
// (storage version = the served version of example's kind, memory version =
// the group's internal version), its key prefix <group>/<resource>, and the
// decorator that adds the watch cache, error mapping and deadlines.
func (g *restOptionsGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	if example == nil {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: an example object is required", gr)
	}
	storageKind, err := g.servedKind(example)
	if err != nil {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: %w", gr, err)
	}
	return g.restOptions(gr, gr, example, storageKind.Group, storageKind)
}

// StoredAs returns the options getter of a resource kept in another
// resource's storage (resource.Resource.StoredAs): keys under stored's
// prefix, values encoded as storageKind, decoded into the served type of
// the example (the scheme converts). getter must come from
// Config.RESTOptionsGetter.
func StoredAs(getter generic.RESTOptionsGetter, stored schema.GroupResource, storageKind schema.GroupVersionKind) generic.RESTOptionsGetter {
	return storedAsGetter{getter: getter, stored: stored, kind: storageKind}
}

type storedAsGetter struct {
	getter generic.RESTOptionsGetter
	stored schema.GroupResource
	kind   schema.GroupVersionKind
}

// GetRESTOptions implements generic.RESTOptionsGetter.
func (s storedAsGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	g, ok := s.getter.(*restOptionsGetter)
	if !ok {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: StoredAs needs the getter of Config.RESTOptionsGetter, got %T", gr, s.getter)
	}
	if example == nil {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: an example object is required", gr)
	}
	served, err := g.servedKind(example)
	if err != nil {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: %w", gr, err)
	}
	return g.restOptions(gr, s.stored, example, served.Group, s.kind)
}

// restOptions are the options of the served resource whose values are the
// keys of gr holding storageKind, decoded into memoryGroup's internal
// version.
func (g *restOptionsGetter) restOptions(served, gr schema.GroupResource, example runtime.Object, memoryGroup string, storageKind schema.GroupVersionKind) (generic.RESTOptions, error) {
	storageVersion := storageKind.GroupVersion()
	codecConfig := serverstorage.StorageCodecConfig{
		StorageMediaType:  g.mediaType,
		StorageSerializer: g.codecs,
		StorageVersion:    storageVersion,
		MemoryVersion:     schema.GroupVersion{Group: memoryGroup, Version: runtime.APIVersionInternal},
		Config:            g.backendFor(gr),
	}
	if g.cached(served) {
		// The value a write encodes is decoded twice, by the store and for
		// the watch cache, and parsed once.
		parseOnce(&codecConfig)
	}
	if g.decodes != nil {
		codecConfig.DecoderDecoratorFn = countDecodes(codecConfig.DecoderDecoratorFn, g.decodes.counter(served))
	}
	// Outermost: what the watch cache keeps (also parse-once's copy) shares
	// its repeated metadata strings.
	codecConfig.DecoderDecoratorFn = internDecodes(codecConfig.DecoderDecoratorFn)
	codec, encodeVersioner, err := serverstorage.NewStorageCodec(codecConfig)
	if err != nil {
		return generic.RESTOptions{}, fmt.Errorf("storage: %s: codec: %w", gr, err)
	}
	// Fail here, before any etcd connection exists, when the media type
	// cannot encode this type (protobuf needs generated marshallers).
	if err := runtime.CheckCodec(codec, example, storageKind); err != nil {
		return generic.RESTOptions{}, codecError(gr, g.mediaType, example, err)
	}
	return g.optionsWithCodec(gr, g.cached(served), codec, encodeVersioner), nil
}

// cached says whether the served resource gr has a watch cache.
func (g *restOptionsGetter) cached(gr schema.GroupResource) bool {
	return g.watchCache && !g.noCache.Has(gr)
}

// customResourceDefinitions is the resource whose objects every workspace
// shares (withWorkspaces): a workspace serves the server's kinds.
var customResourceDefinitions = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// optionsWithCodec are the options of the keys of gr with values encoded
// and decoded by codec: the backend, its transformer, the decorator (the
// watch cache when cached, error mapping, deadlines) and the object
// counts. Every resource's
// options, Go-typed or custom, are built here.
func (g *restOptionsGetter) optionsWithCodec(gr schema.GroupResource, cached bool, codec runtime.Codec, encodeVersioner runtime.GroupVersioner) generic.RESTOptions {
	backend := g.backendFor(gr)
	backend.Codec = codec
	backend.EncodeVersioner = encodeVersioner
	// The transformer of the resource whose keys hold the values: the etcd
	// key is the authenticated data, so a resource stored as another must
	// use the other's, as kube-apiserver does for events.
	backend.Transformer = g.transformerFor(gr)

	decorator := generic.UndecoratedStorage
	if cached {
		decorator = withCacheAttrs(storageWithCacher())
	}
	opts := generic.RESTOptions{
		StorageConfig: backend.ForResource(gr),
		// Outermost: the keys of the request's workspace.
		Decorator: withWorkspaces(wrapStorage(wrapStorage(decorator, func(s storage.Interface) storage.Interface {
			return &statusErrorStorage{Interface: s, alarms: g.alarms}
		}),
			func(s storage.Interface) storage.Interface {
				return &unavailableStorage{Interface: s, writeTimeout: g.writeTimeout, readTimeout: g.readTimeout, uncached: !cached}
			}), gr == customResourceDefinitions),
		DeleteCollectionWorkers: 1,
		EnableGarbageCollection: g.gc,
		ResourcePrefix:          ResourcePrefix(gr),
	}
	if g.counts != nil && g.countPeriod > 0 {
		opts.StorageObjectCountTracker = g.counts
		opts.CountMetricPollPeriod = g.countPeriod
	}
	return opts
}

// backendFor returns the backend of the etcd that holds gr's keys: its
// override's (Config.Overrides) or the main one. gr is the resource whose
// keys hold the values (for a resource stored as another, the other).
func (g *restOptionsGetter) backendFor(gr schema.GroupResource) storagebackend.Config {
	if b, ok := g.overrides[gr]; ok {
		return b
	}
	return g.backend
}

// TransformerFor returns the transformer values of gr pass through (see
// Config.Transformers): the configured one, or identity (no encryption)
// when Config.Transformers is nil. getter must come from
// Config.RESTOptionsGetter; ok is false otherwise.
func TransformerFor(getter generic.RESTOptionsGetter, gr schema.GroupResource) (t value.Transformer, ok bool) {
	g, ok := getter.(*restOptionsGetter)
	if !ok {
		return nil, false
	}
	return g.transformerFor(gr), true
}

func (g *restOptionsGetter) transformerFor(gr schema.GroupResource) value.Transformer {
	if g.transformers == nil {
		return identity.NewEncryptCheckTransformer()
	}
	return g.transformers.TransformerForResource(gr)
}

// servedKind returns the external GroupVersionKind example is registered
// under.
func (g *restOptionsGetter) servedKind(example runtime.Object) (schema.GroupVersionKind, error) {
	kinds, _, err := g.scheme.ObjectKinds(example)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	for _, k := range kinds {
		if k.Version != runtime.APIVersionInternal {
			return k, nil
		}
	}
	return schema.GroupVersionKind{}, fmt.Errorf("%T has no served version in the scheme", example)
}
