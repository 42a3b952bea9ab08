package workspace

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const (
	// Default is the name of the default workspace: the one plain paths
	// (without PathPrefix) and contexts without a workspace reach.
	Default = "default"
	// Wildcard names every workspace at once, for lists and watches of
	// every namespace by privileged identities (the server's controllers):
	// /clusters/*/api/v1/namespaces.
	Wildcard = "*"
	// Annotation is the annotation in which an object of a named workspace
	// carries its workspace's name. The server sets it on every write and
	// removes it from the default workspace's objects; clients cannot
	// change it. Audit events carry the request's workspace under the same
	// key.
	Annotation = "customapi.io/workspace"
	// PathPrefix is the path prefix before a workspace's name in a URL:
	// /clusters/NAME/api/v1/... reaches workspace NAME.
	PathPrefix = "/clusters/"
	// keyMark starts a workspace's segment in an etcd key. It cannot start
	// a namespace's or an object's name, so the default workspace's keys
	// never look like another's.
	keyMark = "%"
)

type contextKey struct{}

// NewContext returns ctx with workspace name: the storage layer reads
// and writes that workspace's keys. Default, or an empty name, is the
// default workspace.
func NewContext(ctx context.Context, name string) context.Context {
	if name == "" {
		name = Default
	}
	return context.WithValue(ctx, contextKey{}, name)
}

// FromContext returns the workspace of ctx (NewContext), Default when it
// has none.
func FromContext(ctx context.Context) string {
	if name, ok := ctx.Value(contextKey{}).(string); ok {
		return name
	}
	return Default
}

// ValidateName returns what is wrong with name as a workspace's name: it
// must be a DNS-1123 label (lower-case letters, digits and '-', at most 63
// characters), as a namespace's name. Default is valid; Wildcard is not a
// name.
func ValidateName(name string) []string {
	return validation.IsDNS1123Label(name)
}

// Of returns the workspace of obj (its Annotation), Default when it has
// none or obj has no metadata.
func Of(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return Default
	}
	if name := m.GetAnnotations()[Annotation]; name != "" {
		return name
	}
	return Default
}

// Set makes obj an object of workspace name: it sets the Annotation, or
// removes it for Default. It changes obj's annotations only when they
// differ.
func Set(obj runtime.Object, name string) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	annotations := m.GetAnnotations()
	current, has := annotations[Annotation]
	if name == Default || name == "" {
		if has {
			delete(annotations, Annotation)
			if len(annotations) == 0 {
				annotations = nil
			}
			m.SetAnnotations(annotations)
		}
		return
	}
	if current == name {
		return
	}
	if annotations == nil {
		annotations = make(map[string]string, 1)
	}
	annotations[Annotation] = name
	m.SetAnnotations(annotations)
}

// Key returns key, a key under resourcePrefix (the resource's prefix, as
// the registry's stores build them), in workspace name: key itself for
// Default, else key with the segment "%name" after resourcePrefix.
// Key("/test/customs", "/test/customs/ns1/a", "team-a") is
// "/test/customs/%team-a/ns1/a".
func Key(resourcePrefix, key, name string) string {
	if name == Default || name == "" || !strings.HasPrefix(key, resourcePrefix) {
		return key
	}
	rest := key[len(resourcePrefix):]
	switch {
	case rest == "" || rest == "/":
		return resourcePrefix + "/" + keyMark + name + rest
	case rest[0] == '/':
		return resourcePrefix + "/" + keyMark + name + rest
	}
	return key
}

// OfKey returns the workspace of key, a key under resourcePrefix, and
// whether key names one (carries the segment Key adds).
func OfKey(resourcePrefix, key string) (string, bool) {
	// Without concatenating: this runs on every storage call.
	n := len(resourcePrefix)
	if len(key) < n+2 || key[n] != '/' || key[n+1:n+1+len(keyMark)] != keyMark || key[:n] != resourcePrefix {
		return Default, false
	}
	rest := key[n+1+len(keyMark):]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

// SplitPath splits a request path into the workspace it names and the
// path within it: "/clusters/team-a/api/v1/namespaces" is "team-a" and
// "/api/v1/namespaces"; a path without PathPrefix is Default and itself.
// ok is false when the path has PathPrefix but no name after it.
func SplitPath(path string) (name, rest string, ok bool) {
	if !strings.HasPrefix(path, PathPrefix) {
		return Default, path, true
	}
	after := path[len(PathPrefix):]
	i := strings.IndexByte(after, '/')
	if i < 0 {
		name, rest = after, "/"
	} else {
		name, rest = after[:i], after[i:]
	}
	return name, rest, name != ""
}

// Config returns a copy of cfg whose requests reach workspace name:
// its Host with PathPrefix and name appended (client-go keeps a host's
// path as the prefix of every request). Default returns a copy of cfg.
func Config(cfg *rest.Config, name string) *rest.Config {
	c := rest.CopyConfig(cfg)
	if name == Default || name == "" {
		return c
	}
	c.Host = strings.TrimSuffix(c.Host, "/") + strings.TrimSuffix(PathPrefix, "/") + "/" + name
	return c
}

// ObjectKey is the key of an object in a store of every workspace's
// objects (Wildcard lists and watches): "NAME|namespace/name" for a named
// workspace's, the plain cache.MetaNamespaceKeyFunc key for the default
// workspace's. It accepts cache.DeletedFinalStateUnknown.
func ObjectKey(obj any) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("workspace: object has no metadata: %w", err)
	}
	key := m.GetName()
	if ns := m.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	ws := Default
	if o, ok := obj.(runtime.Object); ok {
		ws = Of(o)
	}
	return JoinObjectKey(ws, key), nil
}

// JoinObjectKey returns the ObjectKey of the object whose
// namespace/name key is key in workspace name.
func JoinObjectKey(name, key string) string {
	if name == Default || name == "" {
		return key
	}
	return name + "|" + key
}

// SplitObjectKey splits an ObjectKey into its workspace, namespace and
// name.
func SplitObjectKey(key string) (ws, namespace, name string) {
	ws = Default
	if i := strings.IndexByte(key, '|'); i >= 0 {
		ws, key = key[:i], key[i+1:]
	}
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return ws, key[:i], key[i+1:]
	}
	return ws, "", key
}

// WrapTransport returns rt sending each request to the workspace of its
// context (NewContext): a request whose context names a workspace other
// than Default gets PathPrefix and the name before its path. With it
// (rest.Config.Wrap), one client-go client serves every workspace, as the
// server's controllers need; requests without a workspace are unchanged.
func WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{rt}
}

type roundTripper struct{ next http.RoundTripper }

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ws := FromContext(req.Context())
	if ws == Default {
		return r.next.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	prefix := strings.TrimSuffix(PathPrefix, "/") + "/" + ws
	out.URL.Path = prefix + req.URL.Path
	if req.URL.RawPath != "" {
		out.URL.RawPath = prefix + req.URL.RawPath
	}
	return r.next.RoundTrip(out)
}
