package pipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// TestInProcessKeepAliveNotCancelled sends many short requests over the
// in-process door's kept-alive connections, each answered at once: no
// request may see its context cancelled, and every one is answered. It
// guards the connections' read deadlines, which net/http sets in the past
// and clears at each request's end: one that still fires after it was
// cleared cancels every later request on the connection (pipeListener).
// The race it guards against is rare (grpc's bufconn, used before, hit it
// a few times in a hundred runs of test/semantics' garbage collection case
// on two busy cores, never here): this is a smoke test, not a proof.
func TestInProcessKeepAliveNotCancelled(t *testing.T) {
	var cancelled atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A little work, then the verdict: the request's context must
		// still be live.
		_, _ = io.Copy(io.Discard, r.Body)
		if err := r.Context().Err(); err != nil {
			cancelled.Add(1)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	p := New("token")
	p.Serve(handler)
	t.Cleanup(func() { p.Close(t.Context()) })
	rt, err := rest.TransportFor(p.config)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: rt}
	const workers, requests = 64, 500
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range requests {
				resp, err := client.Get(fmt.Sprintf("http://%s/w%d/%d", Host, w, i))
				if err != nil {
					errs <- fmt.Errorf("request %d of worker %d: %w", i, w, err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("request %d of worker %d: %s: %s", i, w, resp.Status, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := cancelled.Load(); n > 0 {
		t.Errorf("%d of %d requests saw their context cancelled", n, workers*requests)
	}
}

// TestPipeListenerClose: once closed, Accept and DialContext fail with
// net.ErrClosed; a dial whose context ends first fails with its error.
func TestPipeListenerClose(t *testing.T) {
	l := newPipeListener()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.DialContext(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("dial with an ended context: %v, want context.Canceled", err)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			err = c.Close()
		}
		accepted <- err
	}()
	c, err := l.DialContext(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := <-accepted; err != nil {
		t.Fatalf("accept: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("accept after close: %v, want net.ErrClosed", err)
	}
	if _, err := l.DialContext(t.Context()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("dial after close: %v, want net.ErrClosed", err)
	}
}
