package semantics_test

// The two doors and the servers behind them. Only this file knows how a
// door is built; the cases see the customsClient interface.

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/workspace"
)

// customsClient is the typed method set both doors implement: client-go's
// typed client shape (gentype.ClientWithList) without Apply.
// *client.Client[*testv1.Custom, *testv1.CustomList] implements it
// in-process. When pkg/client gains client.Interface[T, L], this becomes
// client.Interface[*testv1.Custom, *testv1.CustomList].
type customsClient interface {
	Create(ctx context.Context, obj *testv1.Custom, opts metav1.CreateOptions) (*testv1.Custom, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*testv1.Custom, error)
	List(ctx context.Context, opts metav1.ListOptions) (*testv1.CustomList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Update(ctx context.Context, obj *testv1.Custom, opts metav1.UpdateOptions) (*testv1.Custom, error)
	UpdateStatus(ctx context.Context, obj *testv1.Custom, opts metav1.UpdateOptions) (*testv1.Custom, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*testv1.Custom, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
}

// door is one way into a server: in-process or HTTP, with the server's
// watch cache on or off.
type door struct {
	name       string // "inprocess/cache=on", "http/cache=off", ...
	inProcess  bool
	watchCache bool
	srv        *customapitest.Server
	// open returns a client of customs in namespace ns ("" for all
	// namespaces on List, Watch and DeleteCollection).
	open func(ns string) (customsClient, error)
	// openIn is open in workspace ws (package workspace).
	openIn func(ws, ns string) (customsClient, error)
	// customs is open failing the test the door is bound to (see bind).
	customs func(ns string) customsClient
	// customsIn is openIn failing the test the door is bound to.
	customsIn func(ws, ns string) customsClient
}

// bind returns d with customs failing t when a client cannot be built.
func (d door) bind(t *testing.T) door {
	d.customs = func(ns string) customsClient {
		t.Helper()
		c, err := d.open(ns)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	d.customsIn = func(ws, ns string) customsClient {
		t.Helper()
		c, err := d.openIn(ws, ns)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return d
}

// httpWithWarnings returns an HTTP client of customs in ns whose server
// warnings are collected into the returned recorder.
func (d door) httpWithWarnings(t *testing.T, ns string) (customsClient, *warnings) {
	t.Helper()
	w := &warnings{}
	c, err := httpCustoms(d.srv, ns, w)
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// warnings records the Warning headers of HTTP responses.
type warnings struct {
	mu  sync.Mutex
	msg []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msg = append(w.msg, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msg...)
}

// openDoors returns the two doors of one running server, not yet bound to
// a test.
func openDoors(s *customapitest.Server, watchCache bool) ([]door, error) {
	inproc, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		return nil, err
	}
	cache := map[bool]string{true: "on", false: "off"}[watchCache]
	return []door{
		{
			name: "inprocess/cache=" + cache, inProcess: true, watchCache: watchCache, srv: s,
			open: func(ns string) (customsClient, error) { return inproc.Namespace(ns), nil },
			openIn: func(ws, ns string) (customsClient, error) {
				return inproc.InWorkspace(ws).Namespace(ns), nil
			},
		},
		{
			name: "http/cache=" + cache, watchCache: watchCache, srv: s,
			open: func(ns string) (customsClient, error) { return httpCustoms(s, ns, rest.NoWarnings{}) },
			openIn: func(ws, ns string) (customsClient, error) {
				return httpCustomsIn(s, ws, ns, rest.NoWarnings{})
			},
		},
	}, nil
}

// doorsOf returns the two doors of one running server, bound to t.
func doorsOf(t *testing.T, s *customapitest.Server, watchCache bool) []door {
	t.Helper()
	doors, err := openDoors(s, watchCache)
	if err != nil {
		t.Fatal(err)
	}
	for i := range doors {
		doors[i] = doors[i].bind(t)
	}
	return doors
}

// startDoors starts one server with the watch cache on and one with it off
// (configure, if not nil, adjusts both) for the calling test alone and
// returns their four doors. Only cases that need servers of their own (an
// etcd of their own, options of their own) use it; the rest share the
// package's servers through forEachDoor.
func startDoors(t *testing.T, configure func(*options.ServerOptions)) []door {
	t.Helper()
	var out []door
	for _, cache := range []bool{true, false} {
		s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
			o.Storage.WatchCache = cache
			if configure != nil {
				configure(o)
			}
		}, install.Customs)
		out = append(out, doorsOf(t, s, cache)...)
	}
	return out
}

// sharedDoors are the four doors of the package's two default servers
// (watch cache on, watch cache off), started once by TestMain. Cases using
// them work in a namespace of their own and never change server-wide state.
var sharedDoors []door

// TestMain starts the two shared servers, runs the tests and stops the
// servers.
func TestMain(m *testing.M) {
	os.Exit(runShared(m))
}

func runShared(m *testing.M) int {
	for _, cache := range []bool{true, false} {
		s, err := customapitest.NewServer(customapitest.Options{
			Configure: func(o *options.ServerOptions) { o.Storage.WatchCache = cache },
		}, install.Customs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "shared server:", err)
			return 1
		}
		defer func() {
			if err := s.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "shared server:", err)
			}
		}()
		doors, err := openDoors(s, cache)
		if err != nil {
			fmt.Fprintln(os.Stderr, "shared doors:", err)
			return 1
		}
		sharedDoors = append(sharedDoors, doors...)
	}
	return m.Run()
}

