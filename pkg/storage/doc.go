// Package storage configures how customapi keeps objects in etcd: the etcd3
// backend of k8s.io/apiserver (storage.Interface), the storage codec (JSON by
// default, so `etcdctl get` shows a normal Kubernetes-encoded object), the
// watch cache (cacher, on by default), the key prefix, and the compactor.
//
// Config.RESTOptionsGetter returns the generic.RESTOptionsGetter that
// k8s.io/apiserver's generic registry consumes; both the in-process client
// and the HTTP server use it, so both see the same storage. Config is the
// one description of the storage: registry.Config takes it as it is, its
// defaults (DefaultPrefix, DefaultMediaType) and checks (CheckPrefix,
// CheckMediaType, Config.Validate) are here only, and Options and
// EtcdOptions are kube-apiserver's flags for it (--etcd-servers and its TLS
// files, --etcd-servers-overrides, --etcd-prefix, --storage-media-type,
// --etcd-compaction-interval, the embedded etcd's quota: AddFlags,
// Validate, ApplyTo), which `customapi serve`, `storage rewrite`,
// `backup`, `etcd defrag` and the quickstart
// share.
//
// Package rewrite (pkg/storage/rewrite) re-encodes stored values into the
// configured media type and encryption key.
//
// Values in any of the four encodings (MediaTypes) are read whatever
// Config.MediaType says; MediaTypeOfValue tells a stored value's encoding
// from its first bytes. A type that cannot be stored in the configured
// encoding (protobuf without generated marshallers) is refused when its
// store is built, naming the resource and the fix.
//
// The storage codec parses a value it has just encoded for etcd once: the
// etcd3 store's decode of what it wrote (to return it) and its watcher's
// decode of the same value (for the watch cache) share one parse, the
// second decode taking a deep copy of the first's result, which is what a
// parse of the same bytes returns.
//
// Keys are <prefix>/<group>/<resource>/<namespace>/<name> for namespaced
// resources and <prefix>/<group>/<resource>/<name> for cluster-scoped ones,
// with prefix "/registry" by default: the layout kube-apiserver uses.
//
// Config.Transformers encrypts values at rest, as kube-apiserver's
// --encryption-provider-config: one value.Transformer per GroupResource
// (the stored one for a resource kept in another's storage, since the
// etcd key is the authenticated data); TransformerFor returns it.
//
// Errors from etcd that upstream reports as 500s are mapped to Kubernetes
// Status errors here: a value over etcd's request limit becomes 413
// RequestEntityTooLarge, and a write refused because etcd's database
// reached its space quota (NOSPACE) 503 ServiceUnavailable naming the
// quota and the recovery command, with the cause NoSpaceCause (IsNoSpace).
// Every write and every read that goes to etcd has a
// deadline (Config.WriteTimeout, ReadTimeout: 8 s by default); when etcd
// cannot answer in time (no quorum, no leader, unreachable) a write fails
// with 504 Timeout (its outcome is unknown) and a read with 503
// ServiceUnavailable.
//
// etcd's space: AlarmMonitor follows etcd's alarms (a full quota, NOSPACE)
// for a server's /readyz check, its customapi_etcd_alarm metric and its
// log; ReclaimSpace compacts etcd's history as k8s.io/apiserver's compactor
// does, defragments every member and disarms NOSPACE (`customapi etcd
// defrag`); EmbeddedEtcdOptions are the embedded etcd's quota and
// defragmentation at start (--quota-backend-bytes,
// --bootstrap-defrag-threshold-megabytes), Options.CompactionInterval the
// compactor's (--etcd-compaction-interval):
//
//	rep, err := storage.ReclaimSpace(ctx, cli, storage.ReclaimOptions{})
//	for _, m := range rep.Members {
//		fmt.Println(m) // member customapi (...): database 64 MiB (...) -> 3.6 MiB (...), ...
//	}
package storage
