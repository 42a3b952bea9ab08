package semantics_test

// Two versions, one object (the case of Kubernetes' "Versions in
// CustomResourceDefinitions" and sample-apiserver): one kind in two
// versions, one object. The fleet example's Fleet is served in v1 (the storage version)
// and v1alpha1 (deprecated), where v1's spec.replicas is v1alpha1's
// spec.size and v1's spec.placement.region and .zone are v1alpha1's
// spec.region "region/zone".

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"

	fleetv1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// typed is the method set of a typed client both doors have, in-process
// (pkg/client) and over HTTP (client-go's gentype).
type typed[T runtime.Object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// fleetDoors are the clients of fleets in one namespace through one door,
// in both versions, with the warnings the server answered with.
type fleetDoors struct {
	name   string
	alpha  typed[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList]
	v1     typed[*fleetv1.Fleet, *fleetv1.FleetList]
	warned func(ctx context.Context) (context.Context, func() []string)
}

// recorder collects the warnings of in-process requests or HTTP responses.
type recorder struct {
	mu  sync.Mutex
	msg []string
}

func (r *recorder) AddWarning(_, text string) { r.add(text) }

func (r *recorder) HandleWarningHeader(_ int, _ string, text string) { r.add(text) }

func (r *recorder) add(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msg = append(r.msg, text)
}

func (r *recorder) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msg[n:]...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msg)
}

// startFleets starts a server of fleets (both versions) and devices with
// the watch cache on or off, and returns its in-process and HTTP doors,
// each in a namespace of its own.
func startFleets(t *testing.T, cache bool) (*customapitest.Server, []fleetDoors) {
	t.Helper()
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) { o.Storage.WatchCache = cache }, fleetapi.Fleets, fleetapi.Devices)
	ns, httpNS := s.Namespace(t), s.Namespace(t)
	reg := s.Registry()
	inAlpha, err := client.For[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](reg, fleetapi.Fleets.In("v1alpha1"), client.WithFieldManager("tester"))
	if err != nil {
		t.Fatal(err)
	}
	inV1, err := client.For[*fleetv1.Fleet, *fleetv1.FleetList](reg, fleetapi.Fleets, client.WithFieldManager("tester"))
	if err != nil {
		t.Fatal(err)
	}
	inRec := &recorder{}
	httpRec := &recorder{}
	scheme, err := resource.NewScheme(fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}
	cache2 := map[bool]string{true: "on", false: "off"}[cache]
	return s, []fleetDoors{
		{
			name: "inprocess/cache=" + cache2, alpha: inAlpha.Namespace(ns), v1: inV1.Namespace(ns),
			warned: func(ctx context.Context) (context.Context, func() []string) {
				n := inRec.len()
				return warning.WithWarningRecorder(ctx, inRec), func() []string { return inRec.since(n) }
			},
		},
		{
			name:  "http/cache=" + cache2,
			alpha: httpTyped[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](t, s, scheme, fleetapi.Fleets.In("v1alpha1"), httpNS, httpRec),
			v1:    httpTyped[*fleetv1.Fleet, *fleetv1.FleetList](t, s, scheme, fleetapi.Fleets, httpNS, httpRec),
			warned: func(ctx context.Context) (context.Context, func() []string) {
				n := httpRec.len()
				return ctx, func() []string { return httpRec.since(n) }
			},
		},
	}
}

// httpTyped is client-go's typed client of res over HTTPS, as a generated
// clientset builds it, with field manager "tester".
func httpTyped[T interface {
	runtime.Object
	metav1.Object
	comparable
}, L runtime.Object](t *testing.T, s *customapitest.Server, scheme *runtime.Scheme, res resource.Resource, ns string, warn rest.WarningHandler) typed[T, L] {
	t.Helper()
	gv := res.GroupVersionKind.GroupVersion()
	cfg := rest.CopyConfig(s.Config)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &gv
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.WarningHandler = warn
	cfg.UserAgent = "tester"
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return gentype.NewClientWithList[T, L](res.Plural, rc, runtime.NewParameterCodec(scheme), ns,
		func() T { return res.New().(T) }, func() L { return res.NewList().(L) })
}