// forEachDoor runs fn once through each of the four shared doors, as
// subtests named after the door.
func forEachDoor(t *testing.T, fn func(t *testing.T, d door)) {
	t.Helper()
	forDoors(t, sharedDoors, fn)
}

// forDoors runs fn once through each door, as subtests named after the
// door, with the door bound to the subtest.
func forDoors(t *testing.T, doors []door, fn func(t *testing.T, d door)) {
	t.Helper()
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) { fn(t, d.bind(t)) })
	}
}

var (
	schemeOnce sync.Once
	scheme     *runtime.Scheme
	schemeErr  error
)

// httpCustoms is client-go's typed client of customs over HTTPS, built
// with gentype as a generated clientset would build it.
func httpCustoms(s *customapitest.Server, ns string, warn rest.WarningHandler) (customsClient, error) {
	return httpCustomsIn(s, workspace.Default, ns, warn)
}

// httpCustomsIn is httpCustoms in workspace ws: its requests go to
// /clusters/WS/... (workspace.Config).
func httpCustomsIn(s *customapitest.Server, ws, ns string, warn rest.WarningHandler) (customsClient, error) {
	schemeOnce.Do(func() { scheme, schemeErr = resource.NewScheme(install.Customs) })
	if schemeErr != nil {
		return nil, schemeErr
	}
	gv := install.Customs.GroupVersionKind.GroupVersion()
	cfg := workspace.Config(s.Config, ws)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &gv
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.WarningHandler = warn
	if cfg.UserAgent == "" {
		// What a generated clientset's setConfigDefaults sets, so that
		// both doors record the same default field manager.
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("rest client: %w", err)
	}
	return gentype.NewClientWithList[*testv1.Custom, *testv1.CustomList](install.Customs.Plural, rc,
		runtime.NewParameterCodec(scheme), ns,
		func() *testv1.Custom { return &testv1.Custom{} },
		func() *testv1.CustomList { return &testv1.CustomList{} }), nil
}

// namespace returns a namespace name of the case's own ("t-" and 10 hex
// characters), so that cases sharing a server do not see each other.
func namespace(t *testing.T) string {
	t.Helper()
	return customapitest.Namespace(t)
}

// listOnce is List without client-go's retries. Over HTTP, client-go
// retries a 5xx answer carrying Retry-After up to 10 times; a 504 for a
// resourceVersion in the future carries Retry-After: 1 and takes the watch
// cache 3 s each time, so a single List would take about 40 s. In process
// there is nothing to retry and it is List.
func listOnce(ctx context.Context, c customsClient, ns string, opts metav1.ListOptions) error {
	rc, ok := c.(interface{ GetClient() rest.Interface })
	if !ok {
		_, err := c.List(ctx, opts)
		return err
	}
	return rc.GetClient().Get().Namespace(ns).Resource(install.Customs.Plural).
		VersionedParams(&opts, metav1.ParameterCodec).MaxRetries(0).Do(ctx).Error()
}
