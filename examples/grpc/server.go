package relay

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/registry"
)

// Server implements RelayServer (the service of relay.proto) on the
// customs.test/v1 store of a registry, through the typed in-process client:
// what it returns is what the registry, and the HTTP API server on the same
// registry, has.
type Server struct {
	customs *client.Client[*testv1.Custom, *testv1.CustomList]
}

var _ RelayServer = (*Server)(nil)

// NewServer returns the Relay service of reg, which must serve
// install.Customs (registry.Open(ctx, cfg, install.Customs), or a server's
// Registry()); the error says when it does not.
func NewServer(reg *registry.Registry) (*Server, error) {
	c, err := client.For[*testv1.Custom, *testv1.CustomList](reg, install.Customs)
	if err != nil {
		return nil, err
	}
	return &Server{customs: c}, nil
}

// NewGRPCServer returns a gRPC server with the Relay service of reg
// registered and Codec installed (grpc.ForceServerCodecV2), with opts
// (credentials, interceptors, ...) applied first. Serve it with
// Serve(listener); stop it with GracefulStop or Stop, which also end the
// Watch streams (their contexts are cancelled).
func NewGRPCServer(reg *registry.Registry, opts ...grpc.ServerOption) (*grpc.Server, error) {
	srv, err := NewServer(reg)
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer(append(opts, grpc.ForceServerCodecV2(Codec{}))...)
	RegisterRelayServer(s, srv)
	return s, nil
}

// Get returns the object req names, read as client.Client.Get reads it
// (from the watch cache when it is on, at least as new as etcd). Errors
// are StatusError's codes: NotFound, InvalidArgument for an empty name or
// an invalid namespace, ...
func (s *Server) Get(ctx context.Context, req *GetRequest) (*testv1.Custom, error) {
	obj, err := s.customs.Namespace(req.GetNamespace()).Get(ctx, req.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, StatusError(err)
	}
	return obj, nil
}

// Watch relays the registry's watch (client.Client.Watch with the
// request's namespace, resourceVersion and label selector) as WatchEvent
// messages: ADDED, MODIFIED and DELETED with the object. It sends the
// response headers (empty) once the registry watch is established, so a
// client that waits for them (ClientStream.Header) knows that its later
// writes are streamed. An ERROR event ends the stream with its Status as
// a gRPC error (StatusError: a too old resourceVersion is OutOfRange); the
// stream also ends when the client cancels (Canceled), or the server
// stops. Errors starting the watch (an invalid selector: InvalidArgument)
// end it before any header.
func (s *Server) Watch(req *WatchRequest, stream Relay_WatchServer) error {
	ctx := stream.Context()
	w, err := s.customs.Namespace(req.GetNamespace()).Watch(ctx, metav1.ListOptions{
		ResourceVersion: req.GetResourceVersion(),
		LabelSelector:   req.GetLabelSelector(),
	})
	if err != nil {
		return StatusError(err)
	}
	defer w.Stop()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				if ctx.Err() != nil {
					return status.FromContextError(ctx.Err()).Err()
				}
				return status.Error(codes.Unavailable, "the registry ended the watch; watch again from the last resourceVersion")
			}
			msg, err := eventMessage(ev)
			if err != nil {
				return err
			}
			if msg == nil {
				continue
			}
			if err := stream.Send(msg); err != nil {
				return err
			}
		}
	}
}

// eventMessage converts a registry watch event; nil for events the stream
// does not carry (bookmarks), a gRPC error for ERROR events.
func eventMessage(ev watch.Event) (*WatchEvent, error) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		obj, ok := ev.Object.(*testv1.Custom)
		if !ok {
			return nil, status.Errorf(codes.Internal, "watch event %s carries a %T, not a Custom", ev.Type, ev.Object)
		}
		return &WatchEvent{Type: string(ev.Type), Object: obj}, nil
	case watch.Bookmark:
		return nil, nil
	case watch.Error:
		if st, ok := ev.Object.(*metav1.Status); ok {
			return nil, status.Error(codeFor(*st), st.Message)
		}
		return nil, status.Errorf(codes.Internal, "watch error event with a %T", ev.Object)
	}
	return nil, status.Errorf(codes.Internal, "unknown watch event type %q", ev.Type)
}
