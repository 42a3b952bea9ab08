// Package client is the typed in-process Go client of customapi: Client[T, L]
// creates, gets, lists, watches, updates, patches and deletes objects of one
// resource by calling the same generic registry store (pkg/registry) that the
// HTTP server serves, so objects written from Go get the same server-set
// metadata, validation, conflicts and watch events as objects written with
// kubectl.
//
// The method set and signatures follow client-go's typed clients; errors are
// k8s.io/apimachinery/pkg/api/errors Status errors (check them with
// apierrors.IsNotFound, IsAlreadyExists, IsConflict, IsInvalid, IsGone, ...),
// so retry.RetryOnConflict and other client-go helpers work unchanged.
//
//	reg, err := registry.Open(ctx, registry.Config{Storage: storage.Config{Etcd: etcdConfig}}, install.Customs)
//	defer reg.Close()
//	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
//	c, err := customs.Namespace("default").Create(ctx, &testv1.Custom{...}, metav1.CreateOptions{})
//
// Each call is audited by the registry's request layer, which the client
// calls (registry.Store.Get, Create, ...), when the registry was opened
// with an audit policy and sink (registry.Config.Audit; a server passes
// those of its --audit-* flags): same policy, same stages and fields as
// the same request over HTTP, with the user of the context
// (k8s.io/apiserver/pkg/endpoints/request.WithUser), userAgent
// InProcessUserAgent and no source IPs. The client itself checks the
// namespace against the resource's scope, fills in the registry.Caller
// and its field manager, and gives the caller objects of its own.
//
// Objects returned by the client are the caller's to modify: they are never
// shared with the watch cache.
//
// See the Example functions (example_test.go; they run as tests): create,
// get, list, watch, update with a conflict, patch and server-side apply.
package client
