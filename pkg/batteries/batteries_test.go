package batteries_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/resource"
)

// start serves the batteries (events with ttl) and customs, and returns a
// client-go clientset for it.
func start(t *testing.T, ttl time.Duration) (*customapitest.Server, kubernetes.Interface) {
	t.Helper()
	srv := customapitest.Start(t, append(batteries.Resources(batteries.Options{EventTTL: ttl}), install.Customs)...)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	return srv, cs
}

// wantInvalid fails unless err is a 422 Invalid whose causes name field.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 422 || status.Status().Reason != metav1.StatusReasonInvalid {
		t.Fatalf("error %v, want 422 Invalid", err)
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Field == field {
				return
			}
		}
	}
	t.Fatalf("422 %v does not name field %q (causes %+v)", err, field, status.Status().Details)
}

func TestValidation(t *testing.T) {
	srv, cs := start(t, time.Hour)
	ctx := t.Context()
	ns := srv.Namespace(t)
	om := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	big := strings.Repeat("x", corev1.MaxSecretSize/2+1)
	now := metav1.NewMicroTime(time.Now())
	for _, tc := range []struct {
		name   string
		create func() error
		field  string // "" means the create must succeed
	}{
		{"configmap ok", func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: om("ok"), Data: map[string]string{"a.b_c-D": "v"}}, metav1.CreateOptions{})
			return err
		}, ""},
		{"configmap bad key", func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: om("badkey"), Data: map[string]string{"a b": "v"}}, metav1.CreateOptions{})
			return err
		}, "data[a b]"},
		{"configmap key in data and binaryData", func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: om("dup"), Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"k": {1}}}, metav1.CreateOptions{})
			return err
		}, "binaryData[k]"},
		{"configmap over 1 MiB", func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: om("big"), Data: map[string]string{"a": big, "b": big}}, metav1.CreateOptions{})
			return err
		}, "data"},
		{"secret bad key", func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: om("badkey"), Data: map[string][]byte{"/etc": {1}}}, metav1.CreateOptions{})
			return err
		}, "data[/etc]"},
		{"secret tls without key", func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: om("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": {1}}}, metav1.CreateOptions{})
			return err
		}, "data[tls.key]"},
		{"lease negative duration", func() error {
			_, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: om("l"), Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](-1)}}, metav1.CreateOptions{})
			return err
		}, "spec.leaseDurationSeconds"},
		{"core event in another namespace", func() error {
			_, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: om("e"), InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Name: "ok", Namespace: "other"}}, metav1.CreateOptions{})
			return err
		}, "involvedObject.namespace"},
		{"events.k8s.io event without reportingController", func() error {
			_, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: om("e"), EventTime: now, Type: "Normal", Reason: "R", Action: "A", ReportingInstance: "i",
				Regarding: corev1.ObjectReference{Kind: "ConfigMap", Name: "ok", Namespace: ns}}, metav1.CreateOptions{})
			return err
		}, "reportingController"},
		{"events.k8s.io event with a bad type", func() error {
			_, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: om("e"), EventTime: now, Type: "Bad", Reason: "R", Action: "A", ReportingController: "x.io/c", ReportingInstance: "i",
				Regarding: corev1.ObjectReference{Kind: "ConfigMap", Name: "ok", Namespace: ns}}, metav1.CreateOptions{})
			return err
		}, "type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantInvalid(t, err, tc.field)
		})
	}
}

func TestImmutableAndSecretDefaults(t *testing.T) {
	srv, cs := start(t, time.Hour)
	ctx := t.Context()
	ns := srv.Namespace(t)
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["a"] = "2"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	wantInvalid(t, err, "data")
	cm.Data["a"], cm.Immutable = "1", ptr.To(false)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	wantInvalid(t, err, "immutable")
	// Metadata may still change.
	cm.Immutable, cm.Labels = ptr.To(true), map[string]string{"l": "v"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("label update of an immutable config map: %v", err)
	}

	secrets := cs.CoreV1().Secrets(ns)
	s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"user": "alice"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeOpaque || string(s.Data["user"]) != "alice" || s.StringData != nil {
		t.Fatalf("secret type %q data %q stringData %v, want Opaque, alice merged into data, no stringData", s.Type, s.Data, s.StringData)
	}
	s.Type = corev1.SecretTypeBasicAuth
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	wantInvalid(t, err, "type")
	list, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=Opaque"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("field selector type=Opaque: %v, %d items", err, len(list.Items))
	}
}

// TestLeaseConflict: of two updates based on one resourceVersion, the
// second is a 409 Conflict.
func TestLeaseConflict(t *testing.T) {
	srv, cs := start(t, time.Hour)
	ctx := t.Context()
	leases := cs.CoordinationV1().Leases(srv.Namespace(t))
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := l.DeepCopy()
	l.Spec.HolderIdentity = ptr.To("b")
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Spec.HolderIdentity = ptr.To("c")
	if _, err := leases.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with a stale resourceVersion: %v, want 409 Conflict", err)
	}
	got, err := leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil || *got.Spec.HolderIdentity != "b" {
		t.Fatalf("holder after the conflict: %v %v, want b", got, err)
	}
}

