package registry_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// TestOverrides: with storage.Config.Overrides naming core events, the
// objects of both events APIs (events.k8s.io/v1 is stored as core events)
// are in the override's etcd only, encrypted there with the events'
// transformer, with their stored versions record beside them; every other
// resource is in the main etcd only. The registry reports the override's
// etcd and its resources with a health check, and RewriteStorage reads and
// rewrites the events in their etcd.
func TestOverrides(t *testing.T) {
	mainEtcd := customapitest.EmbeddedEtcd(t)
	eventsEtcd := customapitest.EmbeddedEtcd(t)
	const prefix = "/overrides"
	const ns = "ov"
	ttl := time.Hour
	coreEventsGR := schema.GroupResource{Resource: "events"}
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{
		Etcd: mainEtcd, Prefix: prefix,
		Transformers: loadTransformers(t, encryptionConfig(aescbc("A", keyA), identityProvider)),
		Overrides:    []storage.Override{{Resource: coreEventsGR, Etcd: eventsEtcd}},
	}}, install.Customs, batteries.CoreEvents(ttl), batteries.Events(ttl))

	coreEvents, err := client.For[*corev1.Event, *corev1.EventList](reg.Registry, batteries.CoreEvents(ttl))
	if err != nil {
		t.Fatal(err)
	}
	events, err := client.For[*eventsv1.Event, *eventsv1.EventList](reg.Registry, batteries.Events(ttl))
	if err != nil {
		t.Fatal(err)
	}
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](reg.Registry, install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	ref := corev1.ObjectReference{Kind: "Custom", Namespace: ns, Name: "c"}
	if _, err := coreEvents.Namespace(ns).Create(t.Context(), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "core"}, InvolvedObject: ref,
		Reason: "Test", Message: "plaintext-core", Type: corev1.EventTypeNormal}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Namespace(ns).Create(t.Context(), &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "new"}, EventTime: metav1.NowMicro(),
		ReportingController: "test/ov", ReportingInstance: "ov", Action: "Test", Reason: "Test", Type: corev1.EventTypeNormal,
		Regarding: ref, Note: "plaintext-new"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := customs.Namespace(ns).Create(t.Context(), newCustom(ns, "c", "ov", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	inMain, inEvents := rawValues(t, mainEtcd, prefix), rawValues(t, eventsEtcd, prefix)
	for _, k := range []string{prefix + "/events/" + ns + "/core", prefix + "/events/" + ns + "/new", storage.StoredVersionsKey(prefix, coreEventsGR)} {
		if _, ok := inEvents[k]; !ok {
			t.Errorf("%s not in the events etcd (%v)", k, keys(inEvents))
		}
		if _, ok := inMain[k]; ok {
			t.Errorf("%s in the main etcd", k)
		}
	}
	requirePrefix(t, inEvents, "/events/", "k8s:enc:aescbc:v1:A:", 2)
	for _, k := range []string{prefix + "/test/customs/" + ns + "/c", storage.StoredVersionsKey(prefix, install.Customs.GroupResource())} {
		if _, ok := inMain[k]; !ok {
			t.Errorf("%s not in the main etcd (%v)", k, keys(inMain))
		}
	}
	if len(inEvents) != 3 {
		t.Errorf("the events etcd holds %v, want the two events and their stored versions record", keys(inEvents))
	}

	overrides := reg.EtcdOverrides()
	if len(overrides) != 1 || !slices.Equal(overrides[0].Etcd.Endpoints, eventsEtcd.Endpoints) ||
		!slices.Equal(overrides[0].Resources, []schema.GroupResource{coreEventsGR, {Group: "events.k8s.io", Resource: "events"}}) {
		t.Fatalf("EtcdOverrides() = %+v", overrides)
	}
	if err := overrides[0].Check(); err != nil {
		t.Errorf("the override's check: %v", err)
	}

	report, err := reg.RewriteStorage(t.Context(), rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]int{}
	for _, r := range report.Resources {
		read[r.Resource.String()] = r.Read
	}
	if read["events"] != 2 || read["customs.test"] != 1 {
		t.Errorf("rewrite read %v, want 2 events (in their etcd) and 1 custom", read)
	}
}

// TestOverridesRefused: Open refuses overrides of resources it does not
// serve or that are stored as another, before anything starts, naming
// each override and what was meant.
func TestOverridesRefused(t *testing.T) {
	ttl := time.Hour
	for _, tc := range []struct {
		name     string
		override schema.GroupResource
		want     string
	}{
		{"stored as another", schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, `"events.k8s.io/events": events.events.k8s.io is stored as events (core group) and moves with it: override "/events" instead`},
		{"core group named", schema.GroupResource{Group: "core", Resource: "events"}, `"core/events": the core group is written empty: "/events"`},
		{"other group", schema.GroupResource{Group: "test", Resource: "events"}, `"test/events": no resource events is served in group test; did you mean "/events" or "events.k8s.io/events"?`},
		{"not in the group", schema.GroupResource{Group: "test", Resource: "widgets"}, `"test/widgets": this server serves no resource widgets in group test (it serves customs there)`},
		{"group not served", schema.GroupResource{Group: "example.com", Resource: "widgets"}, `"example.com/widgets": this server serves no resource of group example.com; overrides apply only to resources compiled into the server`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cfg := registry.Config{Storage: storage.Config{Etcd: unreachableEtcd, Overrides: []storage.Override{{Resource: tc.override, Etcd: unreachableEtcd}}}}
			reg, err := registry.Open(ctx, cfg, install.Customs, batteries.CoreEvents(ttl), batteries.Events(ttl))
			if err == nil {
				_ = reg.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "registry: Storage.Overrides: ") {
				t.Fatalf("Open: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// unreachableEtcd is an etcd nothing listens on: Open must refuse before
// it would connect.
var unreachableEtcd = etcd.ClientConfig{Endpoints: []string{"http://127.0.0.1:1"}}
