package customapitest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/registry"
)

// Namespace returns a new namespace of the test's own on the server (see
// the package function Namespace), created as a Namespace object when the
// server serves namespaces (batteries.Namespaces: namespaced creates then
// need it), and only named otherwise. The create is an in-process request
// of the server's own user (registry.ServerUser), audited as such when the
// registry has an audit policy.
func (s *Server) Namespace(tb testing.TB) string {
	tb.Helper()
	return newNamespace(tb, s.Registry())
}

// Namespace is Server.Namespace for a registry.
func (r *Registry) Namespace(tb testing.TB) string {
	tb.Helper()
	return newNamespace(tb, r.Registry)
}

func newNamespace(tb testing.TB, reg *registry.Registry) string {
	tb.Helper()
	name := Namespace(tb)
	st, ok := reg.Store(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return name
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := st.Create(registry.WithServerUser(tb.Context()), registry.Caller{DefaultManager: "customapitest"}, ns, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}
