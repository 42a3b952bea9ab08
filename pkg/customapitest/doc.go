// Package customapitest starts what customapi's tests and its users' tests
// need, on loopback and temporary directories: an etcd (Etcd), a registry
// of declared resources (OpenRegistry, or NewRegistry without a
// testing.TB), and a whole API server (Start, or NewServer for TestMain),
// which comes with a rest.Config, a dynamic client and an authenticated
// HTTP client for it, like httptest.NewServer. Tests sharing one server
// each take a Namespace of their own.
//
// Setting CUSTOMAPI_TEST_ETCD_SERVERS to a comma-separated list of client
// URLs makes every test use that external etcd instead of an embedded one;
// each test then gets its own key prefix, so tests do not see each other's
// objects. Tests whose servers run on an etcd of their own call
// SkipOnSharedEtcd, so that such a run does not repeat them.
//
// A package whose tests can share one server starts it in TestMain (Close
// it before os.Exit, which skips deferred calls):
//
//	var srv *customapitest.Server
//
//	func TestMain(m *testing.M) {
//		var err error
//		if srv, err = customapitest.NewServer(customapitest.Options{}, install.Customs); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		if err := srv.Close(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//		}
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		ns := customapitest.Namespace(t) // a namespace of the test's own
//		customs := srv.Dynamic.Resource(install.Customs.GroupVersionResource()).Namespace(ns)
//		...
//	}
//
// Helpers for the assertions such tests make:
//
//   - Eventually polls a condition until it holds or a timeout fails the
//     test: for effects that take a moment (a webhook or policy taking
//     effect, a controller or the garbage collector acting), never a sleep.
//   - RequireReason and RequireCode assert a Kubernetes Status error's
//     reason or HTTP code (and message); RequireCause and RequireCauseType
//     its causes.
//   - LockedBuffer collects what a child process, klog or a log backend
//     writes while the test reads it.
//   - DocCodeBlocks reads the examples of a section of the docs, so that
//     a test runs what a user pastes.
//
// For example:
//
//	customapitest.Eventually(t, 30*time.Second, "the custom collected", func(ctx context.Context) (bool, error) {
//		_, err := customs.Get(ctx, "c1", metav1.GetOptions{})
//		return apierrors.IsNotFound(err), err
//	})
//	_, err := customs.Create(ctx, invalid, metav1.CreateOptions{})
//	st := customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
//	customapitest.RequireCause(t, st, "spec.replicas")
//
// See the Example functions (example_test.go; they run as tests).
package customapitest
