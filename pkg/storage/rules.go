package storage

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"

	"github.com/customapi/customapi/pkg/etcd"
)

// MediaTypes are the storage encodings customapi offers, in the order
// flag help lists them: JSON (the default, readable with etcdctl), YAML,
// CBOR (RFC 8949; smaller and faster to decode, by reflection on any Go
// type) and Kubernetes protobuf (only for types with generated
// marshallers; Open checks each type).
var MediaTypes = []string{
	runtime.ContentTypeJSON,
	runtime.ContentTypeYAML,
	runtime.ContentTypeCBOR,
	runtime.ContentTypeProtobuf,
}

// CheckMediaType returns an error unless mt is "" (the default, JSON) or
// one of MediaTypes. Whether a given type can be stored in it is checked
// when its store is built.
func CheckMediaType(mt string) error {
	if mt == "" {
		return nil
	}
	for _, m := range MediaTypes {
		if mt == m {
			return nil
		}
	}
	return fmt.Errorf("media type %q is not supported (%s)", mt, strings.Join(MediaTypes, ", "))
}

// CheckPrefix returns an error unless p is "" (DefaultPrefix) or a key
// prefix that starts with "/" and names a directory (not "/" alone), as
// kube-apiserver's --etcd-prefix.
func CheckPrefix(p string) error {
	if p != "" && (!strings.HasPrefix(p, "/") || p == "/") {
		return fmt.Errorf("prefix %q must start with / and name a directory", p)
	}
	return nil
}

// ResourcePrefix is the part of the keys of a resource after the global
// prefix: "<group>/<resource>" (for the core group "/<resource>", as
// kube-apiserver stores namespaces).
func ResourcePrefix(gr schema.GroupResource) string {
	return gr.Group + "/" + gr.Resource
}

// Key returns the etcd key of one object:
// <prefix>/<group>/<resource>/<namespace>/<name> for a namespaced object,
// <prefix>/<group>/<resource>/<name> when namespace is "". prefix ""
// means DefaultPrefix. Core-group resources have no group segment
// (<prefix>/namespaces/<name>), as k8s.io/apiserver's etcd3 store joins
// the prefix and a store key.
func Key(prefix string, gr schema.GroupResource, namespace, name string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	k := strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(ResourcePrefix(gr), "/") + "/"
	if namespace != "" {
		k += namespace + "/"
	}
	return k + name
}

// backend returns k8s.io/apiserver's storage backend configuration for
// the etcd of c, with prefix as the global key prefix.
func backend(c etcd.ClientConfig, prefix string) *storagebackend.Config {
	b := storagebackend.NewDefaultConfig(prefix, nil)
	b.Transport.ServerList = c.Endpoints
	b.Transport.TrustedCAFile = c.CAFile
	b.Transport.CertFile = c.CertFile
	b.Transport.KeyFile = c.KeyFile
	return b
}

// NewEtcdCheck returns kube-apiserver's etcd health check for the etcd of
// c (a linearizable read with a 2 s timeout; nil when etcd answers), for
// /healthz, /livez and /readyz. It stops checking once stop is closed. It
// returns an error when the transport settings (certificate files) are
// unusable.
func NewEtcdCheck(c etcd.ClientConfig, stop <-chan struct{}) (func() error, error) {
	check, err := factory.CreateReadyCheck(*backend(c, "/"), stop)
	if err != nil {
		return nil, fmt.Errorf("storage: etcd check: %w", err)
	}
	return check, nil
}
