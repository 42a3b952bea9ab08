package encodings_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"

	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	fleetclient "github.com/customapi/customapi/examples/fleet/generated/clientset/versioned"
	"github.com/customapi/customapi/internal/binarytest"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	testclient "github.com/customapi/customapi/pkg/generated/clientset/versioned"
)

// wireLog records the Content-Type of every answer a client received and
// of every body it sent, to show which encoding went over the wire.
type wireLog struct {
	mu       sync.Mutex
	answers  []string
	requests []string
}

func (l *wireLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		l.mu.Lock()
		defer l.mu.Unlock()
		if ct := req.Header.Get("Content-Type"); ct != "" {
			l.requests = append(l.requests, req.Method+" "+ct)
		}
		if err == nil {
			l.answers = append(l.answers, req.Method+" "+resp.Header.Get("Content-Type"))
		}
		return resp, err
	})
}

// requireSome fails unless some recorded answer is exactly method plus
// content type, for example "GET application/cbor-seq".
func (l *wireLog) requireSome(t *testing.T, want string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.answers {
		if a == want {
			return
		}
	}
	t.Fatalf("no answer %q among %v", want, l.answers)
}

// requireAll fails unless every recorded entry of the list contains want.
func (l *wireLog) requireAll(t *testing.T, what string, list func(*wireLog) []string, want string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	got := list(l)
	if len(got) == 0 {
		t.Fatalf("no %s recorded", what)
	}
	for _, ct := range got {
		if !strings.Contains(ct, want) {
			t.Fatalf("%s %v: %q is not %s", what, got, ct, want)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// configWithLog returns a copy of the shared server's client config
// recording the wire's content types in log.
func configWithLog(log *wireLog) *rest.Config {
	cfg := rest.CopyConfig(shared.Config)
	cfg.Wrap(log.wrap)
	return cfg
}

// nextEvent returns the next watch event within 20 s.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended without an event")
		}
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", ev.Object)
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event within 20 s")
	}
	return watch.Event{}
}

// exerciseDynamic creates, gets, lists, watches and updates an object of k
// through client-go's dynamic client built from cfg.
func exerciseDynamic(t *testing.T, cfg *rest.Config, k kind) {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := k.res.GroupVersionResource()
	var ri dynamic.ResourceInterface = dc.Resource(gvr)
	ns := ""
	if !k.res.ClusterScoped {
		ns = strings.Split(k.collection(t), "/")[5]
		ri = dc.Resource(gvr).Namespace(ns)
	}
	name := uniqueName(t, "dyn")
	b := encodeAs(t, k.object(name), jsonType)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	created, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get: %v", err)
	}
	list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v (%d items)", err, len(list.Items))
	}
	w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	created.SetLabels(map[string]string{"app": "e1", "updated": "yes"})
	if _, err := ri.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	ev := nextEvent(t, w)
	if got := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Modified || got.GetLabels()["updated"] != "yes" {
		t.Fatalf("event %s %v", ev.Type, got.GetLabels())
	}
	applied := k.object(name)
	applied.(metav1.Object).SetLabels(map[string]string{"applied": "yes"})
	au := &unstructured.Unstructured{}
	if err := au.UnmarshalJSON(encodeAs(t, applied, jsonType)); err != nil {
		t.Fatal(err)
	}
	out, err := ri.Apply(ctx, name, au, metav1.ApplyOptions{FieldManager: "e1-dynamic", Force: true})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if out.GetLabels()["applied"] != "yes" {
		t.Fatalf("apply: labels %v", out.GetLabels())
	}
}

// TestDynamicClient: client-go's dynamic client (JSON) works for both kinds.
func TestDynamicClient(t *testing.T) {
	for _, k := range []kind{customs, devices} {
		t.Run(k.name, func(t *testing.T) {
			log := &wireLog{}
			exerciseDynamic(t, configWithLog(log), k)
			log.requireAll(t, "answers", func(l *wireLog) []string { return l.answers }, jsonType)
		})
	}
}

// TestClientsPreferCBOR: client-go with its ClientsAllowCBOR and
// ClientsPreferCBOR gates (KUBE_FEATURE_ClientsAllowCBOR=true and
// KUBE_FEATURE_ClientsPreferCBOR=true in a program) sends and receives
// CBOR with the dynamic client and with a generated typed clientset, for
// both kinds; watches arrive as application/cbor-seq. The gates are
// process-global: set for this test only, which is not parallel.
func TestClientsPreferCBOR(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, true)
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsPreferCBOR, true)
	for _, k := range []kind{customs, devices} {
		t.Run("dynamic/"+k.name, func(t *testing.T) {
			log := &wireLog{}
			exerciseDynamic(t, configWithLog(log), k)
			log.requireAll(t, "request bodies", func(l *wireLog) []string { return l.requests }, "cbor")
			log.requireAll(t, "answers", func(l *wireLog) []string { return l.answers }, cborType) // cbor and cbor-seq
			log.requireSome(t, "GET "+cborSeqType)                                                 // the watch
		})
	}
	t.Run("typed/devices", func(t *testing.T) {
		log := &wireLog{}
		cs, err := fleetclient.NewForConfig(configWithLog(log))
		if err != nil {
			t.Fatal(err)
		}
		exerciseTypedDevices(t, cs)
		log.requireAll(t, "request bodies", func(l *wireLog) []string { return l.requests }, "cbor")
		log.requireAll(t, "answers", func(l *wireLog) []string { return l.answers }, cborType)
		log.requireSome(t, "GET "+cborSeqType)
	})
}

