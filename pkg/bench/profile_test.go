package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// profileServer, as used for the self and kubeconfig targets: the
// server's /debug/pprof/profile body lands in the file while the work
// runs, and an answer other than 200 (profiling off, or a user without
// access to /debug/pprof) is an error naming the target and the status,
// not a profile file holding an error body.
func TestProfileServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		wantErr string
	}{
		{"profile", http.StatusOK, ""},
		{"forbidden", http.StatusForbidden, "peer: /debug/pprof/profile answered 403 Forbidden"},
		{"not found", http.StatusNotFound, "peer: /debug/pprof/profile answered 404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/debug/pprof/profile" || r.URL.Query().Get("seconds") != "1" {
					http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
					return
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte("profile bytes"))
			}))
			defer srv.Close()
			target := &httpTarget{name: "peer", base: srv.URL, client: srv.Client()}
			file := filepath.Join(t.TempDir(), "peer-list.pprof")
			var ran atomic.Bool
			err := profileServer(context.Background(), target, file, 1, func(ctx context.Context) error {
				ran.Store(true)
				<-ctx.Done()
				return ctx.Err()
			})
			if !ran.Load() {
				t.Error("the work did not run")
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if _, serr := os.Stat(file); !os.IsNotExist(serr) {
					t.Errorf("a profile file was written for a %d answer (stat: %v)", tc.status, serr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(file)
			if err != nil || string(data) != "profile bytes" {
				t.Fatalf("profile file %q, %v; want the server's body", data, err)
			}
		})
	}
}