// TestVersionsOneObject runs through both doors, with the watch
// cache on and off: create in v1alpha1, read in v1, update in v1, read in
// v1alpha1, a watch in each version sees each change once, converted,
// label selectors agree, one uid and resourceVersion throughout; only
// v1alpha1 requests carry the deprecation warning.
func TestVersionsOneObject(t *testing.T) {
	for _, cache := range []bool{true, false} {
		_, doors := startFleets(t, cache)
		for _, d := range doors {
			t.Run(d.name, func(t *testing.T) { testOneObject(t, d) })
		}
	}
}

func testOneObject(t *testing.T, d fleetDoors) {
	ctx := t.Context()
	wctx, warned := d.warned(ctx)
	created, err := d.alpha.Create(wctx, &fleetv1alpha1.Fleet{
		ObjectMeta: metav1.ObjectMeta{Name: "f", Labels: map[string]string{"app": "x"}},
		Spec:       fleetv1alpha1.FleetSpec{Size: 3, Region: "eu-west/a"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const deprecated = "fleet.example.com/v1alpha1 Fleet is deprecated; use fleet.example.com/v1 Fleet"
	if w := warned(); !slices.Contains(w, deprecated) {
		t.Errorf("create in v1alpha1 warned %q, want %q", w, deprecated)
	}
	uid, rv := created.UID, created.ResourceVersion

	wctx, warned = d.warned(ctx)
	got, err := d.v1.Get(wctx, "f", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := warned(); len(w) != 0 {
		t.Errorf("get in v1 warned %q", w)
	}
	if got.UID != uid || got.ResourceVersion != rv || got.Spec.Replicas != 3 ||
		got.Spec.Placement.Region != "eu-west" || got.Spec.Placement.Zone != "a" {
		t.Fatalf("v1 get: uid %s rv %s spec %+v; want uid %s rv %s replicas 3, placement eu-west/a", got.UID, got.ResourceVersion, got.Spec, uid, rv)
	}

	// Watches in both versions from the create on.
	wAlpha, err := d.alpha.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer wAlpha.Stop()
	wV1, err := d.v1.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer wV1.Stop()

	got.Spec.Replicas = 5
	updated, err := d.v1.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alpha, err := d.alpha.Get(ctx, "f", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if alpha.UID != uid || alpha.ResourceVersion != updated.ResourceVersion || alpha.Spec.Size != 5 || alpha.Spec.Region != "eu-west/a" {
		t.Fatalf("v1alpha1 get after the v1 update: uid %s rv %s spec %+v; want rv %s size 5 region eu-west/a", alpha.UID, alpha.ResourceVersion, alpha.Spec, updated.ResourceVersion)
	}
	if apiVersion := alpha.APIVersion; apiVersion != "" && apiVersion != "fleet.example.com/v1alpha1" {
		t.Errorf("v1alpha1 get: apiVersion %q", apiVersion)
	}

	// A second change; each watch must see the update, then this one, each
	// once.
	alpha.Labels["tier"] = "gold"
	relabelled, err := d.alpha.Update(ctx, alpha, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		w    watch.Interface
		spec func(runtime.Object) string
	}{
		{"v1alpha1", wAlpha, func(o runtime.Object) string {
			f := o.(*fleetv1alpha1.Fleet)
			return fmt.Sprintf("size=%d region=%s tier=%s", f.Spec.Size, f.Spec.Region, f.Labels["tier"])
		}},
		{"v1", wV1, func(o runtime.Object) string {
			f := o.(*fleetv1.Fleet)
			return fmt.Sprintf("size=%d region=%s/%s tier=%s", f.Spec.Replicas, f.Spec.Placement.Region, f.Spec.Placement.Zone, f.Labels["tier"])
		}},
	} {
		want := []string{
			"MODIFIED " + updated.ResourceVersion + " size=5 region=eu-west/a tier=",
			"MODIFIED " + relabelled.ResourceVersion + " size=5 region=eu-west/a tier=gold",
		}
		var seen []string
		deadline := time.After(wait.ForeverTestTimeout)
		for len(seen) < len(want) {
			select {
			case ev, ok := <-w.w.ResultChan():
				if !ok {
					t.Fatalf("watch in %s closed after %q", w.name, seen)
				}
				m, err := metaOf(ev.Object)
				if err != nil {
					t.Fatalf("watch in %s: %s event: %v", w.name, ev.Type, err)
				}
				if m.GetUID() != uid {
					t.Errorf("watch in %s: uid %s", w.name, m.GetUID())
				}
				seen = append(seen, fmt.Sprintf("%s %s %s", ev.Type, m.GetResourceVersion(), w.spec(ev.Object)))
			case <-deadline:
				t.Fatalf("watch in %s saw %q, want %q", w.name, seen, want)
			}
		}
		if !slices.Equal(seen, want) {
			t.Errorf("watch in %s saw %q, want %q", w.name, seen, want)
		}
	}

	// Label selectors agree.
	for _, sel := range []struct {
		selector string
		want     int
	}{{"app=x", 1}, {"tier=gold", 1}, {"app=y", 0}} {
		la, err := d.alpha.List(ctx, metav1.ListOptions{LabelSelector: sel.selector})
		if err != nil {
			t.Fatal(err)
		}
		l1, err := d.v1.List(ctx, metav1.ListOptions{LabelSelector: sel.selector})
		if err != nil {
			t.Fatal(err)
		}
		if len(la.Items) != sel.want || len(l1.Items) != sel.want {
			t.Fatalf("list %s: %d in v1alpha1, %d in v1; want %d", sel.selector, len(la.Items), len(l1.Items), sel.want)
		}
		for i := range la.Items {
			if la.Items[i].UID != l1.Items[i].UID || la.Items[i].ResourceVersion != l1.Items[i].ResourceVersion {
				t.Errorf("list %s: item %d differs: %s@%s and %s@%s", sel.selector, i, la.Items[i].UID, la.Items[i].ResourceVersion, l1.Items[i].UID, l1.Items[i].ResourceVersion)
			}
		}
	}
}

// TestVersionsApplyConflict: server-side apply by manager A in v1alpha1,
// then by manager B in v1 on the same (converted) field, is 409 Conflict
// naming A and its field, unless forced; managedFields record each
// manager's apiVersion.
func TestVersionsApplyConflict(t *testing.T) {
	_, doors := startFleets(t, true)
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			ctx := t.Context()
			const name = "applied"
			a := fmt.Sprintf(`{"apiVersion":"fleet.example.com/v1alpha1","kind":"Fleet","metadata":{"name":%q},"spec":{"size":2,"region":"us-east/b"}}`, name)
			if _, err := d.alpha.Patch(ctx, name, types.ApplyPatchType, []byte(a), metav1.PatchOptions{FieldManager: "A"}); err != nil {
				t.Fatal(err)
			}
			b := fmt.Sprintf(`{"apiVersion":"fleet.example.com/v1","kind":"Fleet","metadata":{"name":%q},"spec":{"replicas":4}}`, name)
			_, err := d.v1.Patch(ctx, name, types.ApplyPatchType, []byte(b), metav1.PatchOptions{FieldManager: "B"})
			// The conflict names A's field as A manages it, in v1alpha1
			// (structured-merge-diff compares each manager's fields in
			// that manager's version, as kube-apiserver does).
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "A": .spec.size`) {
				t.Fatalf("apply by B in v1: %v, want a 409 Conflict with A on .spec.size", err)
			}
			force := true
			out, err := d.v1.Patch(ctx, name, types.ApplyPatchType, []byte(b), metav1.PatchOptions{FieldManager: "B", Force: &force})
			if err != nil {
				t.Fatal(err)
			}
			if out.Spec.Replicas != 4 || out.Spec.Placement.Region != "us-east" || out.Spec.Placement.Zone != "b" {
				t.Errorf("after the forced apply: spec %+v", out.Spec)
			}
			versions := map[string]string{}
			for _, e := range out.ManagedFields {
				if e.Operation == metav1.ManagedFieldsOperationApply {
					versions[e.Manager] = e.APIVersion
				}
			}
			if versions["A"] != "fleet.example.com/v1alpha1" || versions["B"] != "fleet.example.com/v1" {
				t.Errorf("managedFields apiVersions %v, want A in v1alpha1 and B in v1", versions)
			}
		})
	}
}

// metaOf returns the object metadata of a watch event's object, or the
// Status error of an ERROR event.
func metaOf(obj runtime.Object) (metav1.Object, error) {
	if st, ok := obj.(*metav1.Status); ok {
		return nil, &apierrors.StatusError{ErrStatus: *st}
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// TestVersionsStoredBeforeAndRemoved: fleets written when v1alpha1 was the
// only version (and so the storage version) read in both versions once v1
// is the storage version, and are stored as v1 at their next write; with
// v1alpha1 Removed, it is not served (no in-process client, 404 over HTTP,
// not in discovery) while its stored objects still read in v1.
func TestVersionsStoredBeforeAndRemoved(t *testing.T) {
	ctx := t.Context()
	cfg, prefix := customapitest.Etcd(t)
	opts := customapitest.RegistryOptions{Storage: storage.Config{Etcd: cfg, Prefix: prefix}}
	alphaOnly := fleetapi.Fleets.In("v1alpha1")
	alphaOnly.Versions = nil
	old := customapitest.OpenRegistry(t, opts, alphaOnly)
	ns := old.Namespace(t)
	oldc, err := client.For[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](old.Registry, alphaOnly)
	if err != nil {
		t.Fatal(err)
	}
	created, err := oldc.Namespace(ns).Create(ctx, &fleetv1alpha1.Fleet{
		ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: fleetv1alpha1.FleetSpec{Size: 2, Region: "ap-south/c"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	key := old.Key(fleetapi.Fleets, ns, "old")
	if got := storedAPIVersion(t, cfg, key); got != "fleet.example.com/v1alpha1" {
		t.Fatalf("stored as %q before v1", got)
	}

	both := customapitest.OpenRegistry(t, opts, fleetapi.Fleets)
	v1c, err := client.For[*fleetv1.Fleet, *fleetv1.FleetList](both.Registry, fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}
	alphac, err := client.For[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](both.Registry, fleetapi.Fleets.In("v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := v1c.Namespace(ns).Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion || got.Spec.Replicas != 2 || got.Spec.Placement != (fleetv1.Placement{Region: "ap-south", Zone: "c"}) {
		t.Fatalf("old object in v1: %s@%s %+v", got.UID, got.ResourceVersion, got.Spec)
	}
	alpha, err := alphac.Namespace(ns).Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if alpha.Spec != created.Spec || alpha.ResourceVersion != created.ResourceVersion {
		t.Fatalf("old object in v1alpha1: %+v@%s, want %+v@%s", alpha.Spec, alpha.ResourceVersion, created.Spec, created.ResourceVersion)
	}
	got.Spec.Replicas = 3
	if _, err := v1c.Namespace(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := storedAPIVersion(t, cfg, key); v != "fleet.example.com/v1" {
		t.Fatalf("stored as %q after a write, want the storage version", v)
	}
	if err := both.Close(); err != nil {
		t.Fatal(err)
	}

	removed := fleetapi.Fleets
	removed.Versions = slices.Clone(removed.Versions)
	removed.Versions[0].Removed = true
	s := customapitest.StartWithOptions(t, nil, removed)
	if _, err := client.For[*fleetv1alpha1.Fleet, *fleetv1alpha1.FleetList](s.Registry(), removed.In("v1alpha1")); err == nil {
		t.Error("an in-process client of a removed version")
	}
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/apis/fleet.example.com/v1alpha1/namespaces/default/fleets", 404},
		{"/apis/fleet.example.com/v1alpha1", 404},
		{"/apis/fleet.example.com/v1/namespaces/default/fleets", 200},
	} {
		resp, err := s.HTTPClient.Get(s.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
	}
	groups, err := discovery.NewDiscoveryClientForConfigOrDie(s.Config).ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == "fleet.example.com" && (len(g.Versions) != 1 || g.PreferredVersion.Version != "v1") {
			t.Errorf("discovery of fleet.example.com: %+v", g)
		}
	}
}

// TestVersionsDiscovery: discovery lists both versions of the group, v1
// preferred, and fleets in each.
func TestVersionsDiscovery(t *testing.T) {
	s := customapitest.Start(t, fleetapi.Fleets, fleetapi.Devices)
	dc := discovery.NewDiscoveryClientForConfigOrDie(s.Config)
	groups, err := dc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, g := range groups.Groups {
		if g.Name != "fleet.example.com" {
			continue
		}
		found = true
		var versions []string
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
		}
		if !slices.Equal(versions, []string{"v1", "v1alpha1"}) || g.PreferredVersion.Version != "v1" {
			t.Errorf("versions %v preferred %s, want [v1 v1alpha1] preferred v1", versions, g.PreferredVersion.Version)
		}
	}
	if !found {
		t.Fatal("no group fleet.example.com")
	}
	for _, v := range []string{"v1", "v1alpha1"} {
		list, err := dc.ServerResourcesForGroupVersion("fleet.example.com/" + v)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
		}
		if !slices.Contains(names, "fleets") || !slices.Contains(names, "fleets/status") {
			t.Errorf("%s resources %v, want fleets and fleets/status", v, names)
		}
	}
}

// storedAPIVersion returns the apiVersion of the JSON value stored at key.
func storedAPIVersion(t *testing.T, cfg etcd.ClientConfig, key string) string {
	t.Helper()
	cli, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	resp, err := cli.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%s: %d values", key, len(resp.Kvs))
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(resp.Kvs[0].Value, &tm); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return tm.APIVersion
}

// TestVersionsEncodings: each version is served in JSON and CBOR, both
// ways: a CBOR create in v1alpha1 reads back in v1 over JSON, and a GET in
// each version answers the object of that version in each encoding.
func TestVersionsEncodings(t *testing.T) {
	s := customapitest.Start(t, fleetapi.Fleets)
	ns := s.Namespace(t)
	scheme, err := resource.NewScheme(fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme, serializer.WithSerializer(cbor.NewSerializerInfo))
	mediaTypes := []string{runtime.ContentTypeJSON, runtime.ContentTypeCBOR}
	encoder := func(mediaType string, gv schema.GroupVersion) runtime.Encoder {
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			t.Fatalf("no serializer for %s", mediaType)
		}
		return codecs.EncoderForVersion(info.Serializer, gv)
	}
	do := func(method, path, mediaType string, body []byte) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", mediaType)
		if body != nil {
			req.Header.Set("Content-Type", mediaType)
		}
		resp, err := s.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 300 || resp.Header.Get("Content-Type") != mediaType {
			t.Fatalf("%s %s (%s): %d %s %q", method, path, mediaType, resp.StatusCode, resp.Header.Get("Content-Type"), data)
		}
		return data
	}
	alphaGV := schema.GroupVersion{Group: "fleet.example.com", Version: "v1alpha1"}
	v1GV := schema.GroupVersion{Group: "fleet.example.com", Version: "v1"}
	for i, mt := range mediaTypes {
		name := fmt.Sprintf("enc-%d", i)
		body, err := runtime.Encode(encoder(mt, alphaGV), &fleetv1alpha1.Fleet{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fleetv1alpha1.FleetSpec{Size: 6, Region: "sa-east/d"},
		})
		if err != nil {
			t.Fatal(err)
		}
		do(http.MethodPost, "/apis/fleet.example.com/v1alpha1/namespaces/"+ns+"/fleets", mt, body)
		for _, read := range mediaTypes {
			for _, gv := range []schema.GroupVersion{alphaGV, v1GV} {
				data := do(http.MethodGet, "/apis/"+gv.String()+"/namespaces/"+ns+"/fleets/"+name, read, nil)
				obj, gvk, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
				if err != nil {
					t.Fatalf("decode %s in %s: %v", read, gv, err)
				}
				if gvk.GroupVersion() != gv {
					t.Errorf("GET in %s (%s) answered %s", gv, read, gvk)
				}
				switch f := obj.(type) {
				case *fleetv1alpha1.Fleet:
					if f.Spec.Size != 6 || f.Spec.Region != "sa-east/d" {
						t.Errorf("%s in %s: %+v", read, gv, f.Spec)
					}
				case *fleetv1.Fleet:
					if f.Spec.Replicas != 6 || f.Spec.Placement != (fleetv1.Placement{Region: "sa-east", Zone: "d"}) {
						t.Errorf("%s in %s: %+v", read, gv, f.Spec)
					}
				default:
					t.Errorf("%s in %s decoded to %T", read, gv, obj)
				}
			}
		}
	}
}