// exerciseTypedDevices creates, gets, lists and watches a Device with the
// generated typed clientset.
func exerciseTypedDevices(t *testing.T, cs fleetclient.Interface) {
	t.Helper()
	ctx := t.Context()
	devs := cs.FleetV1alpha1().Devices()
	name := uniqueName(t, "typed")
	d := devices.object(name).(*fleetv1alpha1.Device)
	if _, err := devs.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := devs.Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.Spec.Model != "m1" {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := devs.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v", err)
	}
	w, err := devs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w); ev.Object.(*fleetv1alpha1.Device).Name != name {
		t.Fatalf("event %s for %v", ev.Type, ev.Object)
	}
}

// TestTypedClientProtobuf: the generated typed clientsets with ContentType
// application/vnd.kubernetes.protobuf (client-go then sends Accept:
// protobuf, */*). For Custom, with marshallers, everything goes over
// protobuf; for Device, without, reads fall back to JSON (a write would
// fail in the client, which cannot encode a Device in protobuf).
func TestTypedClientProtobuf(t *testing.T) {
	t.Run("devices reads fall back to JSON", func(t *testing.T) {
		name := uniqueName(t, "pbfallback")
		create(t, devices.collection(t), devices.object(name))
		log := &wireLog{}
		cfg := configWithLog(log)
		cfg.ContentType = protobufType
		cs, err := fleetclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		devs := cs.FleetV1alpha1().Devices()
		if _, err := devs.Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Fatalf("get: %v", err)
		}
		if _, err := devs.List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatalf("list: %v", err)
		}
		w, err := devs.Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		if ev := nextEvent(t, w); ev.Object.(*fleetv1alpha1.Device).Name != name {
			t.Fatalf("event %s", ev.Type)
		}
		log.requireAll(t, "answers", func(l *wireLog) []string { return l.answers }, jsonType)
	})
	t.Run("customs over protobuf", func(t *testing.T) {
		requireProtobuf(t, customs)
		log := &wireLog{}
		cfg := configWithLog(log)
		cfg.ContentType = protobufType
		cs, err := testclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ns := strings.Split(customs.collection(t), "/")[5]
		c := cs.TestV1().Customs(ns)
		ctx := t.Context()
		obj := customs.object("pb").(*testv1.Custom)
		created, err := c.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if created.Spec.Replicas != 1 || len(created.Spec.Ports) != 1 || created.UID == "" {
			t.Fatalf("created %+v", created)
		}
		w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		created.Spec.Replicas = 3
		if _, err := c.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update: %v", err)
		}
		if ev := nextEvent(t, w); ev.Object.(*testv1.Custom).Spec.Replicas != 3 {
			t.Fatalf("event %s %+v", ev.Type, ev.Object)
		}
		got, err := c.Get(ctx, "pb", metav1.GetOptions{})
		if err != nil || got.Spec.Replicas != 3 || got.Spec.Message != "hello" {
			t.Fatalf("get: %v %+v", err, got)
		}
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list: %v", err)
		}
		log.requireAll(t, "request bodies", func(l *wireLog) []string { return l.requests }, protobufType)
		log.requireAll(t, "answers", func(l *wireLog) []string { return l.answers }, protobufType)
		log.requireSome(t, "GET "+protobufType+";stream=watch")
	})
}

// TestKubectl: kubectl get (table and -o yaml), apply and apply
// --server-side work for both kinds.
func TestKubectl(t *testing.T) {
	kubectl := binarytest.Kubectl(t)
	cache := t.TempDir()
	run := func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		res := binarytest.Run(t, binarytest.RunOptions{Stdin: stdin}, kubectl, append([]string{"--kubeconfig", shared.KubeconfigPath, "--cache-dir", cache}, args...)...)
		if res.ExitCode != 0 {
			t.Fatalf("kubectl %s: %s", strings.Join(args, " "), res)
		}
		return res.Stdout
	}
	for _, k := range []kind{customs, devices} {
		t.Run(k.name, func(t *testing.T) {
			var nsArgs []string
			if !k.res.ClusterScoped {
				nsArgs = []string{"-n", strings.Split(k.collection(t), "/")[5]}
			}
			name := uniqueName(t, "kubectl")
			manifest := string(encodeAs(t, k.object(name), yamlType))
			run(t, manifest, append(nsArgs, "apply", "-f", "-")...)
			out := run(t, "", append(nsArgs, "get", k.res.Plural, name)...)
			if !strings.Contains(out, name) || !strings.Contains(out, "NAME") {
				t.Fatalf("kubectl get: %s", out)
			}
			out = run(t, "", append(nsArgs, "get", k.res.Plural, name, "-o", "yaml")...)
			if !strings.Contains(out, "name: "+name) || !strings.Contains(out, "kind: "+k.res.GroupVersionKind.Kind) {
				t.Fatalf("kubectl get -o yaml: %s", out)
			}
			ssa := strings.Replace(manifest, "app: e1", "app: e1\n    ssa: \"yes\"", 1)
			run(t, ssa, append(nsArgs, "apply", "--server-side", "--force-conflicts", "--field-manager", "e1-kubectl", "-f", "-")...)
			out = run(t, "", append(nsArgs, "get", k.res.Plural, name, "-o", "jsonpath={.metadata.labels.ssa}")...)
			if out != "yes" {
				t.Fatalf("after apply --server-side: label ssa %q", out)
			}
		})
	}
}