// TestEventTTL: both event APIs store each event with an etcd lease of the
// configured TTL, renewed by an update; other resources get none.
func TestEventTTL(t *testing.T) {
	const ttl = 90 * time.Second
	srv, cs := start(t, ttl)
	ctx := t.Context()
	ns := srv.Namespace(t)
	etcdClient, err := srv.Registry().EtcdConfig().NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcdClient.Close() })
	// leaseTTL returns the granted and the remaining TTL (seconds) of the
	// lease attached to the object's key, 0 and 0 for none.
	leaseTTL := func(res resource.Resource, name string) (granted, remaining int64) {
		t.Helper()
		id := mustLease(t, etcdClient, srv.Registry().Key(res, ns, name))
		if id == 0 {
			return 0, 0
		}
		tl, err := etcdClient.TimeToLive(ctx, clientv3LeaseID(id))
		if err != nil {
			t.Fatal(err)
		}
		return tl.GrantedTTL, tl.TTL
	}
	// The etcd3 store shares one lease between writes of a few seconds
	// (k8s.io/apiserver's lease manager grants TTL plus 5%, at most 60 s
	// more, and reuses it for that extra time), so every key has at least
	// TTL left when written, as with kube-apiserver's --event-ttl.
	inRange := func(granted, remaining int64) bool {
		return granted >= int64(ttl/time.Second) && granted <= int64(ttl/time.Second)*105/100+1 && remaining >= int64(ttl/time.Second)-2
	}
	ref := corev1.ObjectReference{Kind: "ConfigMap", Name: "x", Namespace: ns}
	ev, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "core"}, InvolvedObject: ref, Reason: "R", Message: "m", Type: "Normal"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "new"}, EventTime: metav1.NewMicroTime(time.Now()),
		Type: "Normal", Reason: "R", Action: "A", ReportingController: "x.io/c", ReportingInstance: "i", Regarding: ref}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := map[schema.GroupVersionResource]resource.Resource{}
	for _, r := range srv.Registry().Resources() {
		res[r.GroupVersionResource()] = r
	}
	coreEvents := res[corev1.SchemeGroupVersion.WithResource("events")]
	for _, c := range []struct {
		res  resource.Resource
		name string
		none bool
	}{
		{coreEvents, "core", false},
		{res[eventsv1.SchemeGroupVersion.WithResource("events")], "new", false},
		{res[corev1.SchemeGroupVersion.WithResource("configmaps")], "x", true},
	} {
		granted, remaining := leaseTTL(c.res, c.name)
		if c.none && granted != 0 || !c.none && !inRange(granted, remaining) {
			t.Errorf("%s %s: lease granted %d s, %d s left; want none: %v, else about %s", c.res.GroupResource(), c.name, granted, remaining, c.none, ttl)
		}
	}
	ev.Count = 2
	if _, err := cs.CoreV1().Events(ns).Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if granted, remaining := leaseTTL(coreEvents, "core"); !inRange(granted, remaining) {
		t.Errorf("after an update: lease granted %d s, %d s left, want about %s", granted, remaining, ttl)
	}
}

// TestLibraryServesOnlyWhatItIsGiven: a server with only customs has no
// config maps (the batteries are opt-in in the library).
func TestLibraryServesOnlyWhatItIsGiven(t *testing.T) {
	srv := customapitest.Start(t, install.Customs)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("list configmaps without batteries: %v, want 404", err)
	}
}

// TestInProcessDoor: the typed in-process client on the server's registry
// gets the same validation and sees the same objects as client-go.
func TestInProcessDoor(t *testing.T) {
	srv, cs := start(t, time.Hour)
	ctx := t.Context()
	ns := srv.Namespace(t)
	cms, err := client.For[*corev1.ConfigMap, *corev1.ConfigMapList](srv.Registry(), batteries.ConfigMaps)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Namespace(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "door"}, Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "door", metav1.GetOptions{}); err != nil || got.Data["a"] != "1" {
		t.Fatalf("client-go get of an in-process create: %v %v", got, err)
	}
	cm.Data["a"] = "2"
	_, err = cms.Namespace(ns).Update(ctx, cm, metav1.UpdateOptions{})
	wantInvalid(t, err, "data")
	_, err = cms.Namespace(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Data: map[string]string{"a b": "1"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "data[a b]")
}

// TestUnconditionalUpdate: as on kube-apiserver, an update without
// resourceVersion overwrites a ConfigMap or a Secret (Helm's release
// storage updates its Secrets so), and is 422 Invalid for a kind that
// does not declare UnconditionalUpdate (customs).
func TestUnconditionalUpdate(t *testing.T) {
	srv, _ := start(t, time.Hour)
	ns := srv.Namespace(t)
	for _, tc := range []struct {
		gvr        schema.GroupVersionResource
		kind, path string // path: the field that holds the value
		// invalid: the update is 422 naming metadata.resourceVersion.
		invalid bool
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap", "data", false},
		{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret", "stringData", false},
		{schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}, "Custom", "spec", true},
	} {
		t.Run(tc.gvr.Resource, func(t *testing.T) {
			ctx := t.Context()
			c := srv.Dynamic.Resource(tc.gvr).Namespace(ns)
			object := func(v string) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": tc.gvr.GroupVersion().String(), "kind": tc.kind,
					"metadata": map[string]any{"name": "x"},
					tc.path:    map[string]any{"message": v},
				}}
			}
			if _, err := c.Create(ctx, object("old"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := c.Update(ctx, object("new"), metav1.UpdateOptions{})
			want := "new"
			if tc.invalid {
				wantInvalid(t, err, "metadata.resourceVersion")
				want = "old"
			} else if err != nil {
				t.Fatalf("update without resourceVersion: %v", err)
			}
			got, err := c.Get(ctx, "x", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			path := tc.path
			if path == "stringData" { // a Secret's stringData is written into data
				path = "data"
			}
			v, _, _ := unstructured.NestedString(got.Object, path, "message")
			if tc.kind == "Secret" {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					t.Fatal(err)
				}
				v = string(b)
			}
			if v != want {
				t.Fatalf("value after the update: %q, want %q", v, want)
			}
		})
	}
}
