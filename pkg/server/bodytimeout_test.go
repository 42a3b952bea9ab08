package server_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// TestSlowBodyIs408NotTimeout: a body that never
// completes is answered 408 RequestTimeout every time, never the request
// timeout filter's 504, also when the body deadline is as long as the
// request timeout (they raced: 16 of 21 got 504), longer than it, or when
// the request's own ?timeout= is shorter than both.
func TestSlowBodyIs408NotTimeout(t *testing.T) {
	const tries = 24
	for _, tc := range []struct {
		name                    string
		bodyTimeout, reqTimeout time.Duration
		query                   string
	}{
		{"body deadline = request timeout", time.Second, time.Second, ""},
		{"body deadline > request timeout", 3 * time.Second, time.Second, ""},
		{"?timeout= shorter than both", time.Minute, time.Minute, "?timeout=1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
				o.Limits.RequestBodyTimeout = tc.bodyTimeout
				o.Limits.RequestTimeout = tc.reqTimeout
			}, install.Customs)
			e := ownEnv(s)
			body := objTrickle(e.customs())
			prefix := body[:len(body)/2] // the rest never comes

			var wg sync.WaitGroup
			codes := make(chan string, 2*tries)
			conns := make([]*tls.Conn, tries)
			for i := range conns {
				conns[i] = rawConn(t, s)
			}
			for i, conn := range conns {
				wg.Add(2)
				go func() { // HTTP/2, all on one connection
					defer wg.Done()
					pr, pw := io.Pipe()
					defer pw.Close()
					go func() { _, _ = pw.Write(prefix) }()
					req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+e.customs()+tc.query, pr)
					if err != nil {
						codes <- err.Error()
						return
					}
					req.Header.Set("Content-Type", "application/json")
					resp, err := s.HTTPClient.Do(req)
					if err != nil {
						codes <- fmt.Sprintf("HTTP/2 try %d: %v", i, err)
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					codes <- statusOf(resp.StatusCode, b)
				}()
				go func() { // HTTP/1.1, a connection each
					defer wg.Done()
					fmt.Fprintf(conn, "POST %s%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
						e.customs(), tc.query, s.Config.BearerToken, len(body), prefix)
					if err := conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
						codes <- err.Error()
						return
					}
					resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
					if err != nil {
						codes <- fmt.Sprintf("HTTP/1.1 try %d: %v", i, err)
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					codes <- statusOf(resp.StatusCode, b)
				}()
			}
			wg.Wait()
			close(codes)
			got := map[string]int{}
			for c := range codes {
				got[c]++
			}
			want := statusOf(http.StatusRequestTimeout, nil)
			if len(got) != 1 || got[want] != 2*tries {
				t.Fatalf("answers %v, want %d × %s", got, 2*tries, want)
			}
		})
	}
}

// statusOf is "<code> <reason>" of an answer whose body is a Status, or
// the code and the body otherwise; a nil body is taken for the expected
// Timeout reason.
func statusOf(code int, body []byte) string {
	if body == nil {
		return fmt.Sprintf("%d %s", code, metav1.StatusReasonTimeout)
	}
	st, err := decodeStatus(body)
	if err != nil || int(st.Code) != code {
		return fmt.Sprintf("%d %s", code, abbreviate(body))
	}
	return fmt.Sprintf("%d %s", code, st.Reason)
}
