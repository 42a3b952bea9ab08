package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// Get returns what the registry has: uid, resourceVersion, labels, spec.
func TestGet(t *testing.T) {
	ctx := testContext(t)
	ns := customapitest.Namespace(t)
	reg := customs(t, ns)
	created, err := reg.Create(ctx, sample("one"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := reg.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := dial(t).Get(ctx, &GetRequest{Namespace: ns, Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID == "" || got.UID != want.UID || got.UID != created.UID {
		t.Errorf("uid %q, registry has %q", got.UID, want.UID)
	}
	if got.ResourceVersion != want.ResourceVersion {
		t.Errorf("resourceVersion %q, registry has %q", got.ResourceVersion, want.ResourceVersion)
	}
	if got.Namespace != ns || got.Name != "one" || !reflect.DeepEqual(got.Labels, want.Labels) {
		t.Errorf("metadata %s/%s labels %v, want %s/one labels %v", got.Namespace, got.Name, got.Labels, ns, want.Labels)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("spec %+v, registry has %+v", got.Spec, want.Spec)
	}
	if !got.CreationTimestamp.Equal(&want.CreationTimestamp) || len(got.ManagedFields) != len(want.ManagedFields) {
		t.Errorf("creationTimestamp %v managedFields %d, registry has %v, %d", got.CreationTimestamp, len(got.ManagedFields), want.CreationTimestamp, len(want.ManagedFields))
	}
}

// Registry errors arrive as gRPC status codes with the Status message.
func TestErrorCodes(t *testing.T) {
	ctx := testContext(t)
	ns := customapitest.Namespace(t)
	c := dial(t)
	watchErr := func(req *WatchRequest) error {
		stream, err := c.Watch(ctx, req)
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"get a missing object", func() error {
			_, err := c.Get(ctx, &GetRequest{Namespace: ns, Name: "missing"})
			return err
		}, codes.NotFound, `customs.test "missing" not found`},
		{"get without a name", func() error {
			_, err := c.Get(ctx, &GetRequest{Namespace: ns})
			return err
		}, codes.InvalidArgument, "Name parameter required"},
		{"get in an invalid namespace", func() error {
			_, err := c.Get(ctx, &GetRequest{Namespace: "Not_A_Namespace", Name: "x"})
			return err
		}, codes.InvalidArgument, "invalid namespace"},
		{"watch with an invalid label selector", func() error {
			return watchErr(&WatchRequest{Namespace: ns, LabelSelector: "app in ("})
		}, codes.InvalidArgument, ""},
		{"watch from a non-numeric resourceVersion", func() error {
			return watchErr(&WatchRequest{Namespace: ns, ResourceVersion: "abc"})
		}, codes.InvalidArgument, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			st, ok := status.FromError(err)
			if !ok || st.Code() != tc.code {
				t.Fatalf("error %v, want gRPC code %s", err, tc.code)
			}
			if !strings.Contains(st.Message(), tc.msg) {
				t.Errorf("message %q lacks %q", st.Message(), tc.msg)
			}
		})
	}
}

// The mapping of every Status reason StatusError knows, and of errors that
// are no Status.
func TestStatusError(t *testing.T) {
	gr := schema.GroupResource{Group: "test", Resource: "customs"}
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{apierrors.NewNotFound(gr, "x"), codes.NotFound},
		{apierrors.NewAlreadyExists(gr, "x"), codes.AlreadyExists},
		{apierrors.NewConflict(gr, "x", errors.New("stale")), codes.Aborted},
		{apierrors.NewBadRequest("bad"), codes.InvalidArgument},
		{apierrors.NewInvalid(schema.GroupKind{Group: "test", Kind: "Custom"}, "x", nil), codes.InvalidArgument},
		{apierrors.NewResourceExpired("too old resource version"), codes.OutOfRange},
		{apierrors.NewGenericServerResponse(http.StatusGone, "watch", gr, "", "", 0, false), codes.OutOfRange},
		{apierrors.NewUnauthorized("who"), codes.Unauthenticated},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), codes.PermissionDenied},
		{apierrors.NewMethodNotSupported(gr, "patch"), codes.Unimplemented},
		{apierrors.NewRequestEntityTooLargeError("big"), codes.ResourceExhausted},
		{apierrors.NewTooManyRequests("slow down", 1), codes.ResourceExhausted},
		{apierrors.NewTimeoutError("slow", 1), codes.DeadlineExceeded},
		{apierrors.NewServerTimeout(gr, "get", 1), codes.DeadlineExceeded},
		{apierrors.NewServiceUnavailable("later"), codes.Unavailable},
		{apierrors.NewInternalError(errors.New("boom")), codes.Internal},
		{apierrors.NewGenericServerResponse(http.StatusBadGateway, "get", gr, "x", "", 0, false), codes.Internal},
		{context.Canceled, codes.Canceled},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{errors.New("plain"), codes.Unknown},
	} {
		got := status.Code(StatusError(tc.err))
		if got != tc.code {
			t.Errorf("%v: code %s, want %s", tc.err, got, tc.code)
		}
	}
	if StatusError(nil) != nil {
		t.Error("StatusError(nil) is not nil")
	}
	// A watch ERROR event (what the registry sends for a compacted
	// resourceVersion) ends the stream with its code.
	expired := apierrors.NewResourceExpired("too old resource version: 1 (5)").Status()
	if _, err := eventMessage(watch.Event{Type: watch.Error, Object: &expired}); status.Code(err) != codes.OutOfRange {
		t.Errorf("ERROR event 410 Expired: %v, want OutOfRange", err)
	}
}

