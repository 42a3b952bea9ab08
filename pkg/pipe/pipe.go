package pipe

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// Host names the in-memory server in URLs; it resolves nowhere.
const Host = "customapi.in-process"

// Pipe serves an HTTP handler (a server's whole handler: the same chain
// as HTTPS, authentication, audit, limits, authorization, admission) over
// in-memory connections (net.Pipe, through pipeListener), without a
// socket, TLS or the network, to client-go clients of its Config. They
// present the token given to New (a server's loopback token:
// system:apiserver in system:masters) and impersonate the user of each
// request's context, if any.
type Pipe struct {
	listener *pipeListener
	server   *http.Server
	config   *rest.Config

	// fresh are the connections served that have not begun a request
	// (http.StateNew): close closes them at once (see there).
	mu    sync.Mutex
	fresh map[net.Conn]struct{}
}

// New returns a pipe whose clients present token; it serves once Serve
// is called, until Close. A request made before Serve waits for it.
func New(token string) *Pipe {
	l := newPipeListener()
	p := &Pipe{listener: l, fresh: map[net.Conn]struct{}{}}
	p.config = &rest.Config{
		Host:        "http://" + Host,
		BearerToken: token,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return l.DialContext(ctx)
		},
		// The pipe is not rate limited: the server's own in-flight
		// limits apply, as for the program's other requests.
		QPS: -1,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return contextUser{next: rt}
		},
	}
	return p
}

// Config returns a client-go configuration that reaches the handler
// through the pipe. Each call returns a new copy.
func (p *Pipe) Config() *rest.Config { return rest.CopyConfig(p.config) }

// Serve serves handler on the pipe, once.
func (p *Pipe) Serve(handler http.Handler) {
	p.server = &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute, ConnState: p.track}
	go func() { _ = p.server.Serve(p.listener) }()
}

// track records which connections are fresh (http.Server.ConnState).
func (p *Pipe) track(c net.Conn, state http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if state == http.StateNew {
		p.fresh[c] = struct{}{}
	} else {
		delete(p.fresh, c)
	}
}

// pipeListener is a net.Listener of in-memory connections: each
// DialContext makes a net.Pipe and hands its server end to Accept.
//
// net.Pipe is unbuffered (a write returns once the other end has read
// it: both ends of HTTP/1.1 have a bufio buffer of their own), allocates
// nothing per connection, and its deadlines are exact, which net/http
// relies on: once a request's body is read, the server reads the
// connection in the background, and at the request's end aborts that read
// with a read deadline in the past, then clears it; a read failing with a
// timeout after that cancels the connection's context, so every later
// request on the kept-alive connection starts cancelled (a 504 "the
// server was unable to return a response in the time allotted" within
// microseconds). grpc's bufconn, used before, could do that: its deadline
// timer's callback, already fired but waiting for the pipe's lock while
// the deadline was cleared, set the timeout afterwards. That stalled the
// garbage collector (its watches and writes failing on such a connection
// until the connection was dropped).
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept implements net.Listener: the server end of the next dialled
// connection; net.ErrClosed once closed.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: Accept and DialContext fail from then
// on; connections made before stay open.
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext returns the client end of a new connection once the server
// accepted its other end. Errors: ctx's, or net.ErrClosed once the
// listener is closed.
func (l *pipeListener) DialContext(ctx context.Context) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		err := ctx.Err()
		_ = server.Close()
		_ = client.Close()
		return nil, err
	case <-l.done:
		_ = server.Close()
		_ = client.Close()
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return Host }

// Close stops serving: in-flight requests get until ctx ends to finish
// (the generic server has ended their watches by then), then connections
// are closed. Connections no request has begun on are closed at once:
// client-go's HTTP/1.1 transports keep some that were dialled for a
// request another connection then served, which http.Server.Shutdown
// would wait 5 s for, in case a request is on its way. By then the
// generic server has stopped serving; a request just beginning on such a
// connection fails as it would on the closed listener.
func (p *Pipe) Close(ctx context.Context) {
	_ = p.listener.Close()
	p.mu.Lock()
	for c := range p.fresh {
		_ = c.Close()
	}
	p.mu.Unlock()
	if p.server != nil {
		if err := p.server.Shutdown(ctx); err != nil {
			_ = p.server.Close()
		}
	}
}

// contextUser impersonates the user of the request's context
// (genericapirequest.WithUser), as the in-process typed client (pkg/client)
// acts as it; without one, or with the server's own user
// (system:apiserver), the request is the token's own.
type contextUser struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (c contextUser) RoundTrip(req *http.Request) (*http.Response, error) {
	u, ok := genericapirequest.UserFrom(req.Context())
	if !ok || u == nil || u.GetName() == user.APIServerUser {
		return c.next.RoundTrip(req)
	}
	extra := map[string][]string{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	return transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
	}, c.next).RoundTrip(req)
}