// Watch streams ADDED, MODIFIED and DELETED for writes made after its
// headers arrive, with decodable objects equal to the registry's; a
// cancelled watch and a closed client end cleanly, and the server's
// handler returns.
func TestWatch(t *testing.T) {
	ctx := testContext(t)
	ns := customapitest.Namespace(t)
	reg := customs(t, ns)
	c, err := Dial(grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	stream, err := c.Watch(watchCtx, &WatchRequest{Namespace: ns, LabelSelector: "app=relay"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil { // the registry watch is established
		t.Fatal(err)
	}

	created, err := reg.Create(ctx, sample("w"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := created.DeepCopy()
	next.Spec.Replicas = 5
	updated, err := reg.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Not selected: no event.
	other := sample("other")
	other.Labels = nil
	if _, err := reg.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, want := range []struct {
		typ      watch.EventType
		obj      *testv1.Custom
		deletion bool
	}{
		{watch.Added, created, false},
		{watch.Modified, updated, false},
		{watch.Deleted, updated, true},
	} {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("waiting for %s: %v", want.typ, err)
		}
		o := ev.GetObject()
		if ev.Type != string(want.typ) || o == nil || o.Name != "w" || o.UID != created.UID {
			t.Fatalf("event %s %v, want %s of %s/w uid %s", ev.Type, o, want.typ, ns, created.UID)
		}
		if !reflect.DeepEqual(o.Spec, want.obj.Spec) {
			t.Errorf("%s: spec %+v, want %+v", ev.Type, o.Spec, want.obj.Spec)
		}
		if want.deletion {
			if o.ResourceVersion == updated.ResourceVersion || o.ResourceVersion == "" {
				t.Errorf("DELETED resourceVersion %q, want the deletion's, after %q", o.ResourceVersion, updated.ResourceVersion)
			}
		} else if o.ResourceVersion != want.obj.ResourceVersion {
			t.Errorf("%s: resourceVersion %q, want %q", ev.Type, o.ResourceVersion, want.obj.ResourceVersion)
		}
	}

	// The client cancels: Recv ends with Canceled, and the server's
	// handler returns (its registry watch stopped).
	stopWatch()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("Recv after cancel: %v, want Canceled", err)
	}
	customapitest.Eventually(t, 10*time.Second, "the Watch handler to return", func(context.Context) (bool, error) { return streams.Load() == 0, nil })

	// A watch open when the client closes ends too.
	stream, err = c.Watch(ctx, &WatchRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatal(err)
	}
	if ev, err := stream.Recv(); err != nil || ev.Type != string(watch.Added) || ev.Object.Name != "other" {
		t.Fatalf("initial event %v, %v; want ADDED other", ev, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled || errors.Is(err, io.EOF) {
		t.Fatalf("Recv after Close: %v, want Canceled", err)
	}
	customapitest.Eventually(t, 10*time.Second, "the Watch handler to return", func(context.Context) (bool, error) { return streams.Load() == 0, nil })
}
